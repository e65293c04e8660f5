"""Benchmark `mqctl replay` against the bare reads of the same messages.

Fills each MQ it measures with real-format Milvus insert messages (`msg_pb2.InsertRequest`, column based, as
Milvus's proxy serializes them):
- NATS: a JetStream stream on a private nats-server, every message published with an acknowledgement (pipelined:
  up to `NATS_WINDOW` publishes in flight, acks counted on one reply subject), then checked (count, first and
  last sequence, no error ack) before anything is timed;
- RocksMQ: a directory with Milvus's key layout;
- Woodpecker: a local-layout WAL (`<log>/<segment>/data.log`, 1,000 entries a block, 100,000 a segment), each
  entry in Milvus 2.6's envelope, written with tests/helpers/woodpecker_segments.py (Woodpecker's cited record
  layout, written apart from mqctl's reader);
- Kafka: one topic on the tests' broker (tests/helpers/kafka.py), written by a batching confluent-kafka producer
  (partition 0, zstd, as Milvus's producer), the offsets checked before timing.
Then it prints in one run, per MQ:
- the bare read rate: nats-py with hand-made pull requests on a core subscription (the way mqctl's reader goes;
  `--nats-fetch` adds nats-py's own pull consumer, `fetch`, about 30,000 messages/s); a rocksdict range scan; a walk of the Woodpecker files (each
  record's CRC checked, data records counted, nothing decoded); a bare confluent-kafka consumer (bench/kafka.py);
- the rate of the executor-side read alone (the `milvus_mq` reader's `read()` called in this process,
  Arrow batches produced and dropped: no Spark task, no write), which shows the decoding cost;
- the rate of the replay job (rows shape, schema inferred from the inserts) to Parquet with 1 and
  2 partitions on local[2], its peak memory, and the ratios;
- the same job with 2 partitions on a standalone cluster started here (a master and 2 workers with
  one core each, executors on a Python with nothing installed, so mqctl ships its runtime), and its
  ratio to local[2] (`--no-cluster` leaves it out, `--no-local` runs the cluster alone).
Spark start-up is printed separately and left out of the rates; each timed replay follows a small
warm-up replay in the same session, so Python worker start-up is left out too.
Goals: replay >= 0.7x the bare read rate with 1 partition; 2 partitions >= 1.6x one partition.

At 10M messages (issue 33, item 2): `--messages 10000000 --only rocksmq --distinct 100000 --no-cluster` builds
100,000 distinct insert messages and stores them over and over (ids and keys stay distinct), so that building the
input does not take longer than the replay; `--only` names the MQs to measure (comma-separated); the peak memory of
this process and its descendants (the JVM, Spark's Python workers: the sum of their resident sets, sampled every
0.2 s; the nats-server and Kafka broker processes left out) is printed with each replay.

Usage: python bench/replay.py [--messages 200000] [--rows 1] [--dim 8] [--no-cluster] [--no-local]
       [--only nats,rocksmq,woodpecker,kafka] [--distinct N] [--no-executor-read] [--nats-fetch]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.helpers: the tests' cluster, broker, WAL
sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/kafka.py: the bare confluent-kafka read

CHANNEL = "by-dev-rootcoord-dml_0"
COLLECTION, COLLECTION_ID, PARTITION_ID = "bench_items", 447000000000000001, 447000000000000002
FIRST_ROCKSMQ_ID = 470633384162885633
FETCH_BATCH = 1000
NATS_WINDOW = 20_000  # acknowledged publishes in flight while filling the stream
WOODPECKER_BLOCK, WOODPECKER_SEGMENT = 1_000, 100_000  # entries per block, per segment
MQS = ("nats", "rocksmq", "woodpecker", "kafka")
SERVERS = (b"nats-server", b"kafka.Kafka")  # MQ servers this bench starts: not counted in a replay's memory


class PeakMemory:
    """The largest sum of the resident sets of this process and its descendants, sampled every 0.2 s (from /proc)."""

    def __init__(self) -> None:
        import threading

        self.peak = 0
        self._servers: dict[int, bool] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        import os

        while not self._stop.wait(0.2):
            parents: dict[int, int] = {}
            rss: dict[int, int] = {}
            for entry in os.listdir("/proc"):
                if not entry.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry}/stat") as stat:
                        parents[int(entry)] = int(stat.read().rpartition(")")[2].split()[1])
                    with open(f"/proc/{entry}/statm") as statm:
                        rss[int(entry)] = int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
                except (OSError, ValueError, IndexError):
                    continue
            mine, grew = {os.getpid()}, True
            while grew:
                added = {pid for pid, parent in parents.items() if parent in mine} - mine
                mine |= added
                grew = bool(added)
            self.peak = max(self.peak, sum(rss.get(pid, 0) for pid in mine if not self._server(pid)))

    def _server(self, pid: int) -> bool:
        if pid not in self._servers:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                    command = cmdline.read()
            except OSError:
                return False
            self._servers[pid] = any(name in command for name in SERVERS)
        return self._servers[pid]


def insert_messages(count: int, rows: int, dim: int) -> list[bytes]:
    """Insert requests as Milvus 2.3's proxy writes them: int64 pk, varchar, float vector."""
    from pymilvus.grpc_gen import common_pb2, msg_pb2, schema_pb2

    tso = (int(time.time() * 1000) - 3_600_000) << 18
    payloads = []
    for n in range(count):
        ts = tso + (n << 18)
        pks = list(range(n * rows, (n + 1) * rows))
        msg = msg_pb2.InsertRequest(
            base=common_pb2.MsgBase(msg_type=common_pb2.Insert, msgID=n + 1, timestamp=ts, sourceID=1),
            shardName=f"{CHANNEL}_{COLLECTION_ID}v0",
            db_name="default",
            collection_name=COLLECTION,
            partition_name="_default",
            dbID=1,
            collectionID=COLLECTION_ID,
            partitionID=PARTITION_ID,
            segmentID=447000000000001000 + n // 10_000,
            timestamps=[ts] * rows,
            rowIDs=[pk + 1_000_000 for pk in pks],
            num_rows=rows,
            version=msg_pb2.ColumnBased,
        )
        msg.fields_data.append(
            schema_pb2.FieldData(
                type=schema_pb2.Int64,
                field_name="id",
                field_id=100,
                scalars=schema_pb2.ScalarField(long_data=schema_pb2.LongArray(data=pks)),
            )
        )
        msg.fields_data.append(
            schema_pb2.FieldData(
                type=schema_pb2.VarChar,
                field_name="title",
                field_id=101,
                scalars=schema_pb2.ScalarField(string_data=schema_pb2.StringArray(data=[f"item-{pk}" for pk in pks])),
            )
        )
        msg.fields_data.append(
            schema_pb2.FieldData(
                type=schema_pb2.FloatVector,
                field_name="embedding",
                field_id=102,
                vectors=schema_pb2.VectorField(
                    dim=dim,
                    float_vector=schema_pb2.FloatArray(data=[(pk % 97) / 8 + d for pk in pks for d in range(dim)]),
                ),
            )
        )
        payloads.append(msg.SerializeToString())
    return payloads


