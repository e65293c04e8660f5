"""The doctor's report as Prometheus metrics: one list of families built from the reports the checks judged
(`Report.measured`), rendered by `prometheus_client` both for `mqctl doctor --format prometheus` (a textfile for
node_exporter's textfile collector) and for `mqctl exporter`'s /metrics. Nothing here reads a source: a number
that the doctor did not read is not exported (and its source's `mqctl_source_up` says why).

Each family is built by one small function from one part of the report, so a new source (Kafka) plugs in by
adding its part to `Measured` and one function to FAMILY_BUILDERS. Names and labels are a contract (dashboards
and alert rules rely on them; docs/monitoring.md lists them).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mqctl import clock
from mqctl.doctor.verdict import OK, Report

if TYPE_CHECKING:
    from prometheus_client.registry import Collector

MiB = 1 << 20
GAUGE, COUNTER = "gauge", "counter"


@dataclass
class Family:
    """One metric family: its name, help, label names and one value per label set."""

    name: str
    help: str
    labels: tuple[str, ...]
    samples: list[tuple[tuple[str, ...], float]] = field(default_factory=list)
    kind: str = GAUGE  # a counter's name has no _total: the exposition adds it

    def add(self, value: float | int | None, *labels: str | None) -> None:
        """A sample; a value the report does not know (None) is left out, never exported as 0."""
        if value is None:
            return
        self.samples.append((tuple(label or "" for label in labels), float(value)))


def _families() -> dict[str, Family]:
    specs = [
        ("mqctl_source_up", "1 when the source was read in the last examination, 0 when it failed", ("source",)),
        ("mqctl_channel_messages", "Messages stored in the channel", ("mq", "channel")),
        ("mqctl_channel_bytes", "Bytes stored in the channel", ("mq", "channel")),
        ("mqctl_channel_oldest_age_seconds", "Age of the channel's oldest message (its Milvus TSO)", ("mq", "channel")),
        ("mqctl_channel_newest_age_seconds", "Age of the channel's newest message (its Milvus TSO)", ("mq", "channel")),
        (
            "mqctl_channel_retention_max_age_seconds",
            "Age limit of the channel (natsmq: the stream's MaxAge; rocksmq: retentionTimeInMinutes); 0 none",
            ("mq", "channel"),
        ),
        (
            "mqctl_channel_retention_max_bytes",
            "Size limit of the channel (natsmq: the stream's MaxBytes; rocksmq: retentionSizeInMB); -1/0 none",
            ("mq", "channel"),
        ),
        (
            "mqctl_checkpoint_lag_messages",
            "Messages of the vchannel stored after its channel checkpoint (not flushed)",
            ("mq", "vchannel", "pchannel", "collection"),
        ),
        (
            "mqctl_checkpoint_lag_seconds",
            "Newest message of the pchannel minus the vchannel's checkpoint time (2.6 WAL: now minus the checkpoint)",
            ("mq", "vchannel", "pchannel", "collection"),
        ),
        (
            "mqctl_retention_headroom_seconds",
            "Seconds until the channel's age limit passes the oldest unflushed message after the checkpoint; "
            "at most -1 once the checkpoint expired (rows at risk); +Inf without an age limit",
            ("mq", "vchannel", "pchannel", "collection"),
        ),
        ("mqctl_wal_disk_used_bytes", "Bytes in the MQ's folder", ("mq", "path")),
        ("mqctl_wal_disk_free_bytes", "Free bytes of the volume holding the MQ's folder", ("mq", "path")),
        (
            "mqctl_wal_disk_limit_bytes",
            "The MQ's configured size cap (rocksmq.retentionSizeInMB, natsmq.server.maxFileStore)",
            ("mq", "path"),
        ),
        (
            "mqctl_writes_denied",
            "1 when writes are refused: by forceDeny in the config (with quotas enabled), or by the proxy now",
            ("source",),
        ),
        (
            "mqctl_woodpecker_truncation_lag_seconds",
            "Seconds since the oldest Woodpecker segment wholly before the WAL checkpoint closed, still not "
            "truncated (0 when none)",
            ("pchannel",),
        ),
        (
            "mqctl_woodpecker_untruncated_bytes",
            "Bytes of Woodpecker segments wholly before the WAL checkpoint, still not truncated",
            ("pchannel",),
        ),
        (
            "mqctl_woodpecker_untruncated_segments",
            "Woodpecker segments wholly before the WAL checkpoint, still not truncated",
            ("pchannel",),
        ),
        ("mqctl_doctor_findings", "Checks of the last examination per code and severity", ("code", "severity")),
        ("mqctl_doctor_verdict", "1 for the verdict of the last examination (ok, warning, error)", ("verdict",)),
        ("mqctl_scrape_duration_seconds", "Seconds the last examination took (every source read)", ()),
    ]
    return {name: Family(name, text, labels) for name, text, labels in specs}


def families(report: Report, now: dt.datetime | None = None) -> list[Family]:
    """Every family the report has numbers for; families without a sample are still listed (HELP/TYPE)."""
    now = now or clock.now()
    found = _families()
    for build in FAMILY_BUILDERS:
        build(report, found, now)
    return list(found.values())


def _sources(report: Report, found: dict[str, Family], now: dt.datetime) -> None:
    for read in report.measured.sources:
        found["mqctl_source_up"].add(int(read.up), read.source)


def _channels(report: Report, found: dict[str, Family], now: dt.datetime) -> None:
    retention = report.measured.retention
    if retention is None:
        return
    mq = retention.mq
    for row in retention.channels:
        actual, configured = row.actual, row.configured
        found["mqctl_channel_messages"].add(actual.get("messages"), mq, row.name)
        found["mqctl_channel_bytes"].add(actual.get("bytes"), mq, row.name)
        found["mqctl_channel_oldest_age_seconds"].add(actual.get("oldest_message_age_seconds"), mq, row.name)
        found["mqctl_channel_newest_age_seconds"].add(actual.get("newest_message_age_seconds"), mq, row.name)
        if "max_age" in actual:  # natsmq: the stream's own limits
            found["mqctl_channel_retention_max_age_seconds"].add(actual.get("max_age"), mq, row.name)
            found["mqctl_channel_retention_max_bytes"].add(actual.get("max_bytes"), mq, row.name)
        else:  # rocksmq: one retention for every topic, from the config
            minutes, megabytes = configured.get("retention_time_minutes"), configured.get("retention_size_mb")
            found["mqctl_channel_retention_max_age_seconds"].add(
                None if minutes is None else max(minutes, 0) * 60, mq, row.name
            )
            found["mqctl_channel_retention_max_bytes"].add(
                None if megabytes is None else (megabytes * MiB if megabytes > 0 else -1), mq, row.name
            )


def headroom_seconds(
    retention_seconds: float | None,
    unflushed_since: dt.datetime | None,
    checkpoint_time: dt.datetime | None,
    expired: bool,
    now: dt.datetime,
) -> float | None:
    """Seconds until the age limit deletes the first message Milvus still needs (the oldest after the checkpoint):
    the full window when nothing waits; at most -1 once the checkpoint expired; +Inf without an age limit."""
    if retention_seconds is None:
        return None
    if retention_seconds <= 0:
        return -1.0 if expired else math.inf
    oldest = unflushed_since if unflushed_since is not None else (checkpoint_time if expired else None)
    left = retention_seconds - (now - oldest).total_seconds() if oldest is not None else float(retention_seconds)
    return min(left, -1.0) if expired else round(left, 3)


def _checkpoints(report: Report, found: dict[str, Family], now: dt.datetime) -> None:
    from mqctl.mq.checkpoints import EXPIRED

    checkpoints = report.measured.checkpoints
    if checkpoints is None:
        return
    mq = report.measured.mq or ""
    for row in checkpoints.checkpoints:
        labels = (mq, row.vchannel, row.pchannel, row.collection)
        found["mqctl_checkpoint_lag_messages"].add(row.lag_messages, *labels)
        found["mqctl_checkpoint_lag_seconds"].add(row.lag_seconds, *labels)
        if row.lag_messages is None and row.status != EXPIRED:
            continue  # not judged (no position, no such pchannel, dropped): no headroom to tell
        found["mqctl_retention_headroom_seconds"].add(
            headroom_seconds(
                row.retention_seconds, row.unflushed_since, row.checkpoint_time, row.status == EXPIRED, now
            ),
            *labels,
        )


def _wal_state(report: Report, found: dict[str, Family], now: dt.datetime) -> None:
    """Milvus 2.6: each vchannel's checkpoint on the WAL, and Woodpecker's truncation behind it."""
    streaming = report.measured.streaming
    if streaming is None:
        return
    for vchannel in streaming.vchannels:
        if vchannel.checkpoint_time is None or vchannel.state == "dropped":
            continue
        lag = max((now - vchannel.checkpoint_time).total_seconds(), 0.0)
        labels = (vchannel.wal or streaming.pinned_mq, vchannel.vchannel, vchannel.pchannel, vchannel.collection)
        found["mqctl_checkpoint_lag_seconds"].add(round(lag, 3), *labels)
    for pchannel in streaming.pchannels:
        if pchannel.log_id is None:
            continue  # not on Woodpecker
        closed = pchannel.oldest_untruncated_closed
        behind = max((now - closed).total_seconds(), 0.0) if closed is not None else 0.0
        found["mqctl_woodpecker_truncation_lag_seconds"].add(round(behind, 3), pchannel.pchannel)
        found["mqctl_woodpecker_untruncated_bytes"].add(pchannel.untruncated_bytes, pchannel.pchannel)
        found["mqctl_woodpecker_untruncated_segments"].add(pchannel.untruncated_before_checkpoint, pchannel.pchannel)


def _disk(report: Report, found: dict[str, Family], now: dt.datetime) -> None:
    disk = report.measured.disk
    if disk is None:
        return
    mq = report.measured.mq or ""
    found["mqctl_wal_disk_used_bytes"].add(disk.used_bytes, mq, disk.folder)
    found["mqctl_wal_disk_free_bytes"].add(disk.free_bytes, mq, disk.folder)
    found["mqctl_wal_disk_limit_bytes"].add(disk.limit_bytes, mq, disk.folder)


def _writes(report: Report, found: dict[str, Family], now: dt.datetime) -> None:
    measured = report.measured
    if measured.force_deny is not None:
        found["mqctl_writes_denied"].add(int(measured.force_deny), "config")
    if measured.quota is not None and measured.quota.healthy:
        found["mqctl_writes_denied"].add(int("DenyToWrite" in measured.quota.states), "quota")


def _findings(report: Report, found: dict[str, Family], now: dt.datetime) -> None:
    counts: dict[tuple[str, str], int] = {}
    for check in report.checks:
        counts[(check.code, check.severity)] = counts.get((check.code, check.severity), 0) + 1
    for (code, severity), count in sorted(counts.items()):
        found["mqctl_doctor_findings"].add(count, code, severity)
    for verdict in (OK, "warning", "error"):
        found["mqctl_doctor_verdict"].add(int(report.verdict == verdict), verdict)
    found["mqctl_scrape_duration_seconds"].add(report.seconds)


FAMILY_BUILDERS: tuple[Callable[[Report, dict[str, Family], dt.datetime], None], ...] = (
    _sources,
    _channels,
    _checkpoints,
    _wal_state,
    _disk,
    _writes,
    _findings,
)


class FamiliesCollector:
    """A prometheus_client collector over families built elsewhere (the exporter's cache, a doctor report)."""

    def __init__(self, produce: Callable[[], Iterable[Family]]) -> None:
        self.produce = produce

    def collect(self) -> Iterable[object]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        for family in self.produce():
            kind = CounterMetricFamily if family.kind == COUNTER else GaugeMetricFamily
            metric = kind(family.name, family.help, labels=list(family.labels))
            for labels, value in family.samples:
                metric.add_metric(list(labels), value)
            yield metric


def exposition(produced: Iterable[Family]) -> str:
    """The Prometheus text format of the families (what node_exporter's textfile collector reads)."""
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    chosen = list(produced)
    collector: Collector = FamiliesCollector(lambda: chosen)  # type: ignore[assignment]
    registry.register(collector)
    return generate_latest(registry).decode("utf-8")
