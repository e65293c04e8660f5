"""Kafka as a migration's target (preflight) and as the MQ Milvus restarted on (verify).

Preflight asks the brokers (mq/kafka/broker.py says why each check): they answer within a bounded wait, Milvus's
topics can be auto-created or are all there, and the brokers take messages as large as Milvus sends. Topics that
already hold records under Milvus's names are a warning: Milvus seeks them to its channel checkpoints, positions of
the MQ it leaves, and reads old records again (it skips those older than its checkpoints). Verify waits for the
topics of Milvus's channels to appear on the brokers once Milvus consumes them.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from mqctl.errors import MqctlError
from mqctl.findings import ERROR, INFO, WARNING, Finding

if TYPE_CHECKING:
    from mqctl.config.resolve.resolution import Resolution
    from mqctl.migrate.options import MigrateOptions
    from mqctl.mq.kafka.connect import KafkaAccess


class Findings(list[Finding]):
    """The findings of the Kafka checks, added as preflight adds its own (a text hint, never None)."""

    def add(self, severity: str, code: str, message: str, hint: str | None = "") -> None:
        self.append(Finding(code, severity, message, hint=hint or ""))


REACH_SECONDS = 10.0  # how long preflight waits for a broker to answer
TOPICS_SECONDS = 60.0  # how long verify waits for Milvus's topics to appear


def kafka_access(options: MigrateOptions, res: Resolution) -> KafkaAccess:
    """The brokers as Milvus will reach them: `--kafka`, else `kafka.brokerList` (Milvus's default localhost:9092
    when unset, as the switch writes it), with SASL and TLS from the config's `kafka.*`."""
    from mqctl.mq.kafka.connect import KafkaAccess, access_from_config

    bootstrap = options.kafka or (res.value("kafka.brokerList") or "").strip() or "localhost:9092"
    try:
        access = access_from_config(res)
    except MqctlError:
        return KafkaAccess(bootstrap, source="--kafka" if options.kafka else "kafka.brokerList")
    return dataclasses.replace(access, bootstrap=bootstrap)


def kafka_findings(options: MigrateOptions, res: Resolution) -> tuple[str | None, Findings]:
    """The bootstrap Milvus will use, and what the brokers' answers mean for the migration."""
    from mqctl.mq.kafka.broker import MILVUS_PRODUCER_MAX_BYTES, broker_facts, milvus_topics

    result = Findings()
    try:
        access = kafka_access(options, res)
        needed = milvus_topics(res.value)
        facts = broker_facts(access, needed, REACH_SECONDS)
    except MqctlError as err:
        result.add(ERROR, "target-unreachable", err.message + " (Milvus would not start on it)", err.hint)
        return options.kafka, result
    where = f"Kafka at {facts.bootstrap}"
    missing = [name for name in needed if name not in facts.topics]
    if facts.auto_create_topics:
        result.add(INFO, "kafka-auto-create", f"{where} creates Milvus's topics on first use (auto.create.topics)")
    elif missing:
        shown = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        result.add(
            ERROR,
            "kafka-topics-missing",
            f"{where} does not create topics (auto.create.topics.enable=false) and Milvus's {shown} do not exist",
            "create them (one partition each, cleanup.policy=delete), or turn auto.create.topics.enable on",
        )
    largest = _int(res.value("pulsar.maxMessageSize")) or 5242880
    if largest > MILVUS_PRODUCER_MAX_BYTES:
        result.add(
            ERROR,
            "kafka-message-size",
            f"pulsar.maxMessageSize {largest} cuts Milvus's inserts into messages larger than the "
            f"{MILVUS_PRODUCER_MAX_BYTES} bytes its Kafka producer allows (message.max.bytes): such inserts would fail",
            f"set pulsar.maxMessageSize to at most {MILVUS_PRODUCER_MAX_BYTES}",
        )
    limits = {"the brokers' message.max.bytes": facts.message_max_bytes}
    limits |= {f"topic {name}'s max.message.bytes": size for name, size in facts.topics.items()}
    small = {what: size for what, size in limits.items() if size is not None and size < largest}
    if small:
        what, size = next(iter(small.items()))
        more = f" (and {len(small) - 1} more)" if len(small) > 1 else ""
        result.add(
            ERROR,
            "kafka-message-size",
            f"{where}: {what} is {size} bytes{more}, smaller than the {largest}-byte messages Milvus writes "
            "(pulsar.maxMessageSize): the brokers would refuse large inserts",
            f"raise message.max.bytes (and the topics' max.message.bytes) to {largest} or more "
            f"(Milvus's producer allows {MILVUS_PRODUCER_MAX_BYTES}), or lower pulsar.maxMessageSize",
        )
    _stale_topic_findings(access, list(facts.topics), where, result)
    return access.bootstrap, result


def _stale_topic_findings(access: KafkaAccess, present: list[str], where: str, result: Findings) -> None:
    """Milvus's topics that hold messages already (an earlier run on this Kafka): Milvus would seek them to
    checkpoints taken on another MQ and read old messages as new."""
    from mqctl.mq.kafka.source import KafkaSource

    if not present:
        return
    try:
        with KafkaSource(access) as source:
            offsets = source.offsets(present)
    except MqctlError as err:
        result.add(ERROR, "target-unreachable", err.message, err.hint)
        return
    stale = {name: sum(p.high - p.low for p in parts) for name, parts in offsets.items() if any(p.high for p in parts)}
    if stale:
        shown = ", ".join(f"{name} ({count} records)" for name, count in list(stale.items())[:3])
        result.add(
            WARNING,
            "stale-kafka-topics",
            f"{where}: Milvus's topics already hold records of an earlier run: {shown}"
            + (f" and {len(stale) - 3} more" if len(stale) > 3 else "")
            + "; Milvus seeks them to checkpoints taken on the MQ it leaves and reads them again, skipping those "
            "older than its checkpoints (seen on 2.3.5: no row came back or went missing), until retention "
            "deletes them",
            "delete them first (kafka-topics.sh --delete --topic NAME) once nothing else reads them, for a "
            "start that reads nothing old",
        )


def _int(text: str | None) -> int | None:
    from mqctl.backends import go_parse_int

    return go_parse_int(text)


def wait_for_topics(access: KafkaAccess, names: list[str], timeout: float = TOPICS_SECONDS) -> tuple[list[str], float]:
    """Until every topic in `names` exists on the brokers (Milvus creates them as it consumes); returns those seen
    and the seconds waited."""
    import time

    from mqctl.host.hooks import wait_until
    from mqctl.mq.kafka.source import KafkaSource

    started, seen = time.monotonic(), list[str]()

    def there() -> bool:
        nonlocal seen
        with KafkaSource(access) as source:
            seen = sorted(name for name in names if name in source.topics)
        return len(seen) == len(names)

    wait_until(there, timeout, interval=1.0)
    return seen, round(time.monotonic() - started, 3)