def build_rocksmq(root: Path, payloads: list[bytes]) -> Path:
    """Keys `<topic>/<18-digit id>`, values the raw protobufs, as RocksMQ stores them (Milvus rocksmq_impl.go)."""
    from rocksdict import Options, Rdict, WriteBatch

    path = root / "rdb_data"
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    db = Rdict(str(path), options=options)
    batch = WriteBatch(raw_mode=True)
    for n, payload in enumerate(payloads):
        batch.put(f"{CHANNEL}/{FIRST_ROCKSMQ_ID + n}".encode(), payload)
        if len(batch) >= 10_000:
            db.write(batch)
            batch = WriteBatch(raw_mode=True)
    db.write(batch)
    db.close()
    return path


async def fill_stream(url: str, payloads: list[bytes]) -> None:
    """Every message published with an acknowledgement, up to NATS_WINDOW in flight, then the stream checked."""
    import nats

    nc = await nats.connect(url)
    js = nc.jetstream()
    await js.add_stream(name=CHANNEL, subjects=[CHANNEL])
    inbox, acked, errors = nc.new_inbox(), 0, []
    started = time.perf_counter()

    async def on_ack(msg) -> None:
        nonlocal acked
        acked += 1
        if b'"error"' in msg.data and len(errors) < 3:
            errors.append(msg.data.decode())

    await nc.subscribe(inbox, cb=on_ack, pending_msgs_limit=0, pending_bytes_limit=0)
    for n, payload in enumerate(payloads, start=1):
        await nc.publish(CHANNEL, payload, reply=inbox)
        if n % 1000 == 0:
            await _acked_up_to(lambda: acked, n - NATS_WINDOW, nc, errors)
    await _acked_up_to(lambda: acked, len(payloads), nc, errors)
    seconds = time.perf_counter() - started
    state = (await js.stream_info(CHANNEL)).state
    await nc.close()
    if (state.messages, state.first_seq, state.last_seq) != (len(payloads), 1, len(payloads)):
        sys.exit(
            f"the stream holds {state.messages} messages, seq {state.first_seq}-{state.last_seq}, not {len(payloads)}"
        )
    print(
        f"nats: {len(payloads):,} messages published with acks in {seconds:.1f} s ({len(payloads) / seconds:,.0f}/s); "
        f"stream checked: {state.messages:,} messages, seq {state.first_seq}-{state.last_seq}"
    )


