"""Benchmark `mqctl replay` against the bare reads of the same messages.

Fills a NATS stream (a real nats-server) and a RocksMQ directory (Milvus's key layout) with
real-format Milvus insert messages (`msg_pb2.InsertRequest`, column based, as Milvus's proxy
serializes them), then prints in one run:
- the bare read rate: nats-py pull consumer with `fetch` (no decode, no write), nats-py with
  hand-made pull requests on a core subscription (the way mqctl's reader goes) and a rocksdict range scan;
- the rate of the executor-side read alone (the `milvus_mq` reader's `read()` called in this process,
  Arrow batches produced and dropped: no Spark task, no write), which shows the decoding cost;
- the rate of the replay job (rows shape, schema inferred from the inserts) to Parquet with 1 and
  2 partitions on local[2], and the ratios;
- the same job with 2 partitions on a standalone cluster started here (a master and 2 workers with
  one core each, executors on a Python with nothing installed, so mqctl ships its runtime), and its
  ratio to local[2] (`--no-cluster` leaves it out).
Spark start-up is printed separately and left out of the rates; each timed replay follows a small
warm-up replay in the same session, so Python worker start-up is left out too.
Goals: replay >= 0.7x the bare read rate with 1 partition; 2 partitions >= 1.6x one partition.

At 10M messages (issue 33, item 2): `--messages 10000000 --only rocksmq --distinct 100000 --no-cluster` builds
100,000 distinct insert messages and stores them over and over (ids and keys stay distinct), so that building the
input does not take longer than the replay; `--only` leaves the other MQ out; the peak memory of this process and
its descendants (the JVM, Spark's Python workers: the sum of their resident sets, sampled every 0.2 s) is printed
with each replay.

Usage: python bench/replay.py [--messages 200000] [--rows 1] [--dim 8] [--no-cluster] [--only nats|rocksmq]
       [--distinct N] [--no-executor-read]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.helpers.spark_cluster: the tests' cluster

CHANNEL = "by-dev-rootcoord-dml_0"
COLLECTION, COLLECTION_ID, PARTITION_ID = "bench_items", 447000000000000001, 447000000000000002
FIRST_ROCKSMQ_ID = 470633384162885633
FETCH_BATCH = 1000


class PeakMemory:
    """The largest sum of the resident sets of this process and its descendants, sampled every 0.2 s (from /proc)."""

    def __init__(self) -> None:
        import threading

        self.peak = 0
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
            self.peak = max(self.peak, sum(rss.get(pid, 0) for pid in mine))


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
    import nats

    nc = await nats.connect(url)
    js = nc.jetstream()
    await js.add_stream(name=CHANNEL, subjects=[CHANNEL])
    for payload in payloads:
        await nc.publish(CHANNEL, payload)  # core publish: the stream stores it without an ack round trip
    await nc.flush()
    while (await js.stream_info(CHANNEL)).state.messages < len(payloads):
        await asyncio.sleep(0.2)
    await nc.close()


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


def cluster_replay_rates(work: Path, url: str, rocks: Path, count: int, labels: list[str]) -> dict[str, float]:
    """2-partition replays on a standalone cluster whose executors' Python has nothing installed."""
    from mqctl.mq.sources import SourceOptions
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
                for label, source in (("nats", SourceOptions(nats=url)), ("rocksmq", SourceOptions(rocksmq=rocks)))
                if label in labels
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
    parser.add_argument("--only", choices=("nats", "rocksmq"), help="replay one MQ only")
    parser.add_argument("--distinct", type=int, help="build this many distinct messages and repeat them")
    parser.add_argument("--no-executor-read", action="store_true", help="skip the executor-side read alone")
    args = parser.parse_args()
    labels = [args.only] if args.only else ["nats", "rocksmq"]

    from mqctl.mq.nats.server import private_nats_server
    from mqctl.mq.sources import SourceOptions
    from mqctl.replay.session import start_session

    work = Path(tempfile.mkdtemp(prefix="mqctl-bench-replay-"))
    try:
        started = time.perf_counter()
        pool = insert_messages(min(args.distinct or args.messages, args.messages), args.rows, args.dim)
        payloads = [pool[n % len(pool)] for n in range(args.messages)] if len(pool) < args.messages else pool
        total_bytes = sum(map(len, payloads))
        print(
            f"{args.messages:,} insert messages ({args.rows} row(s), dim {args.dim}, {total_bytes / 1e6:.1f} MB) "
            f"built in {time.perf_counter() - started:.1f} s"
        )
        rocks = build_rocksmq(work, payloads)
        store = work / "nats"
        (store / "jetstream").mkdir(parents=True)
        with private_nats_server(store, writable=True, timeout=30) as url:
            if "nats" in labels:
                asyncio.run(fill_stream(url, payloads))
            del payloads, pool
            bare_nats = bare_raw = 0.0
            if "nats" in labels:
                bare_nats = args.messages / timed(lambda: asyncio.run(bare_nats_read(url, args.messages)))
                bare_raw = args.messages / timed(lambda: asyncio.run(bare_nats_raw_read(url, args.messages)))
            bare_rocks = args.messages / timed(lambda: bare_rocksdict_scan(rocks))
            print(
                f"bare read: nats-py fetch {bare_nats:,.0f} messages/s, nats-py raw pull requests {bare_raw:,.0f} "
                f"messages/s, rocksdict scan {bare_rocks:,.0f} messages/s (0: not measured)"
            )

            started = time.perf_counter()
            spark = start_session("local[2]", {"spark.sql.shuffle.partitions": "2"})
            print(f"Spark start-up: {time.perf_counter() - started:.2f} s (not in the rates)")
            try:
                if "nats" in labels and not args.no_executor_read:
                    executor_read_rate({"nats": url}, args.messages, "nats")
                if "rocksmq" in labels and not args.no_executor_read:
                    executor_read_rate({"rocksmq": str(rocks)}, args.messages, "rocksmq")
                rates = {}
                for label, source in (("nats", SourceOptions(nats=url)), ("rocksmq", SourceOptions(rocksmq=rocks))):
                    if label in labels:
                        rates[label] = [replay_rate(spark, source, work, n, args.messages, label) for n in (1, 2)]
            finally:
                spark.stop()
            cluster_rates = {} if args.no_cluster else cluster_replay_rates(work, url, rocks, args.messages, labels)
        for label, bare in (("nats", bare_nats), ("rocksmq", bare_rocks)):
            if label not in rates:
                continue
            one, two = rates[label]
            print(
                f"{label}: replay/bare read (1 partition) {one / bare:.2f} (goal >= 0.7); "
                f"2 partitions/1 partition {two / one:.2f} (goal >= 1.6)"
            )
        if "nats" in rates:
            print(f"nats: replay (1 partition)/raw pull-request read {rates['nats'][0] / bare_raw:.2f}")
        for label, rate in cluster_rates.items():
            print(
                f"{label}: standalone cluster (2 workers x 1 core)/local[2], 2 partitions {rate / rates[label][1]:.2f}"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
