"""Benchmark `channels list` against the plainest possible reads of the same data.

RocksMQ: a directory in Milvus's layout (messages `<topic>/<id>` holding real TimeTick protobufs, and a
`_meta_kv` with pages) with >= 1,000,000 messages over 16 topics; `RocksMQSource.list_channels()` vs a
bare rocksdict full key scan. Goal: at most 1.2x (listing reads keys, and values only for the first
and last message of each topic).
NATS: a real nats-server with 16 streams x 100,000 messages; `JetStreamSource.list_channels()` vs one
bare `streams_info` call. Goal: at most 1.5x.

Usage: python bench/channels.py [--topics 16] [--per-topic 62500] [--streams 16] [--per-stream 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from pathlib import Path

REPEATS = 5


def best_of(fn, repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def time_tick(tso: int) -> bytes:
    from mqctl.mq.decode.protos import pb2

    msg = pb2("msg_pb2").TimeTickMsg()
    msg.base.msg_type = 1200
    msg.base.timestamp = tso
    msg.base.sourceID = 1
    return msg.SerializeToString()


def build_rocksmq(root: Path, topics: int, per_topic: int, page_messages: int = 10_000) -> Path:
    """Messages and metadata as Milvus 2.3 writes them (internal/mq/mqimpl/rocksmq/server/rocksmq_impl.go)."""
    from rocksdict import Options, Rdict, WriteBatch

    data_dir, meta_dir = root / "rdb_data", root / "rdb_data_meta_kv"
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    db, meta = Rdict(str(data_dir), options=options), Rdict(str(meta_dir), options=options)
    next_id = 470633384162885633
    now_s = int(time.time())
    tso = (now_s * 1000 - 3_600_000) << 18
    for t in range(topics):
        topic = f"by-dev-rootcoord-dml_{t}"
        meta[f"topic_id/{topic}".encode()] = str(now_s - 3600).encode()
        batch = WriteBatch(raw_mode=True)
        page_size = 0
        for n in range(per_topic):
            value = time_tick(tso + n * (50 << 18))
            batch.put(f"{topic}/{next_id}".encode(), value)
            page_size += len(value)
            if (n + 1) % page_messages == 0:
                for kind, text in (("page_message_size", page_size), ("page_ts", now_s), ("acked_ts", now_s)):
                    meta[f"{kind}/{topic}/{next_id}".encode()] = str(text).encode()
                page_size = 0
            next_id += 1
        meta[f"message_size/{topic}".encode()] = str(page_size).encode()
        db.write(batch)
    db.flush()
    db.close()
    meta.close()
    return data_dir


def bare_key_scan(data_dir: Path) -> int:
    from rocksdict import AccessType, Options, Rdict

    db = Rdict(str(data_dir), options=Options(raw_mode=True), access_type=AccessType.read_only())
    count = 0
    for _ in db.keys():  # noqa: SIM118  (Rdict iterates items, not keys)
        count += 1
    db.close()
    return count


def bench_rocksmq(work: Path, topics: int, per_topic: int) -> None:
    from mqctl.mq.rocksmq.reader import RocksMQSource

    start = time.perf_counter()
    data_dir = build_rocksmq(work, topics, per_topic)
    print(f"rocksmq: built {topics} topics x {per_topic:,} messages in {time.perf_counter() - start:.1f}s")

    def listing():
        with RocksMQSource(data_dir) as source:
            channels = source.list_channels()
        assert sum(c.messages for c in channels) == topics * per_topic

    assert bare_key_scan(data_dir) == topics * per_topic
    listing()  # warm the page cache for both
    scan = best_of(lambda: bare_key_scan(data_dir))
    listed = best_of(listing)
    print(
        f"rocksmq: channels list {listed * 1000:.0f} ms, bare rocksdict key scan {scan * 1000:.0f} ms, "
        f"ratio {listed / scan:.2f} (goal <= 1.2)"
    )


async def fill_streams(url: str, streams: int, per_stream: int) -> None:
    import nats

    nc = await nats.connect(url)
    js = nc.jetstream()
    tso = (int(time.time() * 1000) - 3_600_000) << 18
    payloads = [time_tick(tso + n * (50 << 18)) for n in range(1000)]
    for s in range(streams):
        name = f"by-dev-rootcoord-dml_{s}"
        await js.add_stream(name=name, subjects=[name])
        for n in range(per_stream):
            await nc.publish(name, payloads[n % 1000])  # core publish: the stream stores it, no ack round trip
        await nc.flush()
    while True:
        infos = await js.streams_info()
        if sum(i.state.messages for i in infos) >= streams * per_stream:
            break
        await asyncio.sleep(0.2)
    await nc.close()


def bench_nats(work: Path, streams: int, per_stream: int) -> None:
    from mqctl.mq.nats.client import JetStreamSource
    from mqctl.mq.nats.server import private_nats_server

    store = work / "nats"
    (store / "jetstream").mkdir(parents=True)
    with private_nats_server(store, writable=True, timeout=30) as url:
        start = time.perf_counter()
        asyncio.run(fill_streams(url, streams, per_stream))
        print(f"nats: built {streams} streams x {per_stream:,} messages in {time.perf_counter() - start:.1f}s")
        with JetStreamSource(url) as source:

            def bare_call():
                return source._run(source._js.streams_info())

            def listing(message_times: bool):
                channels = source.list_channels(message_times=message_times)
                assert sum(c.messages for c in channels) == streams * per_stream

            listing(True)
            bare = best_of(bare_call, 20)
            for label, message_times in (("TSO times (default)", True), ("--store-times", False)):
                listed = best_of(lambda times=message_times: listing(times), 20)
                print(
                    f"nats: channels list, {label}: {listed * 1000:.2f} ms, bare streams_info {bare * 1000:.2f} ms, "
                    f"ratio {listed / bare:.2f} (goal <= 1.5)"
                )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=16)
    parser.add_argument("--per-topic", type=int, default=62_500)
    parser.add_argument("--streams", type=int, default=16)
    parser.add_argument("--per-stream", type=int, default=100_000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="mqctl-bench-"))
    try:
        bench_rocksmq(work, args.topics, args.per_topic)
        bench_nats(work, args.streams, args.per_stream)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
