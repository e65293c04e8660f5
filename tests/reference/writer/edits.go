package main

// The 3.0 hazards mqctl must name (docs/streaming.md, "The 3.0 hazards"), written with upstream's code where its
// embedded Woodpecker can reach them, else by the smallest edit of what it wrote, made with upstream's own
// generated types and recorded in the manifest (`edits`):
//
//   - stale-dropped (written): a dropped collection's vchannel meta and channel checkpoint, and a WAL checkpoint,
//     left behind the log's truncation point, which Woodpecker's own Truncate moved (milvus #47802);
//   - lac-short (edit): a Sealed segment whose footer LAC is below etcd's LastEntryId. Upstream reaches it only
//     through compaction on a replica behind the quorum (zilliztech/woodpecker #242, fixed by #243 in v0.1.37);
//     embedded Woodpecker has one replica and no compaction here, so segment 0's SegmentMetadata is edited;
//   - sealed-no-footer (edit, after a crash): the killed writer's segment, which upstream leaves Active without a
//     footer (and recovers on reopen), recorded as Sealed with its last entry, as milvus #52341 reports it;
//   - wal-switched (edit): mq.type pinned to rocksmq while the WAL checkpoints stay on Woodpecker, what an
//     offline switch that edits only the pin leaves (birdwatcher #522, milvus #52013).

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/milvus-io/milvus-proto/go-api/v2/commonpb"
	"github.com/milvus-io/milvus-proto/go-api/v2/msgpb"
	mqwp "github.com/milvus-io/milvus/pkg/v2/mq/msgstream/mqwrapper/wp"
	"github.com/milvus-io/milvus/pkg/v2/proto/streamingpb"
	"github.com/milvus-io/milvus/pkg/v2/streaming/util/message"
	wpproto "github.com/zilliztech/woodpecker/proto"
	wplog "github.com/zilliztech/woodpecker/woodpecker/log"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

const (
	droppedCollection = int64(449000000000000300)
	droppedPartition  = int64(449000000000000301)
	droppedSegment    = int64(449000000000000401)
)

func isEdit(variant string) bool {
	switch variant {
	case "lac-short", "sealed-no-footer", "wal-switched":
		return true
	}
	return false
}

// writeDropped appends, to the open segment, a collection that is created, written and dropped, then a time tick;
// closes the segment and truncates the log just after the dropped collection's CreateCollection, as the WAL
// truncator does once the checkpoints have moved on. The dropped collection's state is left behind (putDroppedState).
func (w *walWriter) writeDropped(vchannel string, m *manifest) {
	dropped := w.pchannel + "_" + fmt.Sprint(droppedCollection) + "v0"
	w.append(createCollectionOf(dropped, "dropped_fixture", droppedCollection, droppedPartition), nil)
	w.droppedCheckpoint = w.last
	w.append(insertInto(dropped, "dropped_fixture", droppedCollection, droppedPartition, droppedSegment, 100, 101), []int64{100, 101})
	w.truncatedAt = w.last
	w.append(dropCollection(dropped), nil)
	w.append(timeTick(vchannel), nil)
	if w.err == nil {
		if err := w.wal.truncate(w.ctx, w.truncatedAt); err != nil {
			w.err = fmt.Errorf("truncate: %w", err)
		}
	}
	if w.wal != nil {
		w.close()
	}
	m.Hazard = "stale-dropped"
	m.Notes = append(m.Notes, fmt.Sprintf(
		"collection %d was created, written and dropped on %s; the log was truncated at %d/%d (Woodpecker's Truncate); "+
			"its vchannel meta (state DROPPED) and channel checkpoint stay at %d/%d and the WAL checkpoint at 0/5, behind the truncation point (milvus #47802)",
		droppedCollection, dropped, w.truncatedAt.SegmentId, w.truncatedAt.EntryId, w.droppedCheckpoint.SegmentId, w.droppedCheckpoint.EntryId))
}

func dropCollection(vchannel string) message.MutableMessage {
	return message.NewDropCollectionMessageBuilderV1().
		WithVChannel(vchannel).
		WithHeader(&message.DropCollectionMessageHeader{CollectionId: droppedCollection}).
		WithBody(&msgpb.DropCollectionRequest{
			Base:           &commonpb.MsgBase{MsgType: commonpb.MsgType_DropCollection},
			CollectionName: "dropped_fixture", CollectionID: droppedCollection,
		}).MustBuildMutable()
}

