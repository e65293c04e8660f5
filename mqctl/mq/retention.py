"""Configured vs actual retention of Milvus's embedded MQs: drift, purge blockages, and the plan to fix drift.

natsmq: Milvus creates each stream with `MaxAge/MaxBytes/MaxMsgs` from `natsmq.server.retention.*` and never
updates it; JetStream then rejects Milvus's AddStream with error 10058 when the stream's limits differ
(facts §3), so Milvus cannot start its producers. rocksmq: retention deletes acked pages older than
`retentionTimeInMinutes` or beyond `retentionSizeInMB`; unacked pages are never purged (#24106, #16606, #19574).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import difflib
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

from mqctl.errors import InputError, MqctlError, PreconditionError
from mqctl.findings import ERROR, WARNING, Finding
from mqctl.mq.jetstream_reads import NANOS

NATS_KEYS = {
    "max_age": "natsmq.server.retention.maxAge",
    "max_bytes": "natsmq.server.retention.maxBytes",
    "max_msgs": "natsmq.server.retention.maxMsgs",
}
ROCKS_TIME_KEY = "rocksmq.retentionTimeInMinutes"
ROCKS_SIZE_KEY = "rocksmq.retentionSizeInMB"
UNLIMITED = -1
INT64_MAX = (1 << 63) - 1  # JetStream's limits are Go int64 (max_age in nanoseconds)
MAX_MINUTES = int(dt.timedelta.max.total_seconds() // 60)

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
        from mqctl.backends import go_parse_int
        from mqctl.config.schema import spec_for

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
    check_64_bits(configured["max_age"], 60 * NANOS, "minutes (JetStream keeps max_age in nanoseconds)")
    check_64_bits(configured["max_bytes"], 1, "bytes")
    check_64_bits(configured["max_msgs"], 1, "messages")
    age_minutes = configured["max_age"].value
    return {
        "max_age": max(age_minutes, 0) * 60,
        "max_bytes": configured["max_bytes"].value if configured["max_bytes"].value > 0 else UNLIMITED,
        "max_msgs": configured["max_msgs"].value if configured["max_msgs"].value > 0 else UNLIMITED,
    }


def check_64_bits(value: ConfiguredValue, scale: int, unit: str) -> None:
    """Exit 2 at the key's file:line when value * scale overflows the signed 64 bits Go computes it in (a
    JetStream limit would be refused with error 10025; RocksMQ's retention check would wrap around)."""
    if value.value * scale > INT64_MAX:
        raise InputError(
            f"{value.key} {value.raw} is too large: at most {INT64_MAX // scale} {unit} (64 bits)",
            location=f"{value.file}:{value.line}" if value.file else None,
            hint="use 0 (or leave it empty) for no limit",
        )


def _age_seconds(first_time: dt.datetime | None, now: dt.datetime) -> float | None:
    return round((now - first_time).total_seconds(), 3) if first_time else None


@dataclass
class ChannelRetention:
    name: str
    configured: dict
    actual: dict
    findings: list[Finding] = field(default_factory=list)
    _causes: list[str] = field(default_factory=list)  # per finding: its message without this channel's own numbers

    def add(self, finding: Finding, cause: str) -> None:
        self.findings.append(finding)
        self._causes.append(cause)


@dataclass
class FindingGroup:
    """One cause shared by several channels (one table row for 17 streams); every channel is named."""

    code: str
    severity: str
    message: str  # the cause, without a channel name
    key: str | None
    file: str | None
    line: int | None
    hint: str | None
    channels: list[str]


def group_findings(rows: list[ChannelRetention]) -> list[FindingGroup]:
    groups: dict[tuple, FindingGroup] = {}
    for row in rows:
        for finding, cause in zip(row.findings, row._causes, strict=True):
            index = (finding.code, finding.key, finding.file, finding.line, cause, finding.hint)
            group = groups.setdefault(
                index,
                FindingGroup(
                    finding.code, finding.severity, cause, finding.key, finding.file, finding.line, finding.hint, []
                ),
            )
            group.channels.append(row.name)
    return list(groups.values())


@dataclass
class RetentionReport:
    source: str
    mq: str
    channels: list[ChannelRetention]
    findings: list[Finding]  # one per channel and cause
    warnings: list[str] = field(default_factory=list)  # data and metadata disagree: the numbers are not the MQ's
    finding_groups: list[FindingGroup] = field(default_factory=list)  # the findings, one per cause


