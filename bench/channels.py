"""Benchmark `channels list` against the plainest possible reads of the same data.

RocksMQ: a directory in Milvus's layout (messages `<topic>/<id>` holding real TimeTick protobufs, and a
`_meta_kv` with pages) with >= 1,000,000 messages over 16 topics; `RocksMQSource.list_channels()` vs a
bare rocksdict full key scan. Goal: at most 1.2x (listing reads keys, and values only for the first
and last message of each topic).
NATS: a real nats-server with 16 streams x 100,000 messages, listed by `mqctl.mq.channels.list_channels` (what the
CLI runs once connected). `--store-times` (one STREAM.LIST) vs one bare
nats-py `streams_info` call, goal at most 1.5x; the default (the Milvus TSO of each stream's first and last
message) vs a bare nats-py client doing the same work: `streams_info`, then the first and last message of
every stream requested concurrently (`asyncio.gather`) and the TSO read from each message's header, goal
at most 1.2x.

Usage: python bench/channels.py [--only rocksmq|nats] [--topics 16] [--per-topic 62500] [--streams 16]
       [--per-stream 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from pathlib import Path

REPEATS = 5
REPO = Path(__file__).resolve().parent.parent


def best_of(fn, repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def time_tick(tso: int) -> bytes:
    from mqctl.milvus.protos import pb2

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


async def bare_get_msg(js, header) -> tuple[list[tuple[str, int]], list[int | None]]:
    """What a plain nats-py program does for the same listing: `streams_info`, then the first and last message
    of every stream requested at once (`asyncio.gather` of `get_msg`), and the Milvus TSO from each message's
    MsgHeader (the same partial parse mqctl does)."""
    from nats.js.errors import NotFoundError

    infos = await js.streams_info()
    wanted = [(i.config.name, seq) for i in infos if i.state.messages for seq in (i.state.first_seq, i.state.last_seq)]
    answers = await asyncio.gather(*(js.get_msg(name, seq) for name, seq in wanted), return_exceptions=True)
    tsos: list[int | None] = []
    for answer in answers:
        if isinstance(answer, NotFoundError):
            tsos.append(None)
            continue
        if isinstance(answer, BaseException):
            raise answer
        header.ParseFromString(answer.data or b"")
        tsos.append(header.base.timestamp)
    return [(i.config.name, i.state.messages) for i in infos], tsos


async def bare_requests(js, header) -> tuple[list[tuple[str, int]], list[int | None]]:
    """The same with concurrent `nc.request` calls instead of `get_msg` (no RawStreamMsg objects, JSON and base64
    decoded by hand): the fastest a nats-py program gets with the client's own request/reply."""
    import base64
    import json

    nc = js._nc
    infos = await js.streams_info()
    wanted = [(i.config.name, seq) for i in infos if i.state.messages for seq in (i.state.first_seq, i.state.last_seq)]
    replies = await asyncio.gather(
        *(nc.request(f"$JS.API.STREAM.MSG.GET.{name}", b'{"seq":%d}' % seq, timeout=5) for name, seq in wanted)
    )
    tsos: list[int | None] = []
    for reply in replies:
        message = json.loads(reply.data).get("message")
        if message is None:
            tsos.append(None)
            continue
        header.ParseFromString(base64.b64decode(message.get("data") or ""))
        tsos.append(header.base.timestamp)
    return [(i.config.name, i.state.messages) for i in infos], tsos


BARE_SCRIPT = """
import asyncio, sys
import nats
from mqctl.milvus.protos import pb2

{bare_requests}

async def main(url):
    nc = await nats.connect(url)
    infos, tsos = await bare_requests(nc.jetstream(), pb2("common_pb2").MsgHeader())
    print(infos, tsos)
    await nc.close()

asyncio.run(main(sys.argv[1]))
"""


def median_process_seconds(commands: list[list[str]], runs: int = 7) -> list[float]:
    """The median wall time of each command run as a Python process, the commands taking turns (so a busy
    moment of the machine falls on both)."""
    import statistics
    import subprocess
    import sys

    times: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for command, spent in zip(commands, times):
            start = time.perf_counter()
            subprocess.run([sys.executable, *command], cwd=REPO, check=True, stdout=subprocess.DEVNULL)
            spent.append(time.perf_counter() - start)
    return [statistics.median(spent) for spent in times]


