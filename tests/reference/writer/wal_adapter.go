//go:build !woodpecker_direct

package main

import (
	"context"
	"fmt"
	"os"

	"github.com/milvus-io/milvus-proto/go-api/v2/commonpb"
	"github.com/milvus-io/milvus/pkg/v2/streaming/util/message"
	"github.com/milvus-io/milvus/pkg/v2/streaming/util/types"
	"github.com/milvus-io/milvus/pkg/v2/streaming/walimpls"
	"github.com/milvus-io/milvus/pkg/v2/streaming/walimpls/impls/wp" // init registers the woodpecker WAL builder
	"github.com/milvus-io/milvus/pkg/v2/streaming/walimpls/registry"
	"github.com/milvus-io/milvus/pkg/v2/util/paramtable"
	wplog "github.com/zilliztech/woodpecker/woodpecker/log"
)

// appendPath says in the manifest how the entries reached Woodpecker.
const appendPath = "appended by Milvus's own wp WAL adapter (pkg/v2 streaming/walimpls/impls/wp: registry builder, Open, Append), Woodpecker's embedded client under it"

// newOpener builds the WAL opener the way a 2.6 streaming node does: Milvus's parameters, then the registered
// woodpecker builder (pkg/v2 streaming/walimpls/impls/wp/builder.go), which configures and starts Woodpecker's
// embedded client itself.
func newOpener(_ context.Context, o options, walDir string) (opener, error) {
	// paramtable reads these from the environment when it initialises (its etcd source dials etcd.endpoints).
	os.Setenv("ETCD_ENDPOINTS", o.etcd)
	os.Setenv("LOG_LEVEL", "error")
	p := paramtable.Get()
	settings := map[string]string{
		"etcd.endpoints": o.etcd, "etcd.rootPath": rootPath, "log.level": "error",
		"woodpecker.storage.type": o.storage,
		// Short syncs, so that a missing-footer run has its entries stored before it stops.
		"woodpecker.logstore.segmentSyncPolicy.maxInterval":                "200ms",
		"woodpecker.logstore.segmentSyncPolicy.maxIntervalForLocalStorage": "10ms",
	}
	// minio.rootPath as a stock milvus.yaml sets it: the builder makes it `<minio.rootPath>/wp`, which is the key
	// prefix in the bucket and also the folder below woodpecker.storage.rootPath (`<localStorage.path>/wp`) where
	// local segments go (woodpecker server/processor/segment_processor.go getLogBaseDir), so wal/ holds files/wp/.
	settings["minio.rootPath"] = "files"
	if o.storage == "local" {
		settings["woodpecker.storage.rootPath"] = walDir
	} else {
		host, port := splitHostPort(o.s3Endpoint)
		settings["minio.address"] = host
		settings["minio.port"] = fmt.Sprint(port)
		settings["minio.bucketName"] = o.bucket
		settings["minio.accessKeyID"] = envOr("AWS_ACCESS_KEY_ID", "testing")
		settings["minio.secretAccessKey"] = envOr("AWS_SECRET_ACCESS_KEY", "testing")
		settings["minio.useSSL"] = "false"
	}
	for k, v := range settings {
		if err := p.Save(k, v); err != nil {
			return nil, fmt.Errorf("paramtable %s: %w", k, err)
		}
	}
	impl, err := registry.MustGetBuilder(message.WALNameWoodpecker).Build()
	if err != nil {
		return nil, fmt.Errorf("build the wp opener: %w", err)
	}
	return adapterOpener{impl}, nil
}

type adapterOpener struct{ impl walimpls.OpenerImpls }

func (a adapterOpener) open(ctx context.Context, pchannel string, term int64) (wal, error) {
	w, err := a.impl.Open(ctx, &walimpls.OpenOption{Channel: types.PChannelInfo{
		Name: pchannel, Term: term, AccessMode: types.AccessModeRW,
	}})
	if err != nil {
		return nil, err
	}
	return adapterWAL{w}, nil
}

type adapterWAL struct{ impl walimpls.WALImpls }

func (a adapterWAL) append(ctx context.Context, msg message.MutableMessage) (*wplog.LogMessageId, error) {
	id, err := a.impl.Append(ctx, msg)
	if err != nil {
		return nil, err
	}
	return id.(interface{ WoodpeckerID() *wplog.LogMessageId }).WoodpeckerID(), nil
}

func (a adapterWAL) truncate(ctx context.Context, id *wplog.LogMessageId) error {
	return a.impl.Truncate(ctx, wp.NewWpID(id))
}

func (a adapterWAL) close() { a.impl.Close() }

// walCheckpointID is the WALCheckpoint's message id as the adapter's id type marshals it (message_id.go IntoProto).
func walCheckpointID(id *wplog.LogMessageId) *commonpb.MessageID {
	return wp.NewWpID(id).IntoProto()
}