def _finding(code: str, severity: str, message: str, value: ConfiguredValue, hint: str) -> Finding:
    return Finding(code, severity, message, value.key, value.file, value.line, hint)


# natsmq -----------------------------------------------------------------------------------------
def nats_report(source, configured: ConfiguredRetention, now: dt.datetime) -> RetentionReport:
    limits = configured.nats_limits()
    wanted = stream_limits_from_config(limits)
    channels = {c.name: c for c in source.list_channels()}
    rows = []
    for stream in source.stream_details():
        actual = {
            "max_age": stream.max_age_seconds,
            "max_bytes": stream.max_bytes,
            "max_msgs": stream.max_msgs,
            "messages": stream.messages,
            "bytes": stream.bytes,
            "oldest_message_age_seconds": _age_seconds(channels[stream.name].first_time, now)
            if stream.name in channels
            else None,
        }
        row = ChannelRetention(
            stream.name,
            {
                **wanted,
                "keys": {v.key: v.raw for v in limits.values()},
                "from": sorted({v.where for v in limits.values()}),
            },
            actual,
        )
        for limit, want in wanted.items():
            have = actual[limit]
            if have != want:
                cause = (
                    f"{limit} is {show_limit(limit, have)} but the config gives {show_limit(limit, want)}; "
                    f"Milvus's AddStream fails with JetStream error 10058 and its producers do not start"
                )
                row.add(
                    _finding(
                        RULE_DRIFT,
                        ERROR,
                        f"stream {stream.name}: {cause}",
                        limits[limit],
                        "run `mqctl retention apply` to set the streams to the config, or change the config to match",
                    ),
                    cause,
                )
        rows.append(row)
    return RetentionReport(source.description, "natsmq", rows, [f for r in rows for f in r.findings])


def show_limit(limit: str, value: float | int) -> str:
    """A stream limit for people: max_age in minutes (as Milvus configures it), "unlimited" for 0/-1."""
    if value in (UNLIMITED, 0):
        return "unlimited"
    if limit in ("max_age", "duplicate_window"):
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
    # beyond Python's timedelta (2.7 million years) nothing ever gets old enough
    limit_age = dt.timedelta(minutes=retention_minutes) if 0 < retention_minutes <= MAX_MINUTES else None
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
    blocked = [
        p for p in unacked if limit_age is not None and p.closed_at is not None and now - p.closed_at > limit_age
    ]
    return PagePurge(purgeable, blocked, unacked)


def rocksmq_report(source, configured: ConfiguredRetention, now: dt.datetime) -> RetentionReport:
    time_value, size_value = configured.get(ROCKS_TIME_KEY), configured.get(ROCKS_SIZE_KEY)
    check_64_bits(time_value, 60, "minutes (Milvus compares it in seconds)")
    check_64_bits(size_value, 1024 * 1024, "MB (Milvus compares it in bytes)")
    conf = {
        "retention_time_minutes": time_value.value,
        "retention_size_mb": size_value.value,
        "keys": {time_value.key: time_value.raw, size_value.key: size_value.raw},
        "from": sorted({time_value.where, size_value.where}),
    }
    meta = source.topic_meta()
    rows = []
    for channel in source.list_channels():
        topic = meta.get(channel.name)
        pages = topic.pages if topic else []
        purge = rocksmq_purge(pages, retention_minutes=time_value.value, retention_mb=size_value.value, now=now)
        actual = {
            "messages": channel.messages,
            "bytes": channel.bytes,
            "pages": len(pages),
            "acked_pages": sum(p.acked for p in pages),
            "purgeable_pages": len(purge.purgeable),
            "reclaimable_bytes": sum(p.size for p in purge.purgeable),
            "unacked_pages": len(purge.unacked),
            "unacked_bytes": sum(p.size for p in purge.unacked),
            "never_purged_pages": len(purge.blocked),
            "open_page_bytes": topic.open_page_size if topic else 0,
            "oldest_message_age_seconds": _age_seconds(channel.first_time, now),
        }
        row = ChannelRetention(channel.name, conf, actual)
        if purge.blocked:
            cause = (
                f"unacked pages closed more than {time_value.value} min ago: RocksMQ purges only acked pages, so "
                f"these are never removed (#24106)"
            )
            row.add(
                _finding(
                    RULE_BLOCKED,
                    WARNING,
                    f"topic {channel.name}: {len(purge.blocked)} unacked page(s), {actual['unacked_bytes']} bytes, closed more "
                    f"than {time_value.value} min ago: RocksMQ purges only acked pages, so these are never removed (#24106)",
                    time_value,
                    "a consumer group stopped reading this topic (e.g. a collection released or dropped while "
                    "loaded); once every group reads past the pages they are purged",
                ),
                cause,
            )
        rows.append(row)
    return RetentionReport(source.description, "rocksmq", rows, [f for r in rows for f in r.findings])


