"""Benchmark follow mode (`mqctl replay --to-spark --follow`) against the batch replay of the same messages.

Fills a RocksMQ directory and a NATS stream (a real nats-server) with real-format Milvus insert messages
and a time tick after every `--tick-every` inserts (as Milvus's DML channels carry them), then prints:
- throughput: the batch replay (rows shape to Parquet, 1 partition) and a follow query with
  `--available-now` (1 partition) over the same messages, in messages/s, and their ratio; and the same
  follow query cut into batches of `--messages / 5` (`--max-messages-per-trigger`, steady state);
- end-to-end lag on NATS: a follow query with a 1 s trigger runs while a publisher sends inserts at
  `--rate` messages/s (a time tick every 0.2 s, as Milvus sends them); for each insert, the time from its
  publication to the commit of the micro-batch that wrote it (median, p95, max).
Spark start-up is left out; both throughput runs follow a small warm-up in the same session.

Usage: python bench/follow.py [--messages 100000] [--tick-every 100] [--rate 200] [--seconds 30]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.replay import CHANNEL, COLLECTION, FIRST_ROCKSMQ_ID, insert_messages


def time_tick(tso: int) -> bytes:
    from pymilvus.grpc_gen import common_pb2, msg_pb2

    return msg_pb2.TimeTickMsg(
        base=common_pb2.MsgBase(msg_type=common_pb2.TimeTick, timestamp=tso, sourceID=1)
    ).SerializeToString()


def with_time_ticks(inserts: list[bytes], every: int) -> list[bytes]:
    """Inserts with a time tick (a TSO after theirs) after every `every` of them and at the end."""
    from pymilvus.grpc_gen import msg_pb2

    messages = []
    for n, payload in enumerate(inserts, 1):
        messages.append(payload)
        if n % every == 0 or n == len(inserts):
            tso = msg_pb2.InsertRequest.FromString(payload).base.timestamp + 1
            messages.append(time_tick(tso))
    return messages


def build_rocksmq(root: Path, payloads: list[bytes]) -> Path:
    from rocksdict import Options, Rdict, WriteBatch

    path = root / "rdb_data"
    options = Options(raw_mode=True)
    options.create_if_missing(True)
    db = Rdict(str(path), options=options)
    batch = WriteBatch(raw_mode=True)
    for n, payload in enumerate(payloads):
        batch.put(f"{CHANNEL}/{FIRST_ROCKSMQ_ID + 3 * n}".encode(), payload)  # gaps, as the shared allocator leaves
    db.write(batch)
    db.close()
    return path


async def fill_stream(url: str, payloads: list[bytes]) -> None:
    import nats

    nc = await nats.connect(url)
    js = nc.jetstream()
    await js.add_stream(name=CHANNEL, subjects=[CHANNEL])
    for payload in payloads:
        await nc.publish(CHANNEL, payload)
    await nc.flush()
    while (await js.stream_info(CHANNEL)).state.messages < len(payloads):
        await asyncio.sleep(0.2)
    await nc.close()


def throughput(spark, source, work: Path, label: str, messages: int) -> None:
    from mqctl.replay.follow import FollowRequest, run_follow
    from mqctl.replay.job import run_replay
    from mqctl.replay.model import ReplayRequest

    def request(name: str, **extra) -> ReplayRequest:
        return ReplayRequest(source, output=str(work / name), collection=COLLECTION, partitions=1, **extra)

    run_replay(request(f"warmup-{label}", end=str(_first_id(source) + 2_000)), spark=spark)
    batch = run_replay(request(f"batch-{label}"), spark=spark)
    batch_rate = (batch.messages or 0) / batch.seconds
    print(f"  {label}: batch replay {batch.seconds:.2f} s, {batch_rate:,.0f} messages/s")
    rates = []
    for cap in (None, messages // 5):
        name = f"follow-{label}-{cap or 'all'}"
        follow = FollowRequest(
            request(name), str(work / f"{name}-ckpt"), available_now=True, max_messages_per_trigger=cap
        )
        result = run_follow(follow, spark=spark)
        assert result.messages == messages, (result.messages, messages)
        rate = result.messages / result.seconds
        rates.append(rate)
        what = "one batch" if cap is None else f"{result.batches} batches of <= {cap:,}"
        print(f"  {label}: follow --available-now ({what}) {result.seconds:.2f} s, {rate:,.0f} messages/s")
    print(
        f"{label}: follow/batch throughput {rates[0] / batch_rate:.2f} (one batch), "
        f"{rates[1] / batch_rate:.2f} (batches of {messages // 5:,})"
    )


def _first_id(source) -> int:
    return FIRST_ROCKSMQ_ID if source.rocksmq else 1


def lag(spark, url: str, work: Path, rate: float, seconds: float) -> None:
    """Publish inserts at `rate` per second with time ticks every 0.2 s while a follow query runs."""
    from mqctl.replay.datasource import FORMAT
    from mqctl.replay.follow import _offsets

    published: dict[int, float] = {}  # stream sequence -> wall time of the publication
    inserts = iter(insert_messages(int(rate * seconds) + 10, 1, 8))
    stop = threading.Event()

    async def publish() -> None:
        import nats

        from mqctl.mq.decode.messages import datetime_to_tso

        nc = await nats.connect(url)
        js = nc.jetstream()
        next_tick = time.monotonic()
        started = time.monotonic()
        sent = 0
        while not stop.is_set():
            now = time.monotonic()
            if sent < rate * (now - started):
                ack = await js.publish(CHANNEL, next(inserts))
                published[ack.seq] = time.time()
                sent += 1
            elif now >= next_tick:
                import datetime as dt

                await js.publish(CHANNEL, time_tick(datetime_to_tso(dt.datetime.now(dt.timezone.utc))))
                next_tick = now + 0.2
            else:
                await asyncio.sleep(0.002)
        await nc.close()

    start = {"startingOffsets": "latest"}
    query = (
        spark.readStream.format(FORMAT)
        .options(nats=url, collection=COLLECTION, partitions="1", **start)
        .load()
        .writeStream.format("parquet")
        .option("checkpointLocation", str(work / "lag-ckpt"))
        .trigger(processingTime="1 second")
        .start(str(work / "lag-out"))
    )
    time.sleep(5)  # the query's first (empty) trigger
    publisher = threading.Thread(target=lambda: asyncio.run(publish()), daemon=True)
    publisher.start()
    time.sleep(seconds)
    stop.set()
    publisher.join()
    time.sleep(5)  # the last messages' batch
    query.stop()
    lags = []
    for progress in query.recentProgress:
        data = json.loads(progress.json)
        source = (data.get("sources") or [{}])[0]
        if not source.get("endOffset") or not data.get("numInputRows"):
            continue
        begin = _offsets(source.get("startOffset")).get(CHANNEL, 0)
        end = _offsets(source["endOffset"])[CHANNEL]
        committed = _epoch(data["timestamp"]) + data["durationMs"]["triggerExecution"] / 1000
        lags += [committed - published[seq] for seq in range(begin, end) if seq in published]
    lags.sort()
    if not lags:
        print("lag: no batch carried the published inserts")
        return
    p95 = lags[int(0.95 * (len(lags) - 1))]
    print(
        f"lag at {rate:,.0f} inserts/s, 1 s trigger, {len(lags):,} inserts: median {statistics.median(lags):.2f} s, "
        f"p95 {p95:.2f} s, max {lags[-1]:.2f} s (publication -> commit of its micro-batch)"
    )


def _epoch(text: str) -> float:
    import datetime as dt

    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000, help="insert messages (default 100,000)")
    parser.add_argument("--tick-every", type=int, default=100, help="a time tick after this many inserts")
    parser.add_argument("--rate", type=float, default=200, help="inserts per second in the lag run")
    parser.add_argument("--seconds", type=float, default=30, help="length of the lag run")
    args = parser.parse_args()

    from mqctl.mq.nats.server import private_nats_server
    from mqctl.mq.sources import SourceOptions
    from mqctl.replay.session import start_session

    work = Path(tempfile.mkdtemp(prefix="mqctl-bench-follow-"))
    try:
        payloads = with_time_ticks(insert_messages(args.messages, 1, 8), args.tick_every)
        print(f"{args.messages:,} insert messages and {len(payloads) - args.messages:,} time ticks")
        rocks = build_rocksmq(work, payloads)
        store = work / "nats"
        (store / "jetstream").mkdir(parents=True)
        with private_nats_server(store, writable=True, timeout=30) as url:
            asyncio.run(fill_stream(url, payloads))
            started = time.perf_counter()
            spark = start_session("local[2]", {"spark.sql.shuffle.partitions": "2"})
            print(f"Spark start-up: {time.perf_counter() - started:.2f} s (not in the rates)")
            try:
                for label, source in (
                    ("nats", SourceOptions(nats=url)),
                    ("rocksmq", SourceOptions(rocksmq=str(rocks))),
                ):
                    throughput(spark, source, work, label, len(payloads))
                lag(spark, url, work, args.rate, args.seconds)
            finally:
                spark.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