async def _acked_up_to(acked, wanted: int, nc, errors: list[str]) -> None:
    await nc.flush()
    last, since = acked(), time.monotonic()
    while acked() < wanted:
        if errors:
            sys.exit(f"nats-server refused a publish: {errors[0]}")
        if acked() != last:
            last, since = acked(), time.monotonic()
        elif time.monotonic() - since > 30:
            sys.exit(f"no publish acknowledged for 30 s ({acked():,} of {wanted:,})")
        await asyncio.sleep(0.002)


async def bare_nats_read(url: str, count: int) -> int:
    """Every message through an ephemeral pull consumer, as fast as nats-py goes: no decode, no write."""
    import nats
    from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

    nc = await nats.connect(url)
    js = nc.jetstream()
    sub = await js.pull_subscribe(
        CHANNEL,
        stream=CHANNEL,
        config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL, ack_policy=AckPolicy.NONE, mem_storage=True),
    )
    read = size = 0
    while read < count:
        for msg in await sub.fetch(FETCH_BATCH, timeout=10):
            read += 1
            size += len(msg.data)
    await sub.unsubscribe()
    await nc.close()
    return size


async def bare_nats_raw_read(url: str, count: int) -> int:
    """Every message through hand-made pull requests on a core subscription (the fastest nats-py
    read, as mqctl's reader does it): no decode, no metadata objects, no write."""
    import json

    import nats

    nc = await nats.connect(url)
    created = json.loads(
        (
            await nc.request(
                f"$JS.API.CONSUMER.CREATE.{CHANNEL}",
                json.dumps({"stream_name": CHANNEL, "config": {"ack_policy": "none", "mem_storage": True}}).encode(),
                timeout=5,
            )
        ).data
    )
    next_subject, inbox = f"$JS.API.CONSUMER.MSG.NEXT.{CHANNEL}.{created['name']}", nc.new_inbox()
    pull = json.dumps({"batch": FETCH_BATCH, "expires": 10_000_000_000}).encode()
    done, read, size = asyncio.Event(), 0, 0

    async def on_message(msg) -> None:
        nonlocal read, size
        read += 1
        size += len(msg.data)
        if read == count:
            done.set()
        elif read % FETCH_BATCH == 0:
            await nc.publish(next_subject, pull, reply=inbox)

    await nc.subscribe(inbox, cb=on_message, pending_bytes_limit=0)
    await nc.publish(next_subject, pull, reply=inbox)
    await asyncio.wait_for(done.wait(), 600)
    await nc.close()
    return size


def bare_rocksdict_scan(path: Path) -> int:
    from rocksdict import AccessType, Options, Rdict, ReadOptions

    db = Rdict(str(path), options=Options(raw_mode=True), access_type=AccessType.read_only())
    options = ReadOptions()
    options.set_iterate_upper_bound(CHANNEL.encode() + b"0")
    size = sum(len(value) for _key, value in db.items(from_key=CHANNEL.encode() + b"/", read_opt=options))
    db.close()
    return size


