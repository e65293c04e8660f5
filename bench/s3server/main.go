// Command s3server serves S3 on a loopback address from a folder, for bench/woodpecker_scale.py
// (`--s3-server gofakes3`): a fast S3 server written in Go beside moto's Python one, so that the bench's full read
// says what bounds mqctl's reader rather than the server.
//
// It is github.com/johannesboyne/gofakes3 v1.2.0 (MIT License: LICENSE in the module,
// "Copyright (c) 2016 Johannes Boyne") over its backend/s3afero MultiBucket backend on an afero BasePathFs of the
// folder: every object is a file below ROOT/buckets/BUCKET/KEY and its metadata (MD5, headers) a small JSON file
// below ROOT/metadata, so the server holds no object in memory and its RSS stays small whatever the bucket's size
// (s3bolt would keep the objects inside one bbolt file, mapped into memory; s3mem in memory).
//
// Usage: s3server -root DIR [-addr 127.0.0.1:0] [-bucket NAME]
//
// It listens on -addr (port 0: one the kernel picks), creates -bucket when given, prints "listening on HOST:PORT"
// on stdout once it accepts connections, and serves until it is killed (internal errors logged on stderr). Only
// loopback addresses are accepted.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3afero"
)

func main() {
	root := flag.String("root", "", "the folder the buckets and their metadata are kept in (created when missing)")
	addr := flag.String("addr", "127.0.0.1:0", "loopback HOST:PORT to listen on (port 0: any free port)")
	bucket := flag.String("bucket", "", "a bucket to create at start (kept when it exists)")
	flag.Parse()
	if *root == "" {
		log.Fatal("s3server: -root DIR is required")
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		log.Fatalf("s3server: -addr %q: %v", *addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		log.Fatalf("s3server: -addr %q is not a loopback address", *addr)
	}

	fs, err := s3afero.FsPath(*root, s3afero.FsPathCreateAll)
	if err != nil {
		log.Fatalf("s3server: -root %q: %v", *root, err)
	}
	backend, err := s3afero.MultiBucket(fs)
	if err != nil {
		log.Fatalf("s3server: %v", err)
	}
	if *bucket != "" {
		if err := backend.CreateBucket(*bucket); err != nil && !gofakes3.IsAlreadyExists(err) {
			log.Fatalf("s3server: creating bucket %q: %v", *bucket, err)
		}
	}
	faker := gofakes3.New(wholePuts{backend}, gofakes3.WithLogger(gofakes3.GlobalLog(gofakes3.LogErr))) // errors on stderr

	listener, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("s3server: %v", err)
	}
	fmt.Printf("listening on %s\n", listener.Addr())
	os.Stdout.Sync()
	log.Fatal(http.Serve(listener, faker.Server()))
}

// wholePuts makes a PUT whose body is cut short (a client that closes its connection mid-upload) leave no object, as
// S3 does. s3afero's PutObject creates the object's file before copying the body into it and writes the metadata
// only after the copy succeeded, so such a PUT leaves a partial file without metadata, and from then on every
// listing of the bucket fails with InternalError (ListBucket loads the metadata of every object and cannot open
// it: "open .../metadata/...: no such file or directory").
type wholePuts struct {
	*s3afero.MultiBucketBackend
}

func (b wholePuts) PutObject(
	bucket, key string, meta map[string]string, input io.Reader, size int64, conditions *gofakes3.PutConditions,
) (gofakes3.PutObjectResult, error) {
	_, before := b.HeadObject(bucket, key)
	result, err := b.MultiBucketBackend.PutObject(bucket, key, meta, input, size, conditions)
	if err != nil && gofakes3.HasErrorCode(before, gofakes3.ErrNoSuchKey) {
		if _, removeErr := b.DeleteObject(bucket, key); removeErr != nil {
			log.Printf("s3server: removing the partial object %s/%s: %v", bucket, key, removeErr)
		}
	}
	return result, err
}
