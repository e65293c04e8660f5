// Command writer is mqctl's reference writer: it writes a small Milvus 2.6/3.0 WAL through upstream's own code
// (Woodpecker's embedded client opened by Milvus's `wp` WAL adapter, messages from Milvus's pkg/v2 builders,
// the streaming state marshalled with Milvus's generated types) so that mqctl's reader is tested against bytes
// upstream wrote rather than against its own reading of the source. Test tooling only: never part of the wheel.
//
// One run writes one generated folder: wal/ (what `mqctl ... --woodpecker` takes), etcd.json (every key of the
// etcd it wrote to, base64 key -> base64 value) and manifest.json (what was written, entry by entry).
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/milvus-io/milvus-proto/go-api/v2/commonpb"
	"github.com/milvus-io/milvus-proto/go-api/v2/msgpb"
	"github.com/milvus-io/milvus-proto/go-api/v2/schemapb"
	mqwp "github.com/milvus-io/milvus/pkg/v2/mq/msgstream/mqwrapper/wp"
	"github.com/milvus-io/milvus/pkg/v2/proto/messagespb"
	"github.com/milvus-io/milvus/pkg/v2/proto/streamingpb"
	"github.com/milvus-io/milvus/pkg/v2/streaming/util/message"
	wpproto "github.com/zilliztech/woodpecker/proto"
	wplog "github.com/zilliztech/woodpecker/woodpecker/log"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"
)

// Where Milvus keeps its meta in etcd (etcd.rootPath / etcd.metaSubPath).
const (
	rootPath   = "by-dev"
	metaPrefix = rootPath + "/meta/"
	collection = int64(449000000000000100)
	partition  = int64(449000000000000101)
	segment    = int64(449000000000000201)
	pkField    = int64(100)
)

// A fixed hybrid timestamp base (2026-01-01T00:00:00Z, logical 0): the fixtures are the same on every run.
var baseTSO = uint64(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()) << 18

type entry struct {
	SegmentID   int64   `json:"segment_id"`
	EntryID     int64   `json:"entry_id"`
	Type        string  `json:"type"`
	VChannel    string  `json:"vchannel"`
	TimeTick    uint64  `json:"time_tick"`
	PrimaryKeys []int64 `json:"primary_keys,omitempty"`
	TxnID       int64   `json:"txn_id,omitempty"`
	MilvusType  string  `json:"milvus_type"`
}

type logEntries struct {
	LogID    int64   `json:"log_id"`
	PChannel string  `json:"pchannel"`
	Entries  []entry `json:"entries"`
}

type module struct {
	Path    string `json:"path"`
	Version string `json:"version"`
	Sum     string `json:"sum"`
}

type manifest struct {
	Woodpecker string            `json:"woodpecker"`
	MilvusPkg  *string           `json:"milvus_pkg"`
	Storage    string            `json:"storage"`
	Variant    string            `json:"variant"`
	Modules    []module          `json:"modules"`
	Logs       []logEntries      `json:"logs"`
	EtcdKeys   map[string]string `json:"etcd_keys"`
	Notes      []string          `json:"notes"`
	// Hazard names the 3.0 hazard the folder holds (docs/streaming.md); Edits says each change made to what
	// upstream wrote to reach it, where upstream's embedded code cannot (edits.go).
	Hazard string   `json:"hazard,omitempty"`
	Edits  []string `json:"edits,omitempty"`
}