def build_woodpecker(root: Path, pool: list[bytes], count: int) -> Path:
    """Log 1 of a local-layout WAL: `count` entries, the pool's messages over and over, each in Milvus 2.6's envelope
    (`_v`, `_t` 2 = insert, `_tt` the TSO in base 36, `_vc` the vchannel), finalized segments of WOODPECKER_SEGMENT
    entries in blocks of WOODPECKER_BLOCK."""
    import struct
    import zlib

    from pymilvus.grpc_gen import common_pb2

    from tests.helpers import woodpecker_segments as w
    from tests.helpers.streaming_meta import base36

    records = []
    for payload in pool:
        header = common_pb2.MsgHeader()
        header.ParseFromString(payload)
        properties = {"_v": "1", "_t": "2", "_tt": base36(header.base.timestamp), "_vc": f"{CHANNEL}_{COLLECTION_ID}v0"}
        records.append(w.record(2, w.message(payload, properties)))
    wal = root / "wp"
    for segment, first in enumerate(range(0, count, WOODPECKER_SEGMENT)):
        folder = wal / "1" / str(segment)
        folder.mkdir(parents=True)
        last_entry = min(first + WOODPECKER_SEGMENT, count)
        out, spans = [w.header(0)], []
        offset = len(out[0])
        for number, start in enumerate(range(first, last_entry, WOODPECKER_BLOCK)):
            end = min(start + WOODPECKER_BLOCK, last_entry)
            data = b"".join(records[n % len(records)] for n in range(start, end))
            # entries are numbered from 0 in each segment (w.block's header, over precomputed records)
            head = struct.pack("<iqqII", number, start - first, end - 1 - first, len(data), zlib.crc32(data))
            written = w.record(5, head) + data
            out.append(written)
            spans.append((number, offset, len(written), start - first, end - 1 - first))
            offset += len(written)
        indexes = b"".join(w.index(*span) for span in spans)
        out += [indexes, w.footer(len(spans), last_entry - first, offset + len(indexes), offset, len(indexes))]
        (folder / "data.log").write_bytes(b"".join(out))
    return wal


def bare_woodpecker_walk(wal: Path, count: int) -> int:
    """Every segment file read and walked record by record, each record's CRC checked, data records counted (their
    LogMessageLayout not decoded): the least a reader of the files does."""
    import struct
    import zlib

    unpack, size, entries = struct.Struct("<IBI").unpack_from, 0, 0
    for folder in sorted((wal / "1").iterdir(), key=lambda path: int(path.name)):
        data = (folder / "data.log").read_bytes()
        view, offset = memoryview(data), 0
        while offset < len(data):
            crc, kind, length = unpack(data, offset)
            end = offset + 9 + length
            if zlib.crc32(view[offset + 4 : end]) != crc:
                sys.exit(f"{folder}/data.log: record at {offset} fails its CRC")
            if kind == 2:
                entries += 1
                size += length
            offset = end
    assert entries == count, (entries, count)
    return size


def fill_kafka(bootstrap: str, topic: str, payloads: list[bytes]) -> None:
    """A batching producer (partition 0, zstd, as Milvus's), waiting on a full queue; the offsets checked after."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.codec": "zstd",
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 500_000,
        }
    )
    started = time.perf_counter()
    for payload in payloads:
        while True:
            try:
                producer.produce(topic, value=payload, partition=0)
                break
            except BufferError:
                producer.poll(0.05)
    left = producer.flush(120)
    seconds = time.perf_counter() - started
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-check"})
    low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
    consumer.close()
    if left or (low, high) != (0, len(payloads)):
        sys.exit(f"{topic}: offsets {low}-{high} ({left} not delivered), not 0-{len(payloads)}")
    print(
        f"kafka: {len(payloads):,} messages produced in {seconds:.1f} s ({len(payloads) / seconds:,.0f}/s); "
        f"offsets checked: {low}-{high}"
    )


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def executor_read_rate(source_options: dict[str, str], count: int, label: str) -> None:
    """What one executor does per partition, without Spark around it: the reader's `read()`."""
    from pyspark.sql.types import StructType

    from mqctl.replay.datasource import MilvusMQDataSource

    data_source = MilvusMQDataSource({**source_options, "collection": COLLECTION, "partitions": "1"})
    reader = data_source.reader(StructType.fromDDL(data_source.schema()))
    started = time.perf_counter()
    rows = sum(batch.num_rows for partition in reader.partitions() for batch in reader.read(partition))
    seconds = time.perf_counter() - started
    assert rows == count, (rows, count)
    print(f"  executor read {label} (no Spark task, no write): {seconds:.2f} s, {count / seconds:,.0f} messages/s")