def retention_report(source, configured: ConfiguredRetention, now: dt.datetime | None = None) -> RetentionReport:
    from mqctl.mq.channels import data_warnings
    from mqctl.mq.rocksmq import RocksMQSource

    now = now or dt.datetime.now(dt.timezone.utc)
    report = (rocksmq_report if isinstance(source, RocksMQSource) else nats_report)(source, configured, now)
    report.warnings = data_warnings(source)
    report.finding_groups = group_findings(report.channels)
    return report


# apply (natsmq) ------------------------------------------------------------------------------------
@dataclass
class LimitChange:
    stream: str
    limit: str  # max_age, max_bytes, max_msgs, or duplicate_window (capped at max_age as nats-server does on create)
    actual: float | int
    wanted: float | int


@dataclass
class ApplyPlan:
    source: str
    wanted: dict
    changes: list[LimitChange]
    streams: list[str]
    losses: list[str] = field(default_factory=list)  # messages the new limits delete as soon as they apply
    _configs: dict = field(default_factory=dict)  # stream -> (config now, whole new config)
    # what the new limits delete, per stream: (first sequence before, first sequence kept after) where known
    # (rehearsed, or max_msgs on a live server), else the max_age cutoff time (a live server's estimate)
    kept_from: dict[str, tuple[int, int]] = field(default_factory=dict)
    age_cutoff: dict[str, dt.datetime] = field(default_factory=dict)

    def targets(self) -> set[tuple]:
        return {(c.stream, c.limit, c.wanted) for c in self.changes}


def limits_diff(changes: list[LimitChange]) -> str:
    """A per-stream unified diff of the limits (actual -> configured)."""
    text: list[str] = []
    by_stream: dict[str, list[LimitChange]] = {}
    for change in changes:
        by_stream.setdefault(change.stream, []).append(change)
    for stream, changed in by_stream.items():
        before = [f"{c.limit}: {show_limit(c.limit, c.actual)}\n" for c in changed]
        after = [f"{c.limit}: {show_limit(c.limit, c.wanted)}\n" for c in changed]
        text += difflib.unified_diff(before, after, f"stream {stream} (now)", f"stream {stream} (configured)")
    return "".join(text)


def _stream_targets(stream, wanted: dict) -> dict:
    """The limits a stream must hold: the configured ones, and a duplicates window no longer than max_age
    (JetStream refuses an update otherwise, error 10052; nats-server caps it the same way on create)."""
    window = stream.duplicate_window_seconds
    if wanted["max_age"] > 0 and window > wanted["max_age"]:
        window = wanted["max_age"]
    return {**wanted, "duplicate_window": window}


def plan_apply(source, wanted: dict) -> ApplyPlan:
    """The whole new config of every stream that must change to hold `wanted` (see stream_limits_from_config),
    computed and checked before anything is sent."""
    changes, streams, losses, configs = [], [], [], {}
    kept_from: dict[str, tuple[int, int]] = {}
    age_cutoff: dict[str, dt.datetime] = {}
    now = dt.datetime.now(dt.timezone.utc)
    for stream in source.stream_details():
        streams.append(stream.name)
        actual = {
            "max_age": stream.max_age_seconds,
            "max_bytes": stream.max_bytes,
            "max_msgs": stream.max_msgs,
            "duplicate_window": stream.duplicate_window_seconds,
        }
        targets = _stream_targets(stream, wanted)
        changed = [
            LimitChange(stream.name, limit, actual[limit], want)
            for limit, want in targets.items()
            if actual[limit] != want
        ]
        if not changed:
            continue
        changes += changed
        losses += _losses(stream, {c.limit for c in changed}, wanted, now)
        _estimate_cut(stream, {c.limit for c in changed}, wanted, now, kept_from, age_cutoff)
        before = source.stream_config(stream.name)
        after = {
            **before,
            "max_age": int(targets["max_age"] * NANOS),
            "max_bytes": targets["max_bytes"],
            "max_msgs": targets["max_msgs"],
            "duplicate_window": int(targets["duplicate_window"] * NANOS),
        }
        configs[stream.name] = (before, after)
    problems: dict[str, list[str]] = {}
    for name, (_, after) in configs.items():
        for problem in _config_problems(after):
            problems.setdefault(problem, []).append(name)
    if problems:
        listed = "; ".join(f"{problem} (stream {', '.join(names)})" for problem, names in problems.items())
        raise InputError(
            f"the configured retention cannot be applied: {listed}",
            hint="fix natsmq.server.retention.* in the config; nothing was changed",
        )
    return ApplyPlan(source.description, wanted, changes, streams, losses, configs, kept_from, age_cutoff)


