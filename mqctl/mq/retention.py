"""Configured vs actual retention of Milvus's embedded MQs: drift, purge blockages, and the plan to fix drift.

natsmq: Milvus creates each stream with `MaxAge/MaxBytes/MaxMsgs` from `natsmq.server.retention.*` and never
updates it; JetStream then rejects Milvus's AddStream with error 10058 when the stream's limits differ
(facts §3), so Milvus cannot start its producers. rocksmq: retention deletes acked pages older than
`retentionTimeInMinutes` or beyond `retentionSizeInMB`; unacked pages are never purged (#24106, #16606, #19574).
"""

from __future__ import annotations

import datetime as dt
import difflib
from dataclasses import dataclass, field

from mqctl.config.rules import ERROR, WARNING, Finding

NATS_KEYS = {"max_age": "natsmq.server.retention.maxAge", "max_bytes": "natsmq.server.retention.maxBytes",
             "max_msgs": "natsmq.server.retention.maxMsgs"}
ROCKS_TIME_KEY = "rocksmq.retentionTimeInMinutes"
ROCKS_SIZE_KEY = "rocksmq.retentionSizeInMB"
UNLIMITED = -1

RULE_DRIFT = "RET100"  # stream limits differ from the configured retention -> JetStream error 10058
RULE_BLOCKED = "RET101"  # unacked pages older than the retention time: never purged (#24106)


@dataclass
class ConfiguredValue:
    key: str
    raw: str | None  # as written (None: not set)
    value: int  # as Milvus parses it: unparsable or empty -> 0 (facts §2)
    where: str  # file:line, env/etcd, or "Milvus default"
    file: str | None = None
    line: int | None = None


class ConfiguredRetention:
    """The retention settings a deployment asks for, from its resolved config or Milvus's defaults."""

    def __init__(self, resolution=None):
        self.resolution = resolution

    def get(self, key: str) -> ConfiguredValue:
        from mqctl.config.schema import go_parse_int, spec_for

        if self.resolution is None:
            raw = spec_for(key).default_for(None) or None
            return ConfiguredValue(key, raw, go_parse_int(raw) or 0, "Milvus default (no --config)")
        origin = self.resolution.origin(key)
        raw = origin.value if origin.value not in ("", None) else None
        return ConfiguredValue(key, raw, go_parse_int(raw) or 0, self.resolution.where(key), origin.file, origin.line)

    def nats_limits(self) -> dict[str, ConfiguredValue]:
        return {limit: self.get(key) for limit, key in NATS_KEYS.items()}


def stream_limits_from_config(configured: dict[str, ConfiguredValue]) -> dict[str, float | int]:
    """What a stream created by Milvus with this config holds: max_age in seconds (0 = none), -1 = unlimited."""
    age_minutes = configured["max_age"].value
    return {"max_age": max(age_minutes, 0) * 60,
            "max_bytes": configured["max_bytes"].value if configured["max_bytes"].value > 0 else UNLIMITED,
            "max_msgs": configured["max_msgs"].value if configured["max_msgs"].value > 0 else UNLIMITED}


def _age_seconds(first_time: dt.datetime | None, now: dt.datetime) -> float | None:
    return round((now - first_time).total_seconds(), 3) if first_time else None


@dataclass
class ChannelRetention:
    name: str
    configured: dict
    actual: dict
    findings: list[Finding] = field(default_factory=list)


@dataclass
class RetentionReport:
    source: str
    mq: str
    channels: list[ChannelRetention]
    findings: list[Finding]


def _finding(code: str, severity: str, message: str, value: ConfiguredValue, hint: str) -> Finding:
    return Finding(code, severity, message, value.key, value.file, value.line, hint)


