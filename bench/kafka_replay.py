"""Benchmark mqctl's Kafka read against Spark's own Kafka source (spark-sql-kafka-0-10) on the same topic.

Starts a real Kafka broker (tests/helpers/kafka.py), writes real-format Milvus insert messages (bench/replay.py
`insert_messages`) to one topic as Milvus's producer does (partition 0, zstd), starts a local[2] Spark with Spark's
Kafka source on its class path (bench/spark_kafka/pom.xml, resolved from Maven Central once), then prints in one run:
- the check: every offset and the CRC-32 of every payload, read by Spark's source and by mqctl's reader, equal;
- Spark's Kafka source: `spark.read.format("kafka")` of the topic, offsets and payload lengths summed (every value
  is read), one task (the topic has one partition) and with minPartitions=2;
- mqctl's raw-messages read: `KafkaSource.iter_messages` (what each replay partition reads: a RawMessage with its
  offset, payload and headers), in this process, and two readers in two processes on the two halves of the
  offsets, as two replay partitions read; the ratio to Spark's source with the same parallelism;
- beside them the `milvus_mq` data source's messages and rows shapes through Spark (decoding Milvus's messages:
  work Spark's Kafka source does not do), two partitions.
Spark start-up is printed apart; each timed read is the best of three after a warm-up.
Goal: mqctl's raw-messages read >= 0.8x Spark's Kafka source.

Usage: python bench/kafka_replay.py [--messages 200000] [--rows 1] [--dim 8]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.helpers.kafka: the tests' broker
sys.path.insert(0, str(Path(__file__).resolve().parent))

TOPIC = "bench-rootcoord-dml_0"
POM = Path(__file__).resolve().parent / "spark_kafka" / "pom.xml"
# the jars Spark's Kafka source needs beyond pyspark's own (which has lz4, snappy, zstd and the Hadoop client)
NEEDED = ("spark-sql-kafka-0-10_", "spark-token-provider-kafka-0-10_", "kafka-clients-", "commons-pool2-")


def spark_kafka_jars() -> list[str]:
    """Spark's Kafka source and what it needs, from Maven Central once (~/.cache/mqctl/spark-sql-kafka-VERSION/libs;
    a `complete` marker beside it tells a finished resolution from one that was cut short)."""
    version = POM.read_text().split("<spark.kafka.version>")[1].split("<")[0]
    libs = Path.home() / ".cache" / "mqctl" / f"spark-sql-kafka-{version}" / "libs"
    if not (libs.parent / "complete").exists():
        if shutil.which("mvn") is None:
            sys.exit("Maven (mvn) is needed once to fetch Spark's Kafka source: apt-get install maven")
        shutil.rmtree(libs, ignore_errors=True)
        fetch = ["mvn", "-q", "-B", "-f", str(POM), "dependency:copy-dependencies", "-DincludeScope=runtime"]
        run = subprocess.run([*fetch, f"-DoutputDirectory={libs}"], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"mvn could not fetch Spark's Kafka source:\n{(run.stdout + run.stderr)[-3000:]}")
        (libs.parent / "complete").write_text(version)
    return sorted(str(jar) for jar in libs.glob("*.jar") if jar.name.startswith(NEEDED))


def best(label: str, fn, runs: int = 3) -> float:
    print(f"  timing {label} ...", file=sys.stderr, flush=True)
    fn()  # warm-up: the broker's page cache, Spark's Python workers, the JIT
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


# ------------------------------------------------------------------------------------------- mqctl
def mqctl_read(bootstrap: str, first: int | None = None, last: int | None = None) -> tuple[int, int]:
    """(records, payload bytes) of the topic's offsets first..last through mqctl's reader."""
    from mqctl.mq.kafka.connect import KafkaAccess
    from mqctl.mq.kafka.source import KafkaSource

    records = size = 0
    with KafkaSource(KafkaAccess(bootstrap)) as source:
        for raw in source.iter_messages(TOPIC, first, last):
            records += 1
            size += len(raw.data)
    return records, size


def mqctl_parallel(pool: ProcessPoolExecutor, bootstrap: str, count: int) -> tuple[int, int]:
    """Two readers in two processes, each on half the offsets (as two replay partitions)."""
    half = count // 2
    parts = [pool.submit(mqctl_read, bootstrap, 0, half - 1), pool.submit(mqctl_read, bootstrap, half, count - 1)]
    results = [part.result() for part in parts]
    return sum(r[0] for r in results), sum(r[1] for r in results)


def mqctl_crcs(bootstrap: str) -> dict[int, int]:
    from mqctl.mq.kafka.connect import KafkaAccess
    from mqctl.mq.kafka.source import KafkaSource

    with KafkaSource(KafkaAccess(bootstrap)) as source:
        return {raw.id: zlib.crc32(raw.data) for raw in source.iter_messages(TOPIC)}


# ------------------------------------------------------------------------------------------- Spark
def spark_frame(spark, bootstrap: str, partitions: int):
    return (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", TOPIC)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .option("minPartitions", str(partitions))
        .load()
    )


def spark_read(spark, bootstrap: str, partitions: int) -> tuple[int, int]:
    from pyspark.sql import functions as F

    row = spark_frame(spark, bootstrap, partitions).agg(F.count("*"), F.sum(F.length("value"))).collect()[0]
    return int(row[0]), int(row[1])


def spark_crcs(spark, bootstrap: str) -> dict[int, int]:
    from pyspark.sql import functions as F

    rows = spark_frame(spark, bootstrap, 1).select("offset", F.crc32("value").alias("crc")).collect()
    return {int(r["offset"]): int(r["crc"]) for r in rows}


def milvus_mq_count(spark, bootstrap: str, shape: str, partitions: int) -> int:
    reader = spark.read.format("milvus_mq").option("kafka", bootstrap).option("partitions", str(partitions))
    if shape == "rows":
        reader = reader.option("collection", "bench_items")
    return int(reader.option("shape", shape).load().count())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--dim", type=int, default=8)
    args = parser.parse_args()
    count = args.messages
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stop still stops the broker and Spark

    from replay import insert_messages

    from mqctl.replay.session import start_session
    from tests.helpers.kafka import produce, running_kafka

    jars = spark_kafka_jars()
    print("Spark's Kafka source:", ", ".join(Path(j).name for j in jars))
    payloads = insert_messages(count, args.rows, args.dim)
    size = sum(map(len, payloads))
    print(f"machine: {os.cpu_count()} cores, load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="mqctl-bench-kafka-replay-") as work:
        with running_kafka(Path(work)) as bootstrap:
            for start in range(0, count, 50_000):  # the producer's queue holds 100,000 records
                produce(bootstrap, TOPIC, [(p, {}) for p in payloads[start : start + 50_000]])
            print(f"{count:,} insert messages ({size / 2**20:.1f} MiB of payload) in {TOPIC} on {bootstrap}")
            started = time.perf_counter()
            spark = start_session("local[2]", {"spark.jars": ",".join(jars), "spark.ui.enabled": "false"})
            print(f"Spark {spark.version} local[2] up in {time.perf_counter() - started:.1f} s")
            try:
                theirs, mine = spark_crcs(spark, bootstrap), mqctl_crcs(bootstrap)
                assert sorted(theirs) == list(range(count)) and theirs == mine, "the two reads differ"
                print(f"check: the same {len(mine):,} offsets and payload CRC-32s from both")
                for partitions in (1, 2):
                    got = spark_read(spark, bootstrap, partitions)
                    assert got == (count, size), got
                spark1 = best("Spark, 1 task", lambda: spark_read(spark, bootstrap, 1))
                spark2 = best("Spark, minPartitions=2", lambda: spark_read(spark, bootstrap, 2))
                assert mqctl_read(bootstrap) == (count, size)
                mine1 = best("mqctl, 1 reader", lambda: mqctl_read(bootstrap))
                # spawned, not forked: a fork of this process (a JVM gateway, librdkafka threads) can deadlock
                with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
                    assert mqctl_parallel(pool, bootstrap, count) == (count, size)
                    mine2 = best("mqctl, 2 processes", lambda: mqctl_parallel(pool, bootstrap, count))
                assert milvus_mq_count(spark, bootstrap, "messages", 2) == count
                messages2 = best("milvus_mq messages", lambda: milvus_mq_count(spark, bootstrap, "messages", 2))
                assert milvus_mq_count(spark, bootstrap, "rows", 2) == count * args.rows
                rows2 = best("milvus_mq rows", lambda: milvus_mq_count(spark, bootstrap, "rows", 2))
            finally:
                spark.stop()

    def rate(seconds: float) -> str:
        return f"{count / seconds:>9,.0f} messages/s ({size / seconds / 2**20:5.1f} MiB/s)"

    print(f"Spark's Kafka source, 1 task:            {rate(spark1)}")
    print(f"mqctl raw-messages read, 1 reader:       {rate(mine1)}   ratio {spark1 / mine1:.2f} (goal >= 0.8)")
    print(f"Spark's Kafka source, minPartitions=2:   {rate(spark2)}")
    print(f"mqctl raw-messages read, 2 processes:    {rate(mine2)}   ratio {spark2 / mine2:.2f} (goal >= 0.8)")
    print(f"milvus_mq messages shape, 2 partitions:  {rate(messages2)}   (decodes every message)")
    print(f"milvus_mq rows shape, 2 partitions:      {rate(rows2)}   (decodes every insert into rows)")


if __name__ == "__main__":
    main()