def _estimate_cut(stream, changed: set[str], wanted: dict, now: dt.datetime, kept_from: dict, age_cutoff: dict) -> None:
    """Where the new limits cut a live stream: max_msgs by sequence, max_age by time (max_bytes cannot be
    told without reading every message; a --nats-store is rehearsed instead, which is exact)."""
    if "max_msgs" in changed and 0 < wanted["max_msgs"] < stream.messages:
        kept_from[stream.name] = (stream.first_seq, stream.last_seq - wanted["max_msgs"] + 1)
    if "max_age" in changed and wanted["max_age"] > 0 and stream.messages and stream.first_time is not None:
        cutoff = now - dt.timedelta(seconds=wanted["max_age"])
        if stream.first_time < cutoff:
            age_cutoff[stream.name] = cutoff


def checkpoint_losses(plan: ApplyPlan, checkpoints: list) -> list[str]:
    """The vchannels whose messages after the checkpoint the plan deletes: Milvus seeks there at its next
    start and silently misses them. `checkpoints`: mqctl.mq.checkpoints.LiveCheckpoint."""
    found = []
    for cp in checkpoints:
        name = f"{cp.database}.{cp.collection}"
        needed = cp.position + 1
        first, kept = plan.kept_from.get(cp.pchannel, (0, 0))
        cutoff = plan.age_cutoff.get(cp.pchannel)
        if kept > max(first, needed):
            found.append(
                f"{name} ({cp.vchannel}): the new limits of stream {cp.pchannel} delete messages "
                f"{max(first, needed)}..{kept - 1}, after its checkpoint {cp.position}"
            )
        elif cutoff is not None and cp.time is not None and cp.time < cutoff:
            found.append(
                f"{name} ({cp.vchannel}): its checkpoint ({cp.time:%Y-%m-%d %H:%M:%S} UTC) is older "
                f"than the new max_age of stream {cp.pchannel}: the messages after it that are older than "
                "max_age are deleted"
            )
    return found


def _guard_checkpoints(plan: ApplyPlan, read_checkpoints, *, force: bool, dry_run: bool) -> None:
    """Refuse a plan that deletes what a vchannel needs after its checkpoint (unless forced); shown either way.
    The checkpoints are read only for a plan that changes something (`read_checkpoints()`: None = not checked)."""
    if read_checkpoints is None or not plan.changes:
        return
    checkpoints = read_checkpoints()
    if checkpoints is None:
        return
    lost = checkpoint_losses(plan, checkpoints)
    plan.losses += lost
    if lost and not force and not dry_run:
        raise PreconditionError(
            f"the new limits delete messages Milvus has not persisted, after the channel checkpoint of "
            f"{len(lost)} vchannel(s): {'; '.join(lost)}; nothing changed",
            hint="run FlushAll and wait until `mqctl channels checkpoints` shows the checkpoints past the deleted "
            "messages, then apply again; or pass --force to delete them anyway",
        )


def _config_problems(config: dict) -> list[str]:
    """What JetStream would refuse in a stream config (checked for every stream before the first update)."""
    problems = []
    if config["max_age"] < 0:
        problems.append("max_age must not be negative")
    if config["max_age"] > 0 and config.get("duplicate_window", 0) > config["max_age"]:
        problems.append("the duplicates window is longer than max_age (JetStream error 10052)")
    for limit in ("max_bytes", "max_msgs"):
        if config[limit] < UNLIMITED:
            problems.append(f"{limit} {config[limit]} is below -1 (unlimited)")
    return problems