# natsmq -----------------------------------------------------------------------------------------
def nats_report(source, configured: ConfiguredRetention, now: dt.datetime) -> RetentionReport:
    limits = configured.nats_limits()
    wanted = stream_limits_from_config(limits)
    channels = {c.name: c for c in source.list_channels()}
    rows = []
    for stream in source.stream_details():
        actual = {"max_age": stream.max_age_seconds, "max_bytes": stream.max_bytes, "max_msgs": stream.max_msgs,
                  "messages": stream.messages, "bytes": stream.bytes,
                  "oldest_message_age_seconds": _age_seconds(channels[stream.name].first_time, now)
                  if stream.name in channels else None}
        row = ChannelRetention(stream.name, {**wanted, "keys": {v.key: v.raw for v in limits.values()},
                                             "from": sorted({v.where for v in limits.values()})}, actual)
        for limit, want in wanted.items():
            have = actual[limit]
            if have != want:
                row.findings.append(_finding(
                    RULE_DRIFT, ERROR,
                    f"stream {stream.name}: {limit} is {show_limit(limit, have)} but the config gives "
                    f"{show_limit(limit, want)}; Milvus's AddStream fails with JetStream error 10058 and its producers "
                    f"do not start", limits[limit],
                    "run `mqctl retention apply` to set the streams to the config, or change the config to match"))
        rows.append(row)
    return RetentionReport(source.description, "natsmq", rows, [f for r in rows for f in r.findings])


def show_limit(limit: str, value: float | int) -> str:
    """A stream limit for people: max_age in minutes (as Milvus configures it), "unlimited" for 0/-1."""
    if value in (UNLIMITED, 0):
        return "unlimited"
    if limit == "max_age":
        return f"{value / 60:g} min" if value % 60 == 0 else f"{value:g} s"
    return str(value)


# rocksmq ----------------------------------------------------------------------------------------
@dataclass
class PagePurge:
    """Which closed pages Milvus's retention removes now, and which it never will."""

    purgeable: list  # RocksPage
    blocked: list  # unacked pages closed longer ago than the retention time
    unacked: list


def rocksmq_purge(pages: list, *, retention_minutes: int, retention_mb: int, now: dt.datetime) -> PagePurge:
    """Milvus's rule: walk pages in id order while they are acked; a page goes when its ack is older than the
    retention time, or while the acked pages left exceed the retention size. The first unacked page stops it."""
    acked_prefix = []
    for page in pages:
        if not page.acked:
            break
        acked_prefix.append(page)
    limit_age = dt.timedelta(minutes=retention_minutes) if retention_minutes > 0 else None
    limit_bytes = retention_mb * 1024 * 1024 if retention_mb > 0 else None
    purgeable = []
    remaining = sum(p.size for p in acked_prefix)
    for page in acked_prefix:
        too_old = limit_age is not None and now - page.acked_at > limit_age
        too_big = limit_bytes is not None and remaining > limit_bytes
        if not (too_old or too_big):
            break
        purgeable.append(page)
        remaining -= page.size
    unacked = [p for p in pages if not p.acked]
    blocked = [p for p in unacked if limit_age is not None and p.closed_at is not None and now - p.closed_at > limit_age]
    return PagePurge(purgeable, blocked, unacked)


def rocksmq_report(source, configured: ConfiguredRetention, now: dt.datetime) -> RetentionReport:
    time_value, size_value = configured.get(ROCKS_TIME_KEY), configured.get(ROCKS_SIZE_KEY)
    conf = {"retention_time_minutes": time_value.value, "retention_size_mb": size_value.value,
            "keys": {time_value.key: time_value.raw, size_value.key: size_value.raw},
            "from": sorted({time_value.where, size_value.where})}
    meta = source.topic_meta()
    rows = []
    for channel in source.list_channels():
        topic = meta.get(channel.name)
        pages = topic.pages if topic else []
        purge = rocksmq_purge(pages, retention_minutes=time_value.value, retention_mb=size_value.value, now=now)
        actual = {"messages": channel.messages, "bytes": channel.bytes, "pages": len(pages),
                  "acked_pages": sum(p.acked for p in pages), "purgeable_pages": len(purge.purgeable),
                  "reclaimable_bytes": sum(p.size for p in purge.purgeable), "unacked_pages": len(purge.unacked),
                  "unacked_bytes": sum(p.size for p in purge.unacked), "never_purged_pages": len(purge.blocked),
                  "open_page_bytes": topic.open_page_size if topic else 0,
                  "oldest_message_age_seconds": _age_seconds(channel.first_time, now)}
        row = ChannelRetention(channel.name, conf, actual)
        if purge.blocked:
            row.findings.append(_finding(
                RULE_BLOCKED, WARNING,
                f"topic {channel.name}: {len(purge.blocked)} unacked page(s), {actual['unacked_bytes']} bytes, closed more "
                f"than {time_value.value} min ago: RocksMQ purges only acked pages, so these are never removed (#24106)",
                time_value, "a consumer group stopped reading this topic (e.g. a collection released or dropped while "
                            "loaded); once every group reads past the pages they are purged"))
        rows.append(row)
    return RetentionReport(source.description, "rocksmq", rows, [f for r in rows for f in r.findings])


