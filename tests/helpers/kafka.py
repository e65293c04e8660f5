"""A real Apache Kafka broker for the tests: the single-node KRaft broker of `mqctl sandbox up --mq kafka`
(mqctl/sandbox/kafka.py: jars from Maven Central, cached in ~/.cache/mqctl/kafka-<version>/libs; `.ci/run` fetches
them before the tests, a developer's first run does it under a file lock), on free 127.0.0.1 ports, stopped by its
PID.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

from mqctl.host.ports import free_ports
from mqctl.sandbox.kafka import broker_properties, format_storage, launch_broker, libs_dir, stop_broker, wait_ready

__all__ = ["FIXTURE_26_PREFIX", "libs_dir", "produce", "publish_fixture", "running_kafka"]

TEST_SETTINGS = {
    "log.retention.check.interval.ms": "1000",  # retention tests see deleted segments within seconds
    "log.initial.task.delay.ms": "0",  # ... from the start (the first check otherwise waits 30 s)
}


@contextlib.contextmanager
def running_kafka(work: Path, extra: dict[str, str] | None = None, timeout: float = 90) -> Iterator[str]:
    """A formatted KRaft storage dir in `work` and a broker on it; yields its bootstrap (127.0.0.1:PORT)."""
    port, controller = free_ports(2)
    config = format_storage(work, broker_properties(work, port, controller, {**TEST_SETTINGS, **(extra or {})}))
    log = work / "broker.log"
    proc = launch_broker(config, log)
    bootstrap = f"127.0.0.1:{port}"
    try:
        wait_ready(bootstrap, proc, log, timeout)
        yield bootstrap
    finally:
        stop_broker(proc.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)


def produce(bootstrap: str, topic: str, messages: list[tuple[bytes, dict[str, str]]]) -> None:
    """Write messages as Milvus 2.3–2.5 does (pkg/mq/msgstream/mqwrapper/kafka/kafka_producer.go): the payload as
    the record's value, the properties as headers, partition 0, zstd (kafka_client.go's producer config); the
    topic is auto-created as Milvus relies on."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "compression.codec": "zstd", "linger.ms": 2})
    for payload, properties in messages:
        producer.produce(topic, value=payload, partition=0, headers=list(properties.items()))
    left = producer.flush(30)
    assert left == 0, f"{left} records not delivered to {topic}"


FIXTURE_26_PREFIX = "wal26-"  # the fixture's topics again, as 2.6 messages (properties in headers)


def publish_fixture(bootstrap: str) -> dict[str, int]:
    """The RocksMQ fixture's topics (real Milvus 2.3.5 messages) under their own names, and the 2.6 form of their
    messages (tests/helpers/woodpecker_wal.py `envelope`) under FIXTURE_26_PREFIX + name; returns topic -> count."""
    from tests.helpers.woodpecker_wal import fixture_logs, fixture_topics

    written = {}
    for topic, payloads in fixture_topics().items():
        produce(bootstrap, topic, [(payload, {}) for payload in payloads])
        written[topic] = len(payloads)
    for log in fixture_logs():
        if log.messages:
            produce(bootstrap, FIXTURE_26_PREFIX + log.channel, log.messages)
            written[FIXTURE_26_PREFIX + log.channel] = len(log.messages)
    return written
