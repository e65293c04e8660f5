"""Configured vs actual retention of Milvus's embedded MQs: the configured values, the report shape, and the
findings grouped by cause. Each MQ reports its own channels (nats/retention.py, rocksmq/retention.py);
retention_apply.py makes NATS streams match the config.

natsmq: Milvus creates each stream with `MaxAge/MaxBytes/MaxMsgs` from `natsmq.server.retention.*` and never
updates it; JetStream then rejects Milvus's AddStream with error 10058 when the stream's limits differ
(Milvus pkg/mq/msgstream/mqwrapper/nmq/nmq_client.go), so Milvus cannot start its producers. rocksmq:
retention deletes acked pages older than `retentionTimeInMinutes` or beyond `retentionSizeInMB`; unacked
pages are never purged (milvus #24106, #16606, #19574).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from mqctl import clock
from mqctl.backends import BACKENDS
from mqctl.errors import InputError
from mqctl.findings import ERROR, Finding
from mqctl.mq.checkpoints import flush_hint
from mqctl.mq.decode import messages
from mqctl.mq.retention_model import (
    NATS_KEYS,
    ChannelRetention,
    ConfiguredRetention,
    ConfiguredValue,
    FindingGroup,
    RetentionReport,
)

if TYPE_CHECKING:
    from mqctl.mq.milvus_meta import ChannelMeta
    from mqctl.mq.model import MQSource

ROCKS_TIME_KEY = "rocksmq.retentionTimeInMinutes"
ROCKS_SIZE_KEY = "rocksmq.retentionSizeInMB"
UNLIMITED = -1

Limits = dict[str, float | int]  # max_age (s), max_bytes, max_msgs[, duplicate_window (s)]; 0/-1 = unlimited

RULE_DRIFT = "RET100"  # stream limits differ from the configured retention -> JetStream error 10058
RULE_BLOCKED = "RET101"  # unacked pages older than the retention time: never purged (milvus #24106)
RULE_RETENTION = "CP104"  # the retention is shorter than the oldest live channel checkpoint's age


def stream_limits_from_config(configured: dict[str, ConfiguredValue]) -> Limits:
    """What a stream created by Milvus with this config holds: max_age in seconds (0 = none), -1 = unlimited."""
    for limit in ("max_age", "max_bytes", "max_msgs"):
        check_64_bits(configured[limit])
    age_minutes = configured["max_age"].value
    return {
        "max_age": max(age_minutes, 0) * 60,
        "max_bytes": configured["max_bytes"].value if configured["max_bytes"].value > 0 else UNLIMITED,
        "max_msgs": configured["max_msgs"].value if configured["max_msgs"].value > 0 else UNLIMITED,
    }


def check_64_bits(value: ConfiguredValue) -> None:
    """Exit 2 at the key's file:line when the value overflows the 64 bits Go computes it in (known_keys.too_large,
    the rule `config validate` reports as MQ117)."""
    from mqctl.config.known_keys import too_large

    why = too_large(value.key, value.value)
    if why:
        raise InputError(
            why,
            location=f"{value.file}:{value.line}" if value.file else None,
            hint="use 0 (or leave it empty) for no limit",
        )


def age_seconds(first_time: dt.datetime | None, now: dt.datetime) -> float | None:
    return round((now - first_time).total_seconds(), 3) if first_time else None


def group_findings(rows: list[ChannelRetention]) -> list[FindingGroup]:
    groups: dict[tuple[object, ...], FindingGroup] = {}
    for row in rows:
        for finding, cause in zip(row.findings, row._causes, strict=True):
            index = (finding.code, finding.key, finding.file, finding.line, cause, finding.hint)
            group = groups.setdefault(index, FindingGroup.of(finding, [], cause))
            group.channels.append(row.name)
    return list(groups.values())


def value_finding(code: str, severity: str, message: str, value: ConfiguredValue, hint: str) -> Finding:
    """A finding located at the configured value it is about."""
    return Finding(code, severity, message, value.key, value.file, value.line, hint)


def show_limit(limit: str, value: float | int) -> str:
    """A stream limit for people: max_age in minutes (as Milvus configures it), "unlimited" for 0/-1."""
    if value in (UNLIMITED, 0):
        return "unlimited"
    if limit in ("max_age", "duplicate_window"):
        return f"{value / 60:g} min" if value % 60 == 0 else f"{value:g} s"
    return str(value)


def retention_report(
    source: MQSource, configured: ConfiguredRetention, now: dt.datetime | None = None
) -> RetentionReport:
    """Configured vs actual retention of every channel; each MQ reports its own (see nats/retention.py and
    rocksmq/retention.py), with the channels' findings grouped by cause."""
    from mqctl.mq.channels import data_warnings

    report = source.retention_report(configured, now or clock.now())
    report.warnings = data_warnings(source)
    report.finding_groups = group_findings(report.channels)
    return report