type options struct {
	out, storage, etcd, s3Endpoint, bucket, variant string
	// bulk: how many inserts, of about how many bytes each, at most how many appends waiting at once (bulk.go)
	entries, entryBytes, inFlight int
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "", "the generated folder (wal/, etcd.json, manifest.json)")
	flag.StringVar(&o.storage, "storage", "local", "local: wal/ is Woodpecker's local folder; minio: Woodpecker writes to the bucket")
	flag.StringVar(&o.etcd, "etcd", "", "etcd URL (Woodpecker's meta and Milvus's streaming state go there)")
	flag.StringVar(&o.s3Endpoint, "s3-endpoint", "", "host:port of the S3 server (storage minio)")
	flag.StringVar(&o.bucket, "bucket", "a-bucket", "bucket (storage minio)")
	flag.StringVar(&o.variant, "variant", "normal", "normal; crash: the last segment is left as a killed writer leaves it; reopen: a new process appends after a crash; append: a new process appends rows to an earlier run's folder; stale-dropped: a dropped collection's state left behind the log's truncation point; lac-short, sealed-no-footer, wal-switched: edits of what a run wrote (edits.go); bulk: -entries large inserts appended asynchronously (bulk.go)")
	flag.IntVar(&o.entries, "entries", 1000, "bulk: the number of insert messages")
	flag.IntVar(&o.entryBytes, "entry-bytes", 256<<10, "bulk: the approximate size of each insert message in bytes")
	flag.IntVar(&o.inFlight, "in-flight", 64, "bulk: the most appends waiting for their result at once")
	decode := flag.String("decode", "", "print what upstream's generated types decode from this etcd.json (JSON), and exit")
	flag.Parse()
	if *decode != "" {
		if err := decodeEtcd(*decode, os.Stdout); err != nil {
			fail(err.Error())
		}
		return
	}
	if o.out == "" || o.etcd == "" {
		fail("-out and -etcd are required")
	}
	run := run
	if isEdit(o.variant) {
		run = runEdit
	} else if o.variant == "bulk" {
		run = runBulk
	}
	if err := run(o); err != nil {
		fail(err.Error())
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "writer:", msg)
	os.Exit(2)
}

func run(o options) error {
	ctx := context.Background()
	walDir, err := filepath.Abs(filepath.Join(o.out, "wal"))
	if err != nil {
		return err
	}

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{o.etcd}, DialTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer cli.Close()

	m := manifest{Storage: o.storage, Variant: o.variant, Modules: modules(), EtcdKeys: map[string]string{}}
	for _, mod := range m.Modules {
		switch mod.Path {
		case "github.com/zilliztech/woodpecker":
			m.Woodpecker = mod.Version
		case "github.com/milvus-io/milvus/pkg/v2":
			v := mod.Version
			m.MilvusPkg = &v
		}
	}

	opener, err := newOpener(ctx, o, walDir)
	if err != nil {
		return err
	}
	m.Notes = append(m.Notes, appendPath)
	pchannel := rootPath + "-rootcoord-dml_0"
	vchannel := pchannel + "_" + fmt.Sprint(collection) + "v0"
	w := &walWriter{ctx: ctx, opener: opener, pchannel: pchannel, term: 1}
	crash := o.variant == "crash"
	if o.variant == "reopen" || o.variant == "append" {
		// The second process after a crash: the streaming node that takes the pchannel over opens a new writer
		// (Woodpecker recovers and seals the crashed segment) and appends on. `append` does the same on any earlier
		// run's folder with rows (a WAL that grows under `replay --follow`).
		if err := w.resume(filepath.Join(o.out, "manifest.json"), &m); err != nil {
			return err
		}
		if err := w.open(); err != nil {
			return err
		}
		if o.variant == "append" {
			w.append(insert(vchannel, 20, 21), []int64{20, 21})
			w.append(deleteRows(vchannel, 11), []int64{11})
		}
		w.append(timeTick(vchannel), nil)
		w.close()
	} else {
		w.writeAll(vchannel)
		if o.variant == "stale-dropped" {
			w.writeDropped(vchannel, &m)
		} else if crash {
			// Stop as a killed streaming node stops: the entries are synced by Woodpecker's own background flush
			// (waited for past its interval), the writer is never closed, and the process exits below.
			time.Sleep(3 * time.Second)
			m.Notes = append(m.Notes, "the last segment's writer was never closed: the process exited after its entries were synced")
		} else {
			w.close()
		}
	}
	if w.err != nil {
		return w.err
	}

	logID, err := woodpeckerLogID(ctx, cli, pchannel)
	if err != nil {
		return err
	}
	m.Logs = []logEntries{{LogID: logID, PChannel: pchannel, Entries: w.entries}}
	if err := putStreamingState(ctx, cli, pchannel, vchannel, w.last, w.lastTT, m.EtcdKeys); err != nil {
		return err
	}
	if o.variant == "stale-dropped" {
		if err := putDroppedState(ctx, cli, pchannel, w, m.EtcdKeys); err != nil {
			return err
		}
	}
	if err := writeOutputs(ctx, cli, o.out, m); err != nil {
		return err
	}
	if crash {
		os.Exit(0) // no Close anywhere: the process ends as a crashed one does
	}
	return nil
}