def replay_rate(spark, source, work: Path, partitions: int, count: int, label: str) -> float:
    from mqctl.replay.job import run_replay
    from mqctl.replay.model import ReplayRequest

    def request(out: str, **extra) -> ReplayRequest:
        return ReplayRequest(source, output=str(work / out), collection=COLLECTION, partitions=partitions, **extra)

    run_replay(request(f"warmup-{label}-{partitions}", end=str(_first_id(source) + 2_000)), spark=spark)
    with PeakMemory() as memory:
        result = run_replay(request(f"{label}-{partitions}"), spark=spark)
    assert result.messages == count, (result.messages, count)
    rate = result.messages / result.seconds
    print(
        f"  replay {label} -> parquet, {partitions} partition(s): {result.seconds:.2f} s, {rate:,.0f} messages/s, "
        f"{result.rows / result.seconds:,.0f} rows/s, peak memory {memory.peak / (1 << 20):,.0f} MiB "
        "(this process, the JVM and Spark's Python workers)"
    )
    return rate


def cluster_replay_rates(work: Path, sources: dict, count: int) -> dict[str, float]:
    """2-partition replays on a standalone cluster whose executors' Python has nothing installed."""
    from mqctl.replay.session import start_session
    from tests.helpers.spark_cluster import StandaloneCluster, bare_python

    python = bare_python(work / "executor-python")
    cluster = StandaloneCluster(work / "cluster", workers=2, cores=1, memory="1g")
    (work / "cluster").mkdir()
    started = time.perf_counter()
    try:
        cluster.start()
        spark = start_session(
            cluster.url,
            {"spark.executor.memory": "512m", "spark.pyspark.python": str(python), "spark.sql.shuffle.partitions": "2"},
        )
        print(
            f"standalone cluster (master + 2 workers x 1 core) and Spark start-up: "
            f"{time.perf_counter() - started:.2f} s (not in the rates)"
        )
        try:
            return {
                label: replay_rate(spark, source, work, 2, count, f"{label} (cluster)")
                for label, source in sources.items()
            }
        finally:
            spark.stop()
    finally:
        cluster.stop()


