"""Kafka retention of Milvus's topics: the topic configs Milvus depends on, and when they delete what Milvus has
not persisted.

Milvus 2.3–2.5 sets no retention on its Kafka topics and has no `kafka.*` retention key (configs/milvus.yaml:
brokerList, sasl*, securityProtocol, ssl.*, readTimeout); its docs (deploy_pulsar.md, "Configure Kafka") leave
retention to the Kafka deployment. So the topics carry the broker's defaults or whatever an operator set, and:

- `cleanup.policy` must be `delete`: Milvus's records have no key (kafka_producer.go), and a compacted topic
  refuses a record without a key ("Compacted topic cannot accept message without key"): Milvus's producers fail.
- `retention.ms` and `retention.bytes` delete whole segments whether Milvus flushed what they hold or not (Milvus
  commits no consumer offset to hold them back, kafka_consumer.go's Ack does nothing): a retention shorter than the
  age of a vchannel's channel checkpoint deletes messages a restart needs (`channels checkpoints --kafka` names
  them; `retention show --etcd` compares each topic's retention.ms, mqctl.mq.retention.check_checkpoints); a size
  limit does so whenever the topic outgrows it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Protocol

from mqctl.findings import ERROR, WARNING, Finding
from mqctl.mq.model import ChannelInfo
from mqctl.mq.retention import age_seconds
from mqctl.mq.retention_model import ChannelRetention, ConfiguredRetention, RetentionReport


class TopicSource(Protocol):
    """What the retention report reads of a Kafka source (source.KafkaSource is the one), named here so that this
    module does not import the source it is called from."""

    description: str

    @property
    def mq(self) -> str: ...

    def list_channels(self, *, message_times: bool = True) -> list[ChannelInfo]: ...

    def topic_configs(self, names: Iterable[str]) -> dict[str, dict[str, str]]: ...


RULE_COMPACTED = "RET110"  # cleanup.policy compacts: Milvus's keyless records are refused
RULE_SIZE = "RET111"  # retention.bytes deletes by size, whatever Milvus has flushed
CONFIGURED_FROM = "the topics' own configs (Milvus sets no Kafka retention)"


def _int(text: str | None) -> int:
    try:
        return int(text or -1)
    except ValueError:
        return -1


def kafka_report(source: TopicSource, configured: ConfiguredRetention, now: dt.datetime) -> RetentionReport:
    """Per topic: retention.ms, retention.bytes and cleanup.policy as the brokers apply them, with what each
    means for Milvus (the module's docstring). `configured` is unused: Milvus's config names no Kafka retention."""
    del configured
    channels = {c.name: c for c in source.list_channels()}
    configs = source.topic_configs(channels)
    rows = []
    for name, channel in channels.items():
        topic = configs.get(name, {})
        policy = topic.get("cleanup.policy", "delete")
        retention_ms, retention_bytes = _int(topic.get("retention.ms")), _int(topic.get("retention.bytes"))
        row = ChannelRetention(
            name,
            {"from": [CONFIGURED_FROM]},
            {
                "retention_ms": retention_ms,
                "retention_bytes": retention_bytes,
                "cleanup_policy": policy,
                "messages": channel.messages,
                "oldest_message_age_seconds": age_seconds(channel.first_time, now),
            },
        )
        if "compact" in policy.split(","):
            cause = (
                f"cleanup.policy is {policy}: the topic refuses Milvus's records, which have no key "
                '("Compacted topic cannot accept message without key"), so Milvus\'s producers fail'
            )
            row.add(
                Finding(RULE_COMPACTED, ERROR, f"topic {name}: {cause}", name, hint="set cleanup.policy=delete"),
                cause,
            )
        if retention_bytes > 0:
            cause = (
                f"retention.bytes is {retention_bytes}: Kafka deletes the oldest segments by size whether Milvus "
                "has flushed them or not"
            )
            row.add(
                Finding(
                    RULE_SIZE,
                    WARNING,
                    f"topic {name}: {cause}",
                    name,
                    hint="set retention.bytes=-1 and bound the topic by retention.ms; `mqctl channels checkpoints "
                    "--kafka` tells whether it already passed a checkpoint",
                ),
                cause,
            )
        rows.append(row)
    return RetentionReport(source.description, source.mq, rows, [f for r in rows for f in r.findings])