def _losses(stream, changed: set[str], wanted: dict, now: dt.datetime) -> list[str]:
    """What JetStream deletes at once when the new limits apply: it enforces them on the stored messages."""
    found = []
    age = wanted["max_age"]
    if "max_age" in changed and age > 0 and stream.messages and stream.first_time is not None:
        oldest = (now - stream.first_time).total_seconds()
        if oldest > age:
            found.append(
                f"stream {stream.name}: max_age {show_limit('max_age', age)} deletes every message older "
                f"than that at once (the oldest is {oldest / 60:,.0f} min old)"
            )
    if "max_bytes" in changed and 0 < wanted["max_bytes"] < stream.bytes:
        found.append(
            f"stream {stream.name}: max_bytes {show_limit('max_bytes', wanted['max_bytes'])} deletes the "
            f"oldest messages at once (it holds {show_limit('max_bytes', stream.bytes)})"
        )
    if "max_msgs" in changed and 0 < wanted["max_msgs"] < stream.messages:
        found.append(
            f"stream {stream.name}: max_msgs {wanted['max_msgs']} deletes the oldest "
            f"{stream.messages - wanted['max_msgs']} message(s) at once"
        )
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
    """Send every stream's new config; when one is refused, put back the streams already changed, so the
    streams either all hold the new limits or all keep the old ones (messages already deleted stay deleted).

    Ctrl-C is held while an update is in flight and acted on between two updates (the changed streams go
    back), so no interrupt can land between an update and its record."""
    done: list[str] = []
    with _interrupts_deferred() as interrupted:
        for stream, (_, after) in sorted(plan._configs.items()):
            if interrupted:
                _restore(source, plan, done)
                raise KeyboardInterrupt
            try:
                source.update_config(stream, after)
            except MqctlError as err:
                unrestored = _restore(source, plan, done)
                restored = (
                    f"put back the {len(done) - len(unrestored)} stream(s) already changed"
                    if done
                    else "no stream was changed"
                )
                if unrestored:
                    restored += f"; could NOT put back {', '.join(unrestored)}"
                raise PreconditionError(
                    f"stream {stream} refused the new limits: {err.message}; {restored}",
                    hint="no stream holds the new limits; fix the cause and run apply again",
                ) from err
            done.append(stream)
    return done


@contextlib.contextmanager
def _interrupts_deferred():
    """Record SIGINT instead of raising it (main thread only; elsewhere signals cannot be handled anyway)."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield received
    finally:
        signal.signal(signal.SIGINT, previous)


def _restore(source, plan: ApplyPlan, streams: list[str]) -> list[str]:
    """Give the streams their old config back; the names of those that refused."""
    failed = []
    for stream in reversed(streams):
        try:
            source.update_config(stream, plan._configs[stream][0])
        except MqctlError:
            failed.append(stream)
    return failed


def verify(source, plan: ApplyPlan) -> list[str]:
    """Limits that still differ from the plan's targets, read back from the server."""
    return [
        f"{c.stream}: {c.limit} is {show_limit(c.limit, c.actual)}" for c in plan_apply(source, plan.wanted).changes
    ]


def apply_retention(
    options,
    wanted: dict,
    *,
    dry_run: bool,
    confirm,
    checkpoints: Callable[[], list | None] | None = None,
    force: bool = False,
) -> ApplyOutcome:
    """Plan, confirm (`confirm(plan)` shows the plan and answers), apply all-or-nothing, verify.

    A --nats-store is planned and rehearsed on a private copy: the copy shows exactly which messages the new
    limits delete and whether nats-server would leave tombstones an older Milvus misreads; the store itself is
    opened only after the change was confirmed. A live --nats server cannot be copied: its losses are estimated.
    `checkpoints()` reads them once the store is open and the plan changes something (None: not checked): the
    plan is refused when it deletes messages after one, unless `force`."""
    from mqctl.mq.natsserver import check_writable, store_root
    from mqctl.mq.sources import open_source

    if options.nats_store is None:
        with open_source(options) as source:
            plan = plan_apply(source, wanted)
            _guard_checkpoints(plan, checkpoints, force=force, dry_run=dry_run)
            if not plan.changes or dry_run:
                return ApplyOutcome(plan.source, dry_run, plan.changes, [], None, losses=plan.losses)
            _confirmed(confirm, plan)
            applied = apply_plan(source, plan)
            mismatches = verify(source, plan)
        return ApplyOutcome(plan.source, False, plan.changes, applied, not mismatches, mismatches, losses=plan.losses)

    plan = rehearse(options, wanted)
    _guard_checkpoints(plan, checkpoints, force=force, dry_run=dry_run)
    if not plan.changes or dry_run:
        return ApplyOutcome(plan.source, dry_run, plan.changes, [], None, losses=plan.losses)
    check_writable(store_root(options.nats_store))
    _confirmed(confirm, plan)
    with open_source(options, writable_store=True) as source:
        fresh = plan_apply(source, wanted)
        if fresh.targets() != plan.targets():
            raise PreconditionError(
                f"{plan.source} changed since it was planned; nothing applied",
                hint="run apply again to plan from the store as it is now",
            )
        applied = apply_plan(source, fresh)
        mismatches = verify(source, fresh)
    if not mismatches:
        with open_source(options) as reopened:  # the limits survive a restart of the store
            mismatches = verify(reopened, fresh)
    return ApplyOutcome(plan.source, False, plan.changes, applied, not mismatches, mismatches, losses=plan.losses)