def retention_against_checkpoints(
    meta: ChannelMeta, configured: ConfiguredValue, mq: str, now: dt.datetime | None = None
) -> Finding | None:
    """An error when the configured retention (in minutes, 0 = none) is shorter than
    the age of the oldest checkpoint of a live vchannel: retention deletes what Milvus needs to recover it."""
    now = now or clock.now()
    ages = [
        (now.timestamp() - (p.timestamp >> messages.TSO_LOGICAL_BITS) / 1000, v)
        for v, c in meta.vchannels().items()
        if c is not None and (p := meta.seek_position(v)) is not None and p.timestamp
    ]
    if not ages or configured.value <= 0 or max(ages)[0] <= configured.value * 60:
        return None
    age, vchannel = max(ages)
    return Finding(
        RULE_RETENTION,
        ERROR,
        f"{mq} retention {configured.value} min ({configured.key}) is shorter than "
        f"the age of the oldest channel checkpoint ({vchannel}, {age / 60:.1f} min): messages Milvus needs "
        "to recover it are deleted",
        configured.key,
        configured.file,
        configured.line,
        flush_hint(None) + "; see `mqctl channels checkpoints`",
    )


def check_checkpoints(report: RetentionReport, meta: ChannelMeta, configured: ConfiguredRetention) -> None:
    """Add an error to the report when the MQ's age limit is shorter than the oldest live checkpoint's age (Kafka:
    each topic's retention.ms against the checkpoints on it)."""
    if report.mq == BACKENDS["kafka"].name:
        for finding in topic_retention_against_checkpoints(report, meta, clock.now()):
            report.findings.append(finding)
            report.finding_groups.append(FindingGroup.of(finding, []))
        return
    key = NATS_KEYS["max_age"] if report.mq == BACKENDS["natsmq"].name else ROCKS_TIME_KEY
    found = retention_against_checkpoints(meta, configured.get(key), report.mq)
    if found:
        report.findings.append(found)
        report.finding_groups.append(FindingGroup.of(found, []))


def topic_retention_against_checkpoints(report: RetentionReport, meta: ChannelMeta, now: dt.datetime) -> list[Finding]:
    """Kafka: an error per topic whose own retention.ms (the report's `retention_ms`) is shorter than the age of the
    oldest channel checkpoint of a live vchannel on it: the broker deletes what Milvus needs to recover it."""
    from mqctl.mq.checkpoints import live_checkpoints

    retention = {r.name: r.actual["retention_ms"] for r in report.channels}
    oldest: dict[str, tuple[float, str]] = {}
    for checkpoint in live_checkpoints(meta):
        if checkpoint.pchannel not in retention or not checkpoint.ts:
            continue
        age = now.timestamp() - (checkpoint.ts >> messages.TSO_LOGICAL_BITS) / 1000
        if age > oldest.get(checkpoint.pchannel, (-1.0, ""))[0]:
            oldest[checkpoint.pchannel] = (age, checkpoint.vchannel)
    found = []
    for topic, (age, vchannel) in sorted(oldest.items()):
        limit = retention[topic]
        if limit > 0 and age * 1000 > limit:
            found.append(
                Finding(
                    RULE_RETENTION,
                    ERROR,
                    f"topic {topic}: retention.ms {limit} ({limit / 60000:.1f} min) is shorter than the age of the "
                    f"oldest channel checkpoint ({vchannel}, {age / 60:.1f} min): messages Milvus needs to recover "
                    "it are deleted",
                    topic,
                    hint=flush_hint(None) + "; see `mqctl channels checkpoints --kafka`",
                )
            )
    return found
