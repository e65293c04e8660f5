//go:build woodpecker_direct

package main

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/milvus-io/milvus-proto/go-api/v2/commonpb"
	"github.com/milvus-io/milvus/pkg/v2/streaming/util/message"
	"github.com/zilliztech/woodpecker/common/config"
	"github.com/zilliztech/woodpecker/common/objectstorage"
	"github.com/zilliztech/woodpecker/woodpecker"
	wplog "github.com/zilliztech/woodpecker/woodpecker/log"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The 3.0 line: Milvus 3.0's pkg (module github.com/milvus-io/milvus/pkg/v3) is not on the Go module proxy, and
// pkg/v2's wp adapter does not compile against Woodpecker v0.1.3x (its config fields became typed durations and
// sizes). So Woodpecker's embedded client is opened here with the settings Milvus's builder gives it (milvus
// pkg/streaming/walimpls/impls/wp/builder.go `setCustomWpConfig`, pkg/v3 at commit 023029832c26: meta prefix
// `woodpecker.meta.prefix` under `etcd.rootPath`, storage root `<localStorage.path>/wp` or `<minio.rootPath>/wp`),
// and each message is written as its Append writes it (wal.go: `WriteMessage{Payload, Properties}` of
// `msg.IntoMessageProto()`); the messages are still pkg/v2's builders'.
const appendPath = "appended through Woodpecker's embedded client as Milvus's wp adapter appends (WriteMessage{Payload, Properties}); pkg/v2's adapter does not compile against this Woodpecker and pkg/v3 is not on the module proxy"

func newOpener(ctx context.Context, o options, walDir string) (opener, error) {
	cfg, err := config.NewConfiguration()
	if err != nil {
		return nil, err
	}
	cfg.Etcd.RootPath = rootPath
	cfg.Woodpecker.Meta.Prefix = "woodpecker"
	cfg.Woodpecker.Storage.Type = o.storage
	cfg.Woodpecker.Logstore.SegmentSyncPolicy.MaxInterval = config.NewDurationMillisecondsFromInt(200)
	cfg.Woodpecker.Logstore.SegmentSyncPolicy.MaxIntervalForLocalStorage = config.NewDurationMillisecondsFromInt(10)
	cfg.Log.Level = "error"
	if o.variant == "bulk" {
		// The block and segment bounds, set to Woodpecker v0.1.37's own defaults (config/woodpecker.yaml:100
		// maxFlushSize, :32-34 segmentRollingPolicy; the configuration built in code has maxFlushSize 16,000,000,
		// common/config/configuration.go:934) so that a bulk WAL is laid out as a deployment's is: the
		// object writer uploads a block once its buffered entries reach maxFlushSize
		// (server/storage/objectstorage/writer_impl.go:142 fastSyncTriggerSize, :754), and the client rolls to a
		// new segment past maxSize bytes or maxBlocks blocks (woodpecker/log/log_handle.go:122-123,
		// woodpecker/segment/rolling_policy.go:66 ShouldRollover).
		cfg.Woodpecker.Logstore.SegmentSyncPolicy.MaxFlushSize = config.NewByteSize(bulkFlushSize)
		cfg.Woodpecker.Client.SegmentRollingPolicy.MaxSize = config.NewByteSize(bulkSegmentSize)
		cfg.Woodpecker.Client.SegmentRollingPolicy.MaxBlocks = bulkSegmentBlocks
		cfg.Woodpecker.Logstore.SegmentSyncPolicy.MaxInterval = config.NewDurationMillisecondsFromInt(bulkSyncMs)
		// A completed segment is compacted by the writer's auditor (woodpecker/log/log_writer.go:386) into merged
		// blocks `m_N.blk` of at most segmentCompactionPolicy.maxBytes: 2,000,000 in config/woodpecker.yaml:103, but
		// 32,000,000 when the configuration is built in code (common/config/configuration.go:938), as here.
		cfg.Woodpecker.Logstore.SegmentCompactionPolicy.MaxBytes = config.NewByteSize(bulkCompactSize)
	}
	var storage objectstorage.ObjectStorage
	cfg.Minio.RootPath = "files/wp" // `<minio.rootPath>/wp`, also the folder below the local root (wal_adapter.go)
	if o.storage == "local" {
		cfg.Woodpecker.Storage.RootPath = walDir
	} else {
		cfg.Minio.Address, cfg.Minio.Port = splitHostPort(o.s3Endpoint)
		cfg.Minio.BucketName = o.bucket
		cfg.Minio.AccessKeyID = envOr("AWS_ACCESS_KEY_ID", "testing")
		cfg.Minio.SecretAccessKey = envOr("AWS_SECRET_ACCESS_KEY", "testing")
		cfg.Minio.UseSSL = false
		cfg.Minio.CreateBucket = true
		if storage, err = objectstorage.NewObjectStorage(ctx, cfg); err != nil {
			return nil, err
		}
	}
	etcdCli, err := clientv3.New(clientv3.Config{Endpoints: []string{o.etcd}})
	if err != nil {
		return nil, err
	}
	client, err := woodpecker.NewEmbedClient(ctx, cfg, etcdCli, storage, true)
	if err != nil {
		return nil, fmt.Errorf("woodpecker embedded client: %w", err)
	}
	return directOpener{client}, nil
}

type directOpener struct{ client woodpecker.Client }

// open does what the adapter's opener.go Open does: create the log when it is new, open it, open its writer.
func (d directOpener) open(ctx context.Context, pchannel string, _ int64) (wal, error) {
	exists, err := d.client.LogExists(ctx, pchannel)
	if err != nil {
		return nil, err
	}
	if !exists {
		if err := d.client.CreateLog(ctx, pchannel); err != nil {
			return nil, err
		}
	}
	handle, err := d.client.OpenLog(ctx, pchannel)
	if err != nil {
		return nil, err
	}
	writer, err := handle.OpenLogWriter(ctx)
	if err != nil {
		return nil, err
	}
	return directWAL{handle, writer}, nil
}

type directWAL struct {
	handle wplog.LogHandle
	writer wplog.LogWriter
}

// truncate is the adapter's wal.go Truncate: LogHandle.Truncate with the id.
func (d directWAL) truncate(ctx context.Context, id *wplog.LogMessageId) error {
	return d.handle.Truncate(ctx, id)
}

func (d directWAL) append(ctx context.Context, msg message.MutableMessage) (*wplog.LogMessageId, error) {
	pb := msg.IntoMessageProto()
	r := d.writer.Write(ctx, &wplog.WriteMessage{Payload: pb.Payload, Properties: pb.Properties})
	return r.LogMessageId, r.Err
}

func (d directWAL) appendAsync(ctx context.Context, msg message.MutableMessage) <-chan *wplog.WriteResult {
	pb := msg.IntoMessageProto()
	return d.writer.WriteAsync(ctx, &wplog.WriteMessage{Payload: pb.Payload, Properties: pb.Properties})
}

func (d directWAL) close() { _ = d.writer.Close(context.Background()) }

// walCheckpointID is the id as the adapter's message_id.go marshals it: base64 of LogMessageId.Serialize(),
// WAL name Woodpecker.
func walCheckpointID(id *wplog.LogMessageId) *commonpb.MessageID {
	return &commonpb.MessageID{Id: base64.StdEncoding.EncodeToString(id.Serialize()), WALName: commonpb.WALName_WoodPecker}
}