// putDroppedState leaves what milvus #47802 reports: the dropped collection's vchannel meta and channel checkpoint,
// and a WAL checkpoint, behind the truncation point.
func putDroppedState(ctx context.Context, cli *clientv3.Client, pchannel string, w *walWriter, keys map[string]string) error {
	put := putter(ctx, cli, keys)
	dropped := pchannel + "_" + fmt.Sprint(droppedCollection) + "v0"
	var created, stale entry
	for _, e := range w.entries {
		if e.VChannel == dropped && e.Type == "CreateCollection" {
			created = e
		}
	}
	stale = w.entries[5]
	if err := put(metaPrefix+"streamingnode-meta/wal/"+pchannel+"/consume-checkpoint", &streamingpb.WALCheckpoint{
		MessageId: walCheckpointID(&wplog.LogMessageId{SegmentId: stale.SegmentID, EntryId: stale.EntryID}),
		TimeTick:  stale.TimeTick, RecoveryMagic: 1,
	}); err != nil {
		return err
	}
	if err := put(metaPrefix+"streamingnode-meta/wal/"+pchannel+"/vchannel/"+dropped, &streamingpb.VChannelMeta{
		Vchannel: dropped, State: streamingpb.VChannelState_VCHANNEL_STATE_DROPPED,
		CollectionInfo:     &streamingpb.CollectionInfoOfVChannel{CollectionId: droppedCollection},
		CheckpointTimeTick: created.TimeTick,
	}); err != nil {
		return err
	}
	return put(metaPrefix+"datacoord-meta/channel-cp/"+dropped, &msgpb.MsgPosition{
		ChannelName: dropped, MsgID: mqwp.NewWoodpeckerID(w.droppedCheckpoint).Serialize(),
		Timestamp: created.TimeTick, WALName: commonpb.WALName_WoodPecker,
	})
}

// runEdit changes what an earlier phase wrote into the same etcd, with upstream's generated types, and records
// the change in the manifest.
func runEdit(o options) error {
	ctx := context.Background()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{o.etcd}, DialTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer cli.Close()
	path := filepath.Join(o.out, "manifest.json")
	body, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var m manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return err
	}
	log := m.Logs[0]
	lastOf := func(segment int64) int64 {
		last := int64(-1)
		for _, e := range log.Entries {
			if e.SegmentID == segment && e.EntryID > last {
				last = e.EntryID
			}
		}
		return last
	}
	var edit string
	switch o.variant {
	case "lac-short":
		edit, err = editSegment(ctx, cli, log.PChannel, 0, func(s *wpproto.SegmentMetadata) string {
			before := fmt.Sprintf("%s, LastEntryId %d", s.State, s.LastEntryId)
			s.LastEntryId += 2
			s.State = wpproto.SegmentState_Sealed
			s.SealedTime = s.CompletionTime
			return fmt.Sprintf("segment 0: %s -> %s, LastEntryId %d (its footer's LAC stays %d): the state compaction "+
				"on a replica behind the quorum leaves (zilliztech/woodpecker #242), which embedded Woodpecker cannot reach",
				before, s.State, s.LastEntryId, lastOf(0))
		})
	case "sealed-no-footer":
		last := log.Entries[len(log.Entries)-1].SegmentID
		edit, err = editSegment(ctx, cli, log.PChannel, last, func(s *wpproto.SegmentMetadata) string {
			before := fmt.Sprintf("%s, LastEntryId %d", s.State, s.LastEntryId)
			s.State = wpproto.SegmentState_Sealed
			s.LastEntryId = lastOf(last)
			s.CompletionTime = s.CreateTime
			s.SealedTime = s.CreateTime
			return fmt.Sprintf("segment %d (the killed writer's, no footer): %s -> %s, LastEntryId %d: a sealed segment "+
				"without footer as milvus #52341 reports it; upstream leaves it Active and seals it with a footer on reopen",
				last, before, s.State, s.LastEntryId)
		})
	case "wal-switched":
		key := rootPath + "/config/mqtype"
		if _, err = cli.Put(ctx, key, "rocksmq"); err == nil {
			m.EtcdKeys[key] = "string"
			edit = key + " = rocksmq (was absent: mq.type pinned to another WAL with the WAL checkpoints left on " +
				"Woodpecker, what an offline switch that edits only the pin leaves: birdwatcher #522, milvus #52013)"
		}
	}
	if err != nil {
		return err
	}
	m.Variant = o.variant
	m.Hazard = o.variant
	m.Edits = append(m.Edits, edit)
	if err := dumpEtcd(ctx, cli, filepath.Join(o.out, "etcd.json")); err != nil {
		return err
	}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(out, '\n'), 0o644)
}

