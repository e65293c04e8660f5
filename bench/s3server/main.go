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
// on stdout once it accepts connections, and serves until it is killed. Only loopback addresses are accepted.
package main

import (
	"flag"
	"fmt"
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
	faker := gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog()))

	listener, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("s3server: %v", err)
	}
	fmt.Printf("listening on %s\n", listener.Addr())
	os.Stdout.Sync()
	log.Fatal(http.Serve(listener, faker.Server()))
}