def _first_id(source) -> int:
    return FIRST_ROCKSMQ_ID if source.rocksmq else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000, help="insert messages (default 200,000)")
    parser.add_argument("--rows", type=int, default=1, help="rows per insert message")
    parser.add_argument("--dim", type=int, default=8, help="float vector dimension")
    parser.add_argument("--no-cluster", action="store_true", help="skip the standalone-cluster run")
    parser.add_argument("--no-local", action="store_true", help="skip the local[2] replays (the cluster's alone)")
    parser.add_argument("--only", default=",".join(MQS), help="the MQs to measure, comma-separated (default: all)")
    parser.add_argument("--distinct", type=int, help="build this many distinct messages and repeat them")
    parser.add_argument("--no-executor-read", action="store_true", help="skip the executor-side read alone")
    parser.add_argument("--nats-fetch", action="store_true", help="also time nats-py's own pull consumer (slow)")
    args = parser.parse_args()
    labels = [label for label in MQS if label in args.only.split(",")]
    if not labels or set(args.only.split(",")) - set(MQS):
        parser.error(f"--only takes a comma-separated list of {', '.join(MQS)}")

    from mqctl.mq.nats.server import private_nats_server
    from mqctl.mq.sources import SourceOptions
    from mqctl.replay.session import start_session

    work = Path(tempfile.mkdtemp(prefix="mqctl-bench-replay-"))
    try:
        print(_load())
        started = time.perf_counter()
        pool = insert_messages(min(args.distinct or args.messages, args.messages), args.rows, args.dim)
        payloads = [pool[n % len(pool)] for n in range(args.messages)] if len(pool) < args.messages else pool
        total_bytes = sum(map(len, payloads))
        print(
            f"{args.messages:,} insert messages ({args.rows} row(s), dim {args.dim}, {total_bytes / 1e6:.1f} MB) "
            f"built in {time.perf_counter() - started:.1f} s"
        )
        with contextlib.ExitStack() as servers:
            sources, options = {}, {}  # label -> SourceOptions, label -> the data source's option
            if "nats" in labels:
                store = work / "nats"
                (store / "jetstream").mkdir(parents=True)
                url = servers.enter_context(private_nats_server(store, writable=True, timeout=30))
                asyncio.run(fill_stream(url, payloads))
                sources["nats"], options["nats"] = SourceOptions(nats=url), {"nats": url}
            if "rocksmq" in labels:
                rocks = build_rocksmq(work, payloads)
                sources["rocksmq"], options["rocksmq"] = SourceOptions(rocksmq=rocks), {"rocksmq": str(rocks)}
            if "woodpecker" in labels:
                started = time.perf_counter()
                wal = build_woodpecker(work, pool, args.messages)
                size = sum(path.stat().st_size for path in wal.glob("*/*/data.log"))
                print(
                    f"woodpecker: {args.messages:,} entries ({size / 1e6:.1f} MB) written in {time.perf_counter() - started:.1f} s"
                )
                sources["woodpecker"], options["woodpecker"] = (
                    SourceOptions(woodpecker=str(wal)),
                    {"woodpecker": str(wal)},
                )
            if "kafka" in labels:
                from kafka import TOPIC

                from tests.helpers.kafka import running_kafka

                (work / "kafka").mkdir()
                bootstrap = servers.enter_context(running_kafka(work / "kafka"))
                fill_kafka(bootstrap, TOPIC, payloads)
                sources["kafka"], options["kafka"] = SourceOptions(kafka=bootstrap), {"kafka": bootstrap}
            del payloads, pool

            bare = bare_reads(sources, args.messages, args.nats_fetch)
            rates: dict[str, list[float]] = {}
            if not args.no_local:
                started = time.perf_counter()
                spark = start_session("local[2]", {"spark.sql.shuffle.partitions": "2"})
                print(f"Spark start-up: {time.perf_counter() - started:.2f} s (not in the rates) {_load()}")
                try:
                    for label in labels:
                        if not args.no_executor_read:
                            executor_read_rate(options[label], args.messages, label)
                        rates[label] = [
                            replay_rate(spark, sources[label], work, n, args.messages, label) for n in (1, 2)
                        ]
                finally:
                    spark.stop()
            cluster_rates = {} if args.no_cluster else cluster_replay_rates(work, sources, args.messages)
        for label, (one, two) in rates.items():
            print(
                f"{label}: replay/bare read (1 partition) {one / bare[label]:.2f} (goal >= 0.7); "
                f"2 partitions/1 partition {two / one:.2f} (goal >= 1.6)"
            )
        if "nats" in rates and "nats fetch" in bare:
            print(f"nats: replay (1 partition)/nats-py fetch read {rates['nats'][0] / bare['nats fetch']:.2f}")
        for label, rate in cluster_rates.items():
            against = f"/local[2], 2 partitions {rate / rates[label][1]:.2f}; " if label in rates else ""
            print(f"{label}: standalone cluster (2 workers x 1 core){against}/bare read {rate / bare[label]:.2f}")
        print(_load())
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bare_reads(sources: dict, count: int, fetch: bool) -> dict[str, float]:
    """messages/s of each MQ's bare reader; for NATS the raw pull requests (the goal's anchor: the fastest nats-py
    read) and, with `fetch`, nats-py's own pull consumer."""
    bare: dict[str, float] = {}
    if "nats" in sources:
        url = sources["nats"].nats
        bare["nats"] = count / timed(lambda: asyncio.run(bare_nats_raw_read(url, count)))
        print(f"bare read: nats-py raw pull requests {bare['nats']:,.0f} messages/s")
        if fetch:
            bare["nats fetch"] = count / timed(lambda: asyncio.run(bare_nats_read(url, count)))
            print(f"bare read: nats-py fetch {bare['nats fetch']:,.0f} messages/s")
    if "rocksmq" in sources:
        bare["rocksmq"] = count / timed(lambda: bare_rocksdict_scan(sources["rocksmq"].rocksmq))
        print(f"bare read: rocksdict scan {bare['rocksmq']:,.0f} messages/s")
    if "woodpecker" in sources:
        wal = Path(sources["woodpecker"].woodpecker)
        bare["woodpecker"] = count / timed(lambda: bare_woodpecker_walk(wal, count))
        print(f"bare read: Woodpecker files walked, every record's CRC checked {bare['woodpecker']:,.0f} messages/s")
    if "kafka" in sources:
        from kafka import bare_read

        bare["kafka"] = count / bare_read(sources["kafka"].kafka, count)
        print(f"bare read: confluent-kafka consume {bare['kafka']:,.0f} messages/s")
    print(_load())
    return bare


def _load() -> str:
    with open("/proc/loadavg") as loadavg:
        return "load average " + " ".join(loadavg.read().split()[:3])


if __name__ == "__main__":
    main()