// editSegment rewrites one SegmentMetadata of the pchannel's log (either prefix), returning what changed.
func editSegment(ctx context.Context, cli *clientv3.Client, pchannel string, segment int64, change func(*wpproto.SegmentMetadata) string) (string, error) {
	resp, err := cli.Get(ctx, "", clientv3.WithPrefix())
	if err != nil {
		return "", err
	}
	suffix := fmt.Sprintf("/logs/%s/segments/%d", pchannel, segment)
	for _, kv := range resp.Kvs {
		if !strings.HasSuffix(string(kv.Key), suffix) {
			continue
		}
		meta := &wpproto.SegmentMetadata{}
		if err := proto.Unmarshal(kv.Value, meta); err != nil {
			return "", fmt.Errorf("%s: %w", kv.Key, err)
		}
		what := change(meta)
		raw, err := proto.Marshal(meta)
		if err != nil {
			return "", err
		}
		if _, err := cli.Put(ctx, string(kv.Key), string(raw)); err != nil {
			return "", err
		}
		return string(kv.Key) + ": " + what, nil
	}
	return "", fmt.Errorf("no SegmentMetadata ending in %s", suffix)
}

// decodeEtcd prints, as JSON, what upstream's generated types decode from an etcd.json (base64 key -> base64
// value): each streaming and Woodpecker key as protojson (field names as upstream's .proto spells them), the
// pinned mq.type as its string, and the Woodpecker ids inside the positions (the adapter's and mqwrapper/wp's).
func decodeEtcd(path string, out io.Writer) error {
	body, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var raw map[string]string
	if err := json.Unmarshal(body, &raw); err != nil {
		return err
	}
	keys := make([]string, 0, len(raw))
	values := map[string][]byte{}
	for k, v := range raw {
		key, err := base64.StdEncoding.DecodeString(k)
		if err != nil {
			return err
		}
		value, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return err
		}
		keys = append(keys, string(key))
		values[string(key)] = value
	}
	sort.Strings(keys)
	marshal := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}
	decoded := map[string]any{}
	for _, key := range keys {
		var msg proto.Message
		extra := map[string]any{}
		switch {
		case strings.Contains(key, "/streamingcoord-meta/pchannel/"):
			msg = &streamingpb.PChannelMeta{}
		case strings.HasSuffix(key, "/consume-checkpoint"):
			msg = &streamingpb.WALCheckpoint{}
		case strings.Contains(key, "/streamingnode-meta/wal/") && strings.Contains(key, "/vchannel/"):
			msg = &streamingpb.VChannelMeta{}
		case strings.Contains(key, "/datacoord-meta/channel-cp/"):
			msg = &msgpb.MsgPosition{}
		case strings.Contains(key, "/logs/") && strings.Contains(key, "/segments/"):
			msg = &wpproto.SegmentMetadata{}
		case strings.Contains(key, "/logs/") && !strings.HasSuffix(key, "/lock"):
			msg = &wpproto.LogMeta{}
		case strings.HasSuffix(key, "/config/mqtype"):
			decoded[key] = map[string]any{"value": string(values[key])}
			continue
		default:
			continue
		}
		if err := proto.Unmarshal(values[key], msg); err != nil {
			decoded[key] = map[string]any{"error": err.Error()}
			continue
		}
		text, err := marshal.Marshal(msg)
		if err != nil {
			return err
		}
		var fields map[string]any
		if err := json.Unmarshal(text, &fields); err != nil {
			return err
		}
		// The Woodpecker id inside a position: base64 of LogMessageId.Serialize() in a WALCheckpoint (the adapter's
		// message_id.go), the serialized id itself in a channel checkpoint (mqwrapper/wp's Serialize).
		var rawID []byte
		switch v := msg.(type) {
		case *streamingpb.WALCheckpoint:
			rawID, _ = base64.StdEncoding.DecodeString(v.GetMessageId().GetId())
		case *msgpb.MsgPosition:
			rawID = v.GetMsgID()
		}
		if rawID != nil {
			if wpID, err := wplog.DeserializeLogMessageId(rawID); err == nil {
				extra["woodpecker_id"] = map[string]int64{"segment_id": wpID.SegmentId, "entry_id": wpID.EntryId}
			}
		}
		extra["type"] = fmt.Sprintf("%T", msg)
		extra["fields"] = fields
		decoded[key] = extra
	}
	body, err = json.MarshalIndent(decoded, "", "  ")
	if err != nil {
		return err
	}
	_, err = out.Write(append(body, '\n'))
	return err
}