def _confirmed(confirm, plan: ApplyPlan) -> None:
    if not confirm(plan):
        raise PreconditionError("not confirmed; nothing changed")


def rehearse(options, wanted: dict) -> ApplyPlan:
    """The plan for a --nats-store, applied to a private copy first; its losses are what the copy lost."""
    from pathlib import Path

    from mqctl.mq.channels import data_warnings
    from mqctl.mq.jetstream import JetStreamSource
    from mqctl.mq.natsserver import store_root
    from mqctl.mq.natsstore import read_store, written_by_nats_29
    from mqctl.mq.sources import open_source, store_copy

    root = store_root(options.nats_store)
    with store_copy(options) as copy:
        with open_source(copy, writable_store=True) as opened:
            source = cast(JetStreamSource, opened)
            source.description = f"nats-store:{Path(options.nats_store).expanduser()}"
            source.store = root  # checked against the store's own files, not the copy the server changes
            damage = data_warnings(source)
            if damage:
                raise PreconditionError(
                    f"the store's data and metadata disagree ({'; '.join(damage)}); nothing changed",
                    hint="see `mqctl channels list --nats-store DIR`; restore the "
                    "store from a backup before changing its limits",
                )
            plan = plan_apply(source, wanted)
            if not plan.changes:
                return plan
            first_before = {d.name: d.first_seq for d in source.stream_details()}
            before = {d.name: d.messages for d in source.stream_details()}
            try:
                apply_plan(source, plan)
            except PreconditionError as err:
                raise PreconditionError(
                    f"{err.message} (rehearsed on a copy: the store is unchanged)", hint=err.hint
                ) from err
            details = source.stream_details()
            after = {d.name: d.messages for d in details}
            plan.kept_from = {
                d.name: (first_before[d.name], d.first_seq)
                for d in details
                if d.name in first_before and d.first_seq > first_before[d.name]
            }
            plan.age_cutoff = {}  # the copy shows exactly where each stream was cut
        tombstoned = sorted(
            name for name, stream in read_store(store_root(copy.nats_store)).items() if stream.tombstones
        )
    plan.losses = [
        f"stream {name}: the new limits delete {before[name] - after.get(name, 0)} of its {before[name]} "
        f"message(s) at once (rehearsed on a copy of the store)"
        for name in before
        if after.get(name, 0) < before[name]
    ]
    if tombstoned and not written_by_nats_29(root):  # also after an earlier apply rewrote a 2.9 store's index
        plan.losses.append(
            f"stream(s) {', '.join(tombstoned)} end up empty: nats-server keeps each one's last "
            f"sequence in a tombstone that Milvus 2.3 (nats-server 2.9.17) would read as a message with "
            f"sequence 2^62+N; fine for Milvus 2.4/2.5"
        )
    elif tombstoned:
        raise PreconditionError(
            f"the new limits empty stream(s) {', '.join(tombstoned)}: mqctl's nats-server then keeps each "
            f"stream's last sequence in a delete tombstone, which the nats-server 2.9 that wrote this store "
            f"(Milvus 2.3) reads as a message with sequence 2^62+N; nothing changed",
            hint="raise natsmq.server.retention.maxAge/maxMsgs/maxBytes so every stream keeps a message, or start "
            "Milvus with its old config and run apply against its own server (--nats URL --force)",
        )
    return plan