// writeAll appends the fixture's messages: segment 0 closed cleanly (finalized, with a footer); segment 1 from a
// new writer (as a streaming node that reopened the pchannel), left open for the caller to close or abandon.
func (w *walWriter) writeAll(vchannel string) {
	if w.err = w.open(); w.err != nil {
		return
	}
	w.append(createCollection(vchannel), nil)
	w.append(createSegment(vchannel), nil)
	w.append(insert(vchannel, 1, 2, 3), []int64{1, 2, 3})
	w.append(timeTick(vchannel), nil)
	w.append(deleteRows(vchannel, 2), []int64{2})
	w.append(timeTick(vchannel), nil)
	w.close()

	w.term = 2
	if w.err = w.open(); w.err != nil {
		return
	}
	txn := message.TxnContext{TxnID: 7001, Keepalive: 10 * time.Second}
	w.appendTxn(beginTxn(vchannel), txn, nil)
	w.appendTxn(insert(vchannel, 10, 11), txn, []int64{10, 11})
	w.appendTxn(deleteRows(vchannel, 1), txn, []int64{1})
	w.appendTxn(commitTxn(vchannel), txn, nil)
	w.append(flush(vchannel), nil)
	w.append(manualFlush(vchannel, w.lastTT), nil)
	w.append(timeTick(vchannel), nil)
}