def bench_nats(work: Path, streams: int, per_stream: int) -> None:
    from mqctl.milvus.protos import pb2
    from mqctl.mq.channels import list_channels
    from mqctl.mq.decode.messages import tso_to_datetime
    from mqctl.mq.nats.client import JetStreamSource
    from mqctl.mq.nats.server import private_nats_server

    store = work / "nats"
    (store / "jetstream").mkdir(parents=True)
    with private_nats_server(store, writable=True, timeout=30) as url:
        start = time.perf_counter()
        asyncio.run(fill_streams(url, streams, per_stream))
        print(f"nats: built {streams} streams x {per_stream:,} messages in {time.perf_counter() - start:.1f}s")
        with JetStreamSource(url) as source:
            header = pb2("common_pb2").MsgHeader()

            def bare_streams_info():
                return source._run(source._js.streams_info())

            def bare_pipelined(read):
                infos, tsos = source._run(read(source._js, header))
                assert sum(m for _, m in infos) == streams * per_stream and len(tsos) == 2 * streams
                return tsos

            def listing(message_times: bool):
                """What `mqctl channels list` runs once the source is open (the CLI then prints it)."""
                result = list_channels(source, store_times=not message_times)
                assert result.totals.messages == streams * per_stream and not result.warnings
                return result.channels

            # the same answers: mqctl's times are the bare clients' TSOs
            times = [t for c in listing(True) for t in (c.first_time, c.last_time)]
            for read in (bare_get_msg, bare_requests):
                assert [tso_to_datetime(t) for t in bare_pipelined(read)] == times, read.__name__
            bare = best_of(bare_streams_info, 20)
            with_get_msg = best_of(lambda: bare_pipelined(bare_get_msg), 20)
            with_requests = best_of(lambda: bare_pipelined(bare_requests), 20)
            pipelined = min(with_get_msg, with_requests)
            print(
                f"nats: bare nats-py: streams_info {bare * 1000:.2f} ms; + {2 * streams} concurrent get_msg "
                f"{with_get_msg * 1000:.2f} ms; + {2 * streams} concurrent STREAM.MSG.GET requests "
                f"{with_requests * 1000:.2f} ms"
            )
            listed = best_of(lambda: listing(True), 20)
            print(
                f"nats: channels list, TSO times (default): {listed * 1000:.2f} ms, ratio {listed / pipelined:.2f} "
                "to the faster bare pipelined client (goal <= 1.2), "
                f"{listed / bare:.2f} to bare streams_info"
            )
            listed = best_of(lambda: listing(False), 20)
            print(
                f"nats: channels list, --store-times: {listed * 1000:.2f} ms, ratio {listed / bare:.2f} "
                "to bare streams_info (goal <= 1.5)"
            )
        # whole processes: Python start-up, imports, connecting, the listing and printing it
        import inspect

        bare_script = BARE_SCRIPT.replace("{bare_requests}", inspect.getsource(bare_requests))
        cli, script = median_process_seconds(
            [["-m", "mqctl", "channels", "list", "--nats", url, "--json"], ["-c", bare_script, url]]
        )
        print(
            f"nats: as processes, `mqctl channels list --json` {cli * 1000:.0f} ms, the bare client as a script "
            f"{script * 1000:.0f} ms, ratio {cli / script:.2f} (median of 7; start-up and imports, no goal)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("rocksmq", "nats"), help="run one of the two benchmarks")
    parser.add_argument("--topics", type=int, default=16)
    parser.add_argument("--per-topic", type=int, default=62_500)
    parser.add_argument("--streams", type=int, default=16)
    parser.add_argument("--per-stream", type=int, default=100_000)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="mqctl-bench-"))
    try:
        if args.only in (None, "rocksmq"):
            bench_rocksmq(work, args.topics, args.per_topic)
        if args.only in (None, "nats"):
            bench_nats(work, args.streams, args.per_stream)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
