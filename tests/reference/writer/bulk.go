package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/milvus-io/milvus/pkg/v2/streaming/util/message"
	wplog "github.com/zilliztech/woodpecker/woodpecker/log"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The bulk variant: a WAL of many large insert messages, for measuring a reader at the sizes a deployment keeps
// (bench/woodpecker_scale.py). Appends go through Woodpecker's own client asynchronously (LogWriter.WriteAsync),
// many in flight at once as a streaming node's concurrent appends are, so that Woodpecker's blocks fill to their
// flush size and its segments roll by size (bulkConfig). The manifest keeps counts, not an entry list.

// The bulk WAL's block and segment bounds (wal_direct.go sets them; Woodpecker v0.1.37's defaults): a block is
// uploaded once 2,000,000 bytes are buffered, a segment rolls past 256,000,000 bytes or 1,000 blocks; the buffer
// is synced at least every 200 ms; a completed segment is compacted into merged blocks of at most 2,000,000 bytes.
const (
	bulkFlushSize     = 2_000_000
	bulkSegmentSize   = 256_000_000
	bulkSegmentBlocks = 1000
	bulkSyncMs        = 200
	bulkCompactSize   = 2_000_000
)

var bulkSettings = []string{
	"woodpecker.logstore.segmentSyncPolicy.maxFlushSize=2000000",
	"woodpecker.logstore.segmentSyncPolicy.maxInterval=200ms",
	"woodpecker.client.segmentRollingPolicy.maxSize=256000000",
	"woodpecker.client.segmentRollingPolicy.maxBlocks=1000",
	"woodpecker.logstore.segmentCompactionPolicy.maxBytes=2000000",
}

// bulkDim is the vector dimension of the bulk collection: a row is its int64 key and 128 float32s (520 bytes).
const bulkDim = 128

type bulkManifest struct {
	Woodpecker string   `json:"woodpecker"`
	Storage    string   `json:"storage"`
	Variant    string   `json:"variant"`
	LogID      int64    `json:"log_id"`
	PChannel   string   `json:"pchannel"`
	Entries    int      `json:"entries"`
	Rows       int64    `json:"rows"`
	Bytes      int64    `json:"payload_bytes"`
	Segments   int64    `json:"segments"`
	Seconds    float64  `json:"seconds"`
	Settings   []string `json:"settings"`
}

// asyncWAL is a WAL that can append without waiting for each message (wal_direct.go: Woodpecker's WriteAsync).
type asyncWAL interface {
	appendAsync(ctx context.Context, msg message.MutableMessage) <-chan *wplog.WriteResult
}

// The bulk variant's bounds: past them a run would hold more than bulkMaxHeld bytes of appends waiting at once,
// or wait without end; each appended result is waited for at most bulkResultWait.
const (
	bulkMaxEntries    = 10_000_000
	bulkMaxEntryBytes = 16 << 20
	bulkMaxInFlight   = 1024
	bulkMaxHeld       = 1 << 30
	bulkResultWait    = 2 * time.Minute
)

// checkBulk refuses -entries, -entry-bytes and -in-flight outside the bulk variant's bounds, in one line.
func checkBulk(o options) error {
	switch {
	case o.entries <= 0 || o.entries > bulkMaxEntries:
		return fmt.Errorf("-entries %d: give 1 to %d insert messages", o.entries, bulkMaxEntries)
	case o.entryBytes < 1024 || o.entryBytes > bulkMaxEntryBytes:
		return fmt.Errorf("-entry-bytes %d: give 1024 to %d bytes", o.entryBytes, bulkMaxEntryBytes)
	case o.inFlight <= 0 || o.inFlight > bulkMaxInFlight:
		return fmt.Errorf("-in-flight %d: give 1 to %d appends", o.inFlight, bulkMaxInFlight)
	case int64(o.inFlight)*int64(o.entryBytes) > bulkMaxHeld:
		return fmt.Errorf("-in-flight %d x -entry-bytes %d holds more than %d bytes at once: lower either", o.inFlight, o.entryBytes, bulkMaxHeld)
	}
	return nil
}