def retention_report(source, configured: ConfiguredRetention, now: dt.datetime | None = None) -> RetentionReport:
    from mqctl.mq.rocksmq import RocksMQSource

    now = now or dt.datetime.now(dt.timezone.utc)
    if isinstance(source, RocksMQSource):
        return rocksmq_report(source, configured, now)
    return nats_report(source, configured, now)


# apply (natsmq) ------------------------------------------------------------------------------------
@dataclass
class LimitChange:
    stream: str
    limit: str
    actual: float | int
    wanted: float | int


@dataclass
class ApplyPlan:
    source: str
    wanted: dict
    changes: list[LimitChange]
    streams: list[str]
    losses: list[str] = field(default_factory=list)  # messages the new limits delete as soon as they apply

    def diff(self) -> str:
        """A per-stream unified diff of the limits (actual -> configured)."""
        text = []
        by_stream: dict[str, list[LimitChange]] = {}
        for change in self.changes:
            by_stream.setdefault(change.stream, []).append(change)
        for stream, changes in by_stream.items():
            before = [f"{c.limit}: {show_limit(c.limit, c.actual)}\n" for c in changes]
            after = [f"{c.limit}: {show_limit(c.limit, c.wanted)}\n" for c in changes]
            text += difflib.unified_diff(before, after, f"stream {stream} (now)", f"stream {stream} (configured)")
        return "".join(text)


def plan_apply(source, wanted: dict) -> ApplyPlan:
    """The limit changes that make every stream hold `wanted` (see stream_limits_from_config)."""
    changes, streams, losses = [], [], []
    now = dt.datetime.now(dt.timezone.utc)
    for stream in source.stream_details():
        streams.append(stream.name)
        actual = {"max_age": stream.max_age_seconds, "max_bytes": stream.max_bytes, "max_msgs": stream.max_msgs}
        changed = [LimitChange(stream.name, limit, actual[limit], want) for limit, want in wanted.items()
                   if actual[limit] != want]
        changes += changed
        losses += _losses(stream, {c.limit for c in changed}, wanted, now)
    return ApplyPlan(source.description, wanted, changes, streams, losses)


def _losses(stream, changed: set[str], wanted: dict, now: dt.datetime) -> list[str]:
    """What JetStream deletes at once when the new limits apply: it enforces them on the stored messages."""
    found = []
    age = wanted["max_age"]
    if "max_age" in changed and age > 0 and stream.messages and stream.first_time is not None:
        oldest = (now - stream.first_time).total_seconds()
        if oldest > age:
            found.append(f"stream {stream.name}: max_age {show_limit('max_age', age)} deletes every message older "
                         f"than that at once (the oldest is {oldest / 60:,.0f} min old)")
    if "max_bytes" in changed and 0 < wanted["max_bytes"] < stream.bytes:
        found.append(f"stream {stream.name}: max_bytes {show_limit('max_bytes', wanted['max_bytes'])} deletes the "
                     f"oldest messages at once (it holds {show_limit('max_bytes', stream.bytes)})")
    if "max_msgs" in changed and 0 < wanted["max_msgs"] < stream.messages:
        found.append(f"stream {stream.name}: max_msgs {wanted['max_msgs']} deletes the oldest "
                     f"{stream.messages - wanted['max_msgs']} message(s) at once")
    return found


@dataclass
class ApplyOutcome:
    source: str
    dry_run: bool
    changes: list[LimitChange]
    applied: list[str]  # streams updated
    verified: bool | None  # None: nothing applied
    mismatches: list[str] = field(default_factory=list)
    losses: list[str] = field(default_factory=list)  # see ApplyPlan.losses


def apply_plan(source, plan: ApplyPlan) -> list[str]:
    streams = sorted({c.stream for c in plan.changes})
    for stream in streams:
        source.update_limits(stream, max_age_seconds=plan.wanted["max_age"], max_bytes=plan.wanted["max_bytes"],
                             max_msgs=plan.wanted["max_msgs"])
    return streams


def verify(source, plan: ApplyPlan) -> list[str]:
    """Limits that still differ from the plan's targets, read back from the server."""
    return [f"{c.stream}: {c.limit} is {show_limit(c.limit, c.actual)}" for c in plan_apply(source, plan.wanted).changes]
