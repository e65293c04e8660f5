"""The NATS announcement's RocksMQ vs NATS table, reproduced through Milvus on this machine.

Zhen Ye, "Optimizing Data Communication: Milvus Embraces NATS Messaging" (zilliz.com, 2023-11-24), measured
on an M1 Pro with 16 GB: raw pub/sub, where RocksMQ beats NATS for packets under 64 KB and loses above
(Table 1), and Milvus with 100M vectors, average search latency 23.55 ms on RocksMQ vs 20.17 ms on NATS and
query 7.2 vs 6.74 ms (Table 2).

Here two Milvus 2.3.5 sandboxes run one after the other (never at once: the machine's cores would be
shared), one on RocksMQ and one on NATS, and each is measured by `mqctl.milvus.measure` (the code behind
`mqctl sandbox rehearse --measure`): insert time by payload size (1 KB to 1 MB, each insert one message on a
one-shard collection), then search and query latency on the same `--rows` vectors (flushed, FLAT index,
loaded). The table shows both, NATS/RocksMQ here, and the announcement's NATS/RocksMQ where it has a figure
(inserts against its time per pub/sub op; search and query means against its averages).

With `--rounds N` each MQ is measured N times, the order alternating (RocksMQ first in odd rounds, NATS
first in even ones) on fresh sandboxes; the table gives the median of each figure and the NATS/RocksMQ
ratio of every round, so the spread a shared machine puts into the figures shows.

Usage: python bench/mq_compare.py [--rounds 1] [--rows 100000] [--dim 128] [--searches 500] [--queries 500]
       [--sizes 1KB,4KB,16KB,64KB,256KB,1MB] [--insert-mb 8] [--consistency Bounded]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path

MQS = ("rocksmq", "natsmq")


def median_measurement(results: list):
    """Each figure's median over the rounds (p50, p99 and mean each on its own)."""
    import statistics

    from mqctl.milvus.measure import InsertRate, Latency, Measurement

    def median_latency(items: list) -> Latency:
        return Latency(
            items[0].count,
            *(round(statistics.median(getattr(i, name) for i in items), 3) for name in ("p50_ms", "p99_ms", "mean_ms")),
        )

    first = results[0]
    return Measurement(
        first.rows,
        first.dim,
        first.consistency,
        median_latency([r.search for r in results]),
        median_latency([r.query for r in results]),
        [
            InsertRate(rate.payload_bytes, rate.inserts, statistics.median(r.inserts[n].seconds for r in results))
            for n, rate in enumerate(first.inserts)
        ],
        round(statistics.median(r.seconds for r in results), 1),
    )


def measure_on(mq: str, work: Path, settings) -> object:
    from mqctl.milvus.client import MilvusTarget
    from mqctl.milvus.measure import measure
    from mqctl.sandbox import server as sandbox

    folder = work / mq
    shutil.rmtree(folder, ignore_errors=True)
    start = time.monotonic()
    info = sandbox.up(str(folder), mq=mq)
    print(f"{mq}: sandbox up in {time.monotonic() - start:.1f} s ({info.uri})", flush=True)
    try:
        result = measure(MilvusTarget(info.uri), settings, say=lambda text: print(f"{mq}: {text.strip()}", flush=True))
    finally:
        sandbox.down(str(folder))
        shutil.rmtree(folder, ignore_errors=True)
    print(f"{mq}: measured in {result.seconds:.1f} s", flush=True)
    return result


def ratio_text(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def print_table(comparison, rounds: list) -> None:
    from mqctl.milvus.measure import size_label

    before, after = comparison.before, comparison.after
    print()
    print(
        f"{before.rows:,} vectors of dim {before.dim}, FLAT, {before.search.count} searches (top 10) and "
        f"{before.query.count} queries (10 primary keys), consistency {before.consistency}"
    )
    if len(rounds) > 1:
        print(f"median of {len(rounds)} rounds; the last column: NATS/RocksMQ in each round")
    header = f"{'metric':<16}{'unit':>10}{'RocksMQ':>11}{'NATS':>11}{'NATS/RocksMQ':>14}{'announced':>11}"
    print(header + ("   per round" if len(rounds) > 1 else ""))
    print("-" * len(header))
    for n, row in enumerate(comparison.figures):
        spread = "  " + " ".join(ratio_text(r.figures[n].ratio) for r in rounds) if len(rounds) > 1 else ""
        print(
            f"{row.metric:<16}{row.unit:>10}{row.before:>11.3f}{row.after:>11.3f}"
            f"{ratio_text(row.ratio):>14}{ratio_text(row.announced_ratio):>11}{spread}"
        )
    print()
    print("insert throughput (sequential inserts, one message each):")
    after_rates = {rate.payload_bytes: rate for rate in after.inserts}
    for rate in before.inserts:
        other = after_rates[rate.payload_bytes]
        print(
            f"  {size_label(rate.payload_bytes):>6} x {rate.inserts:>4}: RocksMQ {rate.per_second:8.1f} inserts/s "
            f"{rate.mb_per_second:7.2f} MB/s, NATS {other.per_second:8.1f} inserts/s {other.mb_per_second:7.2f} MB/s"
        )
    winners = [
        f"{size_label(r.payload_bytes)}: {'RocksMQ' if r.ms_per_insert < after_rates[r.payload_bytes].ms_per_insert else 'NATS'}"
        for r in before.inserts
    ]
    print("faster per insert: " + ", ".join(winners) + " (announced: RocksMQ under 64 KB, NATS above)")


def main() -> None:
    from mqctl.milvus.measure import MeasureSettings, compare, parse_sizes

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="measure each MQ this many times (medians)")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--searches", type=int, default=500)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--sizes", default="1KB,4KB,16KB,64KB,256KB,1MB", help="payload bytes per insert")
    parser.add_argument("--insert-mb", type=float, default=8, help="payload per size (20 to 1000 inserts)")
    parser.add_argument("--consistency", default="Bounded", help="Bounded (Milvus's default) or Strong")
    parser.add_argument("--dir", type=Path, help="work folder (default: a temporary one, removed after)")
    args = parser.parse_args()
    settings = MeasureSettings(
        rows=args.rows,
        dim=args.dim,
        searches=args.searches,
        queries=args.queries,
        consistency=args.consistency,
        insert_sizes=parse_sizes(args.sizes),
        insert_bytes=int(args.insert_mb * 1024 * 1024),
        min_inserts=20,
        max_inserts=1000,
    )
    print(
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; Milvus 2.3.5 sandboxes, one at a time"
    )
    work = args.dir or Path(tempfile.mkdtemp(prefix="mqctl-mq-compare-"))
    results: dict[str, list] = {mq: [] for mq in MQS}
    try:
        for n in range(max(1, args.rounds)):
            for mq in MQS if n % 2 == 0 else MQS[::-1]:
                print(f"round {n + 1}: {mq}", flush=True)
                results[mq].append(measure_on(mq, work, settings))
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)
    rounds = [compare("rocksmq", "natsmq", r, n) for r, n in zip(results["rocksmq"], results["natsmq"])]
    medians = compare("rocksmq", "natsmq", *(median_measurement(results[mq]) for mq in MQS))
    print_table(medians, rounds)


if __name__ == "__main__":
    main()