// runBulk writes -entries insert messages of about -entry-bytes each (after a CreateCollection and a
// CreateSegment), at most -in-flight appends waiting at once, then a time tick, and closes the writer (the last
// segment finalized).
func runBulk(o options) error {
	ctx := context.Background()
	walDir, err := filepath.Abs(filepath.Join(o.out, "wal"))
	if err != nil {
		return err
	}
	if err := checkBulk(o); err != nil {
		return err
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(stop)
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{o.etcd}, DialTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer cli.Close()
	opener, err := newOpener(ctx, o, walDir)
	if err != nil {
		return err
	}
	pchannel := rootPath + "-rootcoord-dml_0"
	vchannel := pchannel + "_" + fmt.Sprint(collection) + "v0"
	w := &walWriter{ctx: ctx, opener: opener, pchannel: pchannel, term: 1}
	if err := w.open(); err != nil {
		return err
	}
	async, ok := w.wal.(asyncWAL)
	if !ok {
		return fmt.Errorf("-variant bulk needs Woodpecker's client directly (build tag woodpecker_direct)")
	}
	start := time.Now()
	w.append(createCollectionWithDim(vchannel, "bulk", collection, partition, bulkDim), nil)
	w.append(createSegment(vchannel), nil)
	if w.err != nil {
		return w.err
	}
	rowsPer := int64(max(1, (o.entryBytes-256)/(8+4*bulkDim)))
	pending := make(chan (<-chan *wplog.WriteResult), o.inFlight)
	failed := make(chan error, 1)
	done := make(chan struct{})
	var segments = map[int64]bool{}
	go func() { // the results, in append order
		defer close(done)
		for result := range pending {
			var r *wplog.WriteResult
			select {
			case r = <-result:
			case <-time.After(bulkResultWait):
				r = &wplog.WriteResult{Err: fmt.Errorf("no result within %s (is the storage reachable?)", bulkResultWait)}
			}
			if r.Err != nil {
				select {
				case failed <- r.Err:
				default:
				}
				continue
			}
			segments[r.LogMessageId.SegmentId] = true
			w.last = r.LogMessageId
		}
	}()
	m := bulkManifest{Storage: o.storage, Variant: o.variant, PChannel: pchannel, Settings: bulkSettings}
	for _, mod := range modules() {
		if mod.Path == "github.com/zilliztech/woodpecker" {
			m.Woodpecker = mod.Version
		}
	}
	var firstPK int64 = 1
	for i := 0; i < o.entries; i++ {
		select {
		case err := <-failed:
			close(pending)
			<-done
			return fmt.Errorf("append insert %d: %w; no manifest written", i, err)
		case sig := <-stop:
			return fmt.Errorf("%s after %d of %d inserts; no manifest written", sig, i, o.entries)
		default:
		}
		msg := bulkInsert(vchannel, firstPK, rowsPer)
		w.lastTT += 1 << 18
		msg = msg.WithTimeTick(baseTSO + w.lastTT).WithWALTerm(w.term).WithLastConfirmedUseMessageID()
		m.Bytes += int64(len(msg.Payload()))
		pending <- async.appendAsync(ctx, msg)
		firstPK += rowsPer
		m.Rows += rowsPer
	}
	close(pending)
	<-done
	select {
	case err := <-failed:
		return fmt.Errorf("append: %w; no manifest written", err)
	default:
	}
	w.append(timeTick(vchannel), nil)
	w.close()
	if w.err != nil {
		return w.err
	}
	m.Seconds = time.Since(start).Seconds()
	m.Entries = o.entries + 3
	m.Segments = int64(len(segments))
	if m.LogID, err = woodpeckerLogID(ctx, cli, pchannel); err != nil {
		return err
	}
	return writeOutputs(ctx, cli, o.out, m)
}

// bulkInsert is one insert of `rows` rows with keys from `first` on, each with a 128-float vector.
func bulkInsert(vchannel string, first, rows int64) message.MutableMessage {
	pks := make([]int64, rows)
	vectors := make([]float32, 0, rows*bulkDim)
	for i := range pks {
		pks[i] = first + int64(i)
		for d := 0; d < bulkDim; d++ {
			vectors = append(vectors, float32(pks[i])+float32(d)/bulkDim)
		}
	}
	return insertVectors(vchannel, "bulk", collection, partition, segment, pks, bulkDim, vectors, uint64((8+4*bulkDim)*rows))
}
