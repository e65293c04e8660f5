"""Benchmark mqctl's Kafka reader against a bare confluent-kafka consumer on the same topic.

Starts a real Kafka broker (tests/helpers/kafka.py), writes real-format Milvus insert messages
(bench/replay.py `insert_messages`) to one topic as Milvus's producer does (partition 0, zstd), then prints in
one run:
- the bare read rate: a confluent-kafka consumer assigned to partition 0, `consume()` batches, no decode;
- mqctl's `KafkaSource.iter_messages` (the reader `channels show/peek`, checkpoints and the replay partitions use:
  RawMessage with headers, offsets checked), and its ratio to the bare read;
- `channels list` on the broker (offsets, first/last TSO of every topic, groups), once.
Goal: mqctl's read >= 0.8x the bare consumer. Spark's own Kafka source (spark-sql-kafka-0-10) is compared in
bench/kafka_replay.py.

Usage: python bench/kafka.py [--messages 100000] [--rows 1] [--dim 8]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.helpers.kafka: the tests' broker
sys.path.insert(0, str(Path(__file__).resolve().parent))

TOPIC = "bench-rootcoord-dml_0"


def bare_read(bootstrap: str, count: int) -> float:
    """Seconds for a plain assign-and-consume of the whole topic (values only)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    started, seen = time.perf_counter(), 0
    while seen < count:
        for record in consumer.consume(min(1000, count - seen), timeout=1.0):
            if record.error() is None:
                seen += 1
                record.value()
    elapsed = time.perf_counter() - started
    consumer.close()
    return elapsed


def mqctl_read(bootstrap: str, count: int) -> float:
    from mqctl.mq.kafka.connect import KafkaAccess
    from mqctl.mq.kafka.source import KafkaSource

    with KafkaSource(KafkaAccess(bootstrap)) as source:
        started = time.perf_counter()
        seen = sum(1 for _ in source.iter_messages(TOPIC))
        elapsed = time.perf_counter() - started
    assert seen == count, f"read {seen} of {count}"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--dim", type=int, default=8)
    args = parser.parse_args()

    from replay import insert_messages

    from tests.helpers.kafka import produce, running_kafka

    payloads = insert_messages(args.messages, args.rows, args.dim)
    size = sum(map(len, payloads))
    with tempfile.TemporaryDirectory(prefix="mqctl-bench-kafka-") as work:
        started = time.perf_counter()
        with running_kafka(Path(work)) as bootstrap:
            print(f"broker up in {time.perf_counter() - started:.1f} s at {bootstrap}")
            produce(bootstrap, TOPIC, [(p, {}) for p in payloads])
            print(f"{args.messages:,} insert messages ({size / 2**20:.1f} MiB of payload) written to {TOPIC}")
            bare_read(bootstrap, args.messages)  # warm the broker's page cache and the fetch path
            bare = min(bare_read(bootstrap, args.messages) for _ in range(3))
            mine = min(mqctl_read(bootstrap, args.messages) for _ in range(3))
            print(
                f"bare confluent-kafka consume: {args.messages / bare:,.0f} messages/s ({size / bare / 2**20:.1f} MiB/s)"
            )
            print(
                f"mqctl KafkaSource.iter_messages: {args.messages / mine:,.0f} messages/s ({size / mine / 2**20:.1f} MiB/s)"
            )
            print(f"ratio mqctl / bare: {bare / mine:.2f} (goal >= 0.8)")
            from mqctl.mq.kafka.connect import KafkaAccess
            from mqctl.mq.kafka.source import KafkaSource

            with KafkaSource(KafkaAccess(bootstrap)) as source:
                started = time.perf_counter()
                source.list_channels()
                print(f"channels list (offsets, first/last TSO, groups): {time.perf_counter() - started:.3f} s")


if __name__ == "__main__":
    main()