// resume takes the entries, time tick and term a crashed run recorded in its manifest.
func (w *walWriter) resume(path string, m *manifest) error {
	body, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var before manifest
	if err := json.Unmarshal(body, &before); err != nil {
		return err
	}
	w.entries = before.Logs[0].Entries
	last := w.entries[len(w.entries)-1]
	w.lastTT = last.TimeTick - baseTSO
	w.last = &wplog.LogMessageId{SegmentId: last.SegmentID, EntryId: last.EntryID}
	w.term = 3
	m.Notes = append(before.Notes, "then a new process opened the log again and appended (the streaming node that took the pchannel over)")
	return nil
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

// walWriter appends as the streaming node does: the time tick, the WAL term and "last confirmed is the message
// itself" set on each message (the node's interceptors), then the wp adapter's Append.
type walWriter struct {
	ctx      context.Context
	opener   opener
	wal      wal
	pchannel string
	term     int64
	lastTT   uint64
	last     *wplog.LogMessageId
	entries  []entry
	err      error
	// stale-dropped: the dropped collection's checkpoint and the truncation point (edits.go)
	droppedCheckpoint, truncatedAt *wplog.LogMessageId
}

// opener opens a pchannel's WAL for writing (wal_adapter.go: Milvus's wp adapter; wal_direct.go: Woodpecker's
// client called as that adapter calls it).
type opener interface {
	open(ctx context.Context, pchannel string, term int64) (wal, error)
}

type wal interface {
	append(ctx context.Context, msg message.MutableMessage) (*wplog.LogMessageId, error)
	// truncate moves the log's truncation point as the streaming node's WAL truncator does (the adapter's
	// wal.go Truncate: Woodpecker's LogHandle.Truncate with the checkpoint's id).
	truncate(ctx context.Context, id *wplog.LogMessageId) error
	close()
}

func (w *walWriter) open() error {
	wal, err := w.opener.open(w.ctx, w.pchannel, w.term)
	if err != nil {
		return fmt.Errorf("open %s: %w", w.pchannel, err)
	}
	w.wal = wal
	return nil
}

func (w *walWriter) close() {
	w.wal.close()
	w.wal = nil
}

func (w *walWriter) append(msg message.MutableMessage, pks []int64) {
	w.write(msg, nil, pks)
}

func (w *walWriter) appendTxn(msg message.MutableMessage, txn message.TxnContext, pks []int64) {
	w.write(msg, &txn, pks)
}

func (w *walWriter) write(msg message.MutableMessage, txn *message.TxnContext, pks []int64) {
	if w.err != nil {
		return
	}
	w.lastTT += 1 << 18 // one millisecond later each
	tt := baseTSO + w.lastTT
	msg = msg.WithTimeTick(tt).WithWALTerm(w.term).WithLastConfirmedUseMessageID()
	if txn != nil {
		msg = msg.WithTxnContext(*txn)
	}
	wpID, err := w.wal.append(w.ctx, msg)
	if err != nil {
		w.err = fmt.Errorf("append %s: %w", msg.MessageType(), err)
		return
	}
	e := entry{
		SegmentID: wpID.SegmentId, EntryID: wpID.EntryId, Type: typeName(msg.MessageType()),
		VChannel: msg.VChannel(), TimeTick: tt, PrimaryKeys: pks, MilvusType: msg.MessageType().String(),
	}
	if txn != nil {
		e.TxnID = int64(txn.TxnID)
	}
	w.entries = append(w.entries, e)
	w.last = wpID
}

// typeName is the name `mqctl channels peek` prints: the commonpb.MsgType Milvus maps a 2.6 type to for its
// msgstream consumers, else the 2.6 type's own name. The map is milvus pkg/v2
// streaming/util/message/adaptor/message_type.go `messageTypeToCommonpbMsgType`; that package is not imported
// because it pulls msgstream, whose Kafka and RocksDB clients need cgo. Of the types written here only Flush is
// renamed there (to FlushSegment); the rest keep their name.
func typeName(t message.MessageType) string {
	if t == message.MessageTypeFlush {
		return commonpb.MsgType_FlushSegment.String()
	}
	return t.String()
}

func createCollection(vchannel string) message.MutableMessage {
	return createCollectionOf(vchannel, "upstream_fixture", collection, partition)
}

func createCollectionOf(vchannel, name string, collection, partition int64) message.MutableMessage {
	return createCollectionWithDim(vchannel, name, collection, partition, 2)
}

// createCollectionWithDim is a collection of an int64 key and a float vector of `dim` dimensions.
func createCollectionWithDim(vchannel, name string, collection, partition int64, dim int) message.MutableMessage {
	schema := &schemapb.CollectionSchema{Name: name, Fields: []*schemapb.FieldSchema{
		{FieldID: pkField, Name: "pk", IsPrimaryKey: true, DataType: schemapb.DataType_Int64},
		{FieldID: 101, Name: "vec", DataType: schemapb.DataType_FloatVector,
			TypeParams: []*commonpb.KeyValuePair{{Key: "dim", Value: fmt.Sprint(dim)}}},
	}}
	raw, err := proto.Marshal(schema)
	if err != nil {
		panic(err)
	}
	return message.NewCreateCollectionMessageBuilderV1().
		WithVChannel(vchannel).
		WithHeader(&message.CreateCollectionMessageHeader{CollectionId: collection, PartitionIds: []int64{partition}}).
		WithBody(&msgpb.CreateCollectionRequest{
			Base:           &commonpb.MsgBase{MsgType: commonpb.MsgType_CreateCollection},
			CollectionName: name, CollectionID: collection,
			PartitionIDs: []int64{partition}, PartitionNames: []string{"_default"},
			Schema: raw, VirtualChannelNames: []string{vchannel},
		}).MustBuildMutable()
}

func createSegment(vchannel string) message.MutableMessage {
	return message.NewCreateSegmentMessageBuilderV2().
		WithVChannel(vchannel).
		WithHeader(&message.CreateSegmentMessageHeader{CollectionId: collection, PartitionId: partition, SegmentId: segment}).
		WithBody(&message.CreateSegmentMessageBody{}).MustBuildMutable()
}

func insert(vchannel string, pks ...int64) message.MutableMessage {
	return insertInto(vchannel, "upstream_fixture", collection, partition, segment, pks...)
}

func insertInto(vchannel, name string, collection, partition, segment int64, pks ...int64) message.MutableMessage {
	vectors := make([]float32, 0, 2*len(pks))
	for _, pk := range pks {
		vectors = append(vectors, float32(pk), float32(-pk))
	}
	return insertVectors(vchannel, name, collection, partition, segment, pks, 2, vectors, uint64(24*len(pks)))
}

// insertVectors is an insert of `pks` (also the row ids) with their `dim`-float vectors, `size` bytes said in its
// header.
func insertVectors(vchannel, name string, collection, partition, segment int64, pks []int64, dim int, vectors []float32, size uint64) message.MutableMessage {
	n := len(pks)
	rowIDs := append([]int64(nil), pks...)
	return message.NewInsertMessageBuilderV1().
		WithVChannel(vchannel).
		WithHeader(&message.InsertMessageHeader{CollectionId: collection, Partitions: []*messagespb.PartitionSegmentAssignment{{
			PartitionId: partition, Rows: uint64(n), BinarySize: size,
			SegmentAssignment: &messagespb.SegmentAssignment{SegmentId: segment},
		}}}).
		WithBody(&msgpb.InsertRequest{
			Base:           &commonpb.MsgBase{MsgType: commonpb.MsgType_Insert},
			ShardName:      vchannel,
			CollectionName: name, PartitionName: "_default",
			CollectionID: collection, PartitionID: partition,
			RowIDs: rowIDs, NumRows: uint64(n), Version: msgpb.InsertDataVersion_ColumnBased,
			FieldsData: []*schemapb.FieldData{
				{Type: schemapb.DataType_Int64, FieldName: "pk", FieldId: pkField, Field: &schemapb.FieldData_Scalars{
					Scalars: &schemapb.ScalarField{Data: &schemapb.ScalarField_LongData{LongData: &schemapb.LongArray{Data: pks}}},
				}},
				{Type: schemapb.DataType_FloatVector, FieldName: "vec", FieldId: 101, Field: &schemapb.FieldData_Vectors{
					Vectors: &schemapb.VectorField{Dim: int64(dim), Data: &schemapb.VectorField_FloatVector{FloatVector: &schemapb.FloatArray{Data: vectors}}},
				}},
			},
		}).MustBuildMutable()
}

func deleteRows(vchannel string, pks ...int64) message.MutableMessage {
	return message.NewDeleteMessageBuilderV1().
		WithVChannel(vchannel).
		WithHeader(&message.DeleteMessageHeader{CollectionId: collection, Rows: uint64(len(pks))}).
		WithBody(&msgpb.DeleteRequest{
			Base:           &commonpb.MsgBase{MsgType: commonpb.MsgType_Delete},
			ShardName:      vchannel,
			CollectionName: "upstream_fixture", PartitionName: "_default",
			CollectionID: collection, PartitionID: partition,
			PrimaryKeys: &schemapb.IDs{IdField: &schemapb.IDs_IntId{IntId: &schemapb.LongArray{Data: pks}}},
			NumRows:     int64(len(pks)),
		}).MustBuildMutable()
}

func timeTick(vchannel string) message.MutableMessage {
	return message.NewTimeTickMessageBuilderV1().
		WithVChannel(vchannel).
		WithHeader(&message.TimeTickMessageHeader{}).
		WithBody(&msgpb.TimeTickMsg{Base: &commonpb.MsgBase{MsgType: commonpb.MsgType_TimeTick}}).
		MustBuildMutable()
}

func beginTxn(vchannel string) message.MutableMessage {
	return message.NewBeginTxnMessageBuilderV2().
		WithVChannel(vchannel).
		WithHeader(&message.BeginTxnMessageHeader{KeepaliveMilliseconds: 10000}).
		WithBody(&message.BeginTxnMessageBody{}).MustBuildMutable()
}

func commitTxn(vchannel string) message.MutableMessage {
	return message.NewCommitTxnMessageBuilderV2().
		WithVChannel(vchannel).
		WithHeader(&message.CommitTxnMessageHeader{}).
		WithBody(&message.CommitTxnMessageBody{}).MustBuildMutable()
}

func flush(vchannel string) message.MutableMessage {
	return message.NewFlushMessageBuilderV2().
		WithVChannel(vchannel).
		WithHeader(&message.FlushMessageHeader{CollectionId: collection, PartitionId: partition, SegmentId: segment}).
		WithBody(&message.FlushMessageBody{}).MustBuildMutable()
}

func manualFlush(vchannel string, lastTT uint64) message.MutableMessage {
	return message.NewManualFlushMessageBuilderV2().
		WithVChannel(vchannel).
		WithHeader(&message.ManualFlushMessageHeader{CollectionId: collection, FlushTs: baseTSO + lastTT, SegmentIds: []int64{segment}}).
		WithBody(&message.ManualFlushMessageBody{}).MustBuildMutable()
}

// woodpeckerLogID reads the id Woodpecker gave the pchannel's log from its own LogMeta (either prefix).
func woodpeckerLogID(ctx context.Context, cli *clientv3.Client, pchannel string) (int64, error) {
	resp, err := cli.Get(ctx, "", clientv3.WithPrefix())
	if err != nil {
		return 0, err
	}
	for _, kv := range resp.Kvs {
		if strings.HasSuffix(string(kv.Key), "/logs/"+pchannel) {
			meta := &wpproto.LogMeta{}
			if err := proto.Unmarshal(kv.Value, meta); err != nil {
				return 0, fmt.Errorf("%s: %w", kv.Key, err)
			}
			return meta.GetLogId(), nil
		}
	}
	return 0, fmt.Errorf("no Woodpecker LogMeta for %s in etcd", pchannel)
}

// putStreamingState writes what the streaming coordinator and node keep for the pchannel, with Milvus's generated
// types, under the keys of milvus internal/metastore/kv/streamingcoord and streamingnode (docs/streaming.md).
func putStreamingState(ctx context.Context, cli *clientv3.Client, pchannel, vchannel string, checkpoint *wplog.LogMessageId, lastTT uint64, keys map[string]string) error {
	put := putter(ctx, cli, keys)
	if err := put(metaPrefix+"streamingcoord-meta/pchannel/"+pchannel, &streamingpb.PChannelMeta{
		Channel: &streamingpb.PChannelInfo{Name: pchannel, Term: 2, AccessMode: streamingpb.PChannelAccessMode_PCHANNEL_ACCESS_READWRITE},
		Node:    &streamingpb.StreamingNodeInfo{ServerId: 1, Address: "127.0.0.1:22222"},
		State:   streamingpb.PChannelMetaState_PCHANNEL_META_STATE_ASSIGNED,
		Histories: []*streamingpb.PChannelAssignmentLog{{Term: 1, Node: &streamingpb.StreamingNodeInfo{ServerId: 1, Address: "127.0.0.1:22222"},
			AccessMode: streamingpb.PChannelAccessMode_PCHANNEL_ACCESS_READWRITE}},
		LastAssignTimestampSeconds: uint64(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix()),
	}); err != nil {
		return err
	}
	if err := put(metaPrefix+"streamingnode-meta/wal/"+pchannel+"/consume-checkpoint", &streamingpb.WALCheckpoint{
		MessageId: walCheckpointID(checkpoint), TimeTick: baseTSO + lastTT, RecoveryMagic: 1,
	}); err != nil {
		return err
	}
	if err := put(metaPrefix+"streamingnode-meta/wal/"+pchannel+"/vchannel/"+vchannel, &streamingpb.VChannelMeta{
		Vchannel: vchannel, State: streamingpb.VChannelState_VCHANNEL_STATE_NORMAL,
		CollectionInfo:     &streamingpb.CollectionInfoOfVChannel{CollectionId: collection},
		CheckpointTimeTick: baseTSO + lastTT,
	}); err != nil {
		return err
	}
	return put(metaPrefix+"datacoord-meta/channel-cp/"+vchannel, &msgpb.MsgPosition{
		ChannelName: vchannel, MsgID: mqwp.NewWoodpeckerID(checkpoint).Serialize(),
		Timestamp: baseTSO + lastTT, WALName: commonpb.WALName_WoodPecker,
	})
}

// putter returns a function that marshals a generated message into etcd under a key and records the key's type.
func putter(ctx context.Context, cli *clientv3.Client, keys map[string]string) func(string, proto.Message) error {
	return func(key string, value proto.Message) error {
		raw, err := proto.Marshal(value)
		if err != nil {
			return err
		}
		keys[key] = fmt.Sprintf("%T", value)
		_, err = cli.Put(ctx, key, string(raw))
		return err
	}
}

// writeOutputs writes the generated folder's etcd.json (dumpEtcd) and manifest.json (`m`, indented).
func writeOutputs(ctx context.Context, cli *clientv3.Client, out string, m any) error {
	if err := dumpEtcd(ctx, cli, filepath.Join(out, "etcd.json")); err != nil {
		return err
	}
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "manifest.json"), append(body, '\n'), 0o644)
}

// dumpEtcd writes every key of the etcd (base64 key -> base64 value), sorted.
func dumpEtcd(ctx context.Context, cli *clientv3.Client, path string) error {
	resp, err := cli.Get(ctx, "", clientv3.WithPrefix())
	if err != nil {
		return err
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		out[base64.StdEncoding.EncodeToString(kv.Key)] = base64.StdEncoding.EncodeToString(kv.Value)
	}
	body, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(body, '\n'), 0o644)
}

// modules lists the upstream modules linked into this binary with their go.sum hashes.
func modules() []module {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	var out []module
	for _, dep := range info.Deps {
		if strings.HasPrefix(dep.Path, "github.com/zilliztech/woodpecker") || strings.HasPrefix(dep.Path, "github.com/milvus-io/") {
			out = append(out, module{Path: dep.Path, Version: dep.Version, Sum: dep.Sum})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// splitHostPort splits "host:port" (an http:// prefix is dropped).
func splitHostPort(endpoint string) (string, int) {
	endpoint = strings.TrimPrefix(strings.TrimPrefix(endpoint, "http://"), "https://")
	host, port, found := strings.Cut(endpoint, ":")
	if !found {
		return host, 80
	}
	var n int
	fmt.Sscan(port, &n)
	return host, n
}
