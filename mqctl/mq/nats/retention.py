"""NATS JetStream retention: stream limits against the configured `natsmq.server.retention.*`, and the plan
that makes them match (every stream's whole new config, checked before anything is sent, with what the new
limits delete at once).

Milvus creates each stream with `MaxAge/MaxBytes/MaxMsgs` from the config and never updates it
(pkg/mq/msgstream/mqwrapper/nmq/nmq_client.go); JetStream refuses its AddStream with error 10058 once they
differ.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mqctl import clock
from mqctl.errors import InputError
from mqctl.findings import ERROR
from mqctl.mq.model import NANOS
from mqctl.mq.nats.model import StreamDetails, StreamSource
from mqctl.mq.retention import (
    RULE_DRIFT,
    UNLIMITED,
    Limits,
    age_seconds,
    show_limit,
    stream_limits_from_config,
    value_finding,
)
from mqctl.mq.retention_model import ChannelRetention, ConfiguredRetention, RetentionReport

if TYPE_CHECKING:
    from mqctl.mq.checkpoints import LiveCheckpoint

StreamConfig = dict[str, Any]  # a stream's config as the JetStream API holds it


def nats_report(source: StreamSource, configured: ConfiguredRetention, now: dt.datetime) -> RetentionReport:
    """Per stream: its limits beside the configured ones; each difference is drift Milvus cannot start with."""
    limits = configured.nats_limits()
    wanted = stream_limits_from_config(limits)
    channels = {c.name: c for c in source.list_channels()}
    rows = []
    for stream in source.stream_details():
        limits_now: Limits = {
            "max_age": stream.max_age_seconds,
            "max_bytes": stream.max_bytes,
            "max_msgs": stream.max_msgs,
        }
        actual: dict[str, float | int | None] = {
            **limits_now,
            "messages": stream.messages,
            "bytes": stream.bytes,
            "oldest_message_age_seconds": age_seconds(channels[stream.name].first_time, now)
            if stream.name in channels
            else None,
            "newest_message_age_seconds": age_seconds(channels[stream.name].last_time, now)
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
            have = limits_now[limit]
            if have != want:
                cause = (
                    f"{limit} is {show_limit(limit, have)} but the config gives {show_limit(limit, want)}; "
                    f"Milvus's AddStream fails with JetStream error 10058 and its producers do not start"
                )
                row.add(
                    value_finding(
                        RULE_DRIFT,
                        ERROR,
                        f"stream {stream.name}: {cause}",
                        limits[limit],
                        "run `mqctl retention apply` to set the streams to the config, or change the config to match",
                    ),
                    cause,
                )
        rows.append(row)
    return RetentionReport(source.description, source.mq, rows, [f for r in rows for f in r.findings])


@dataclass
class LimitChange:
    """One limit of one stream that the plan changes."""

    stream: str
    limit: str  # max_age, max_bytes, max_msgs, or duplicate_window (capped at max_age as nats-server does on create)
    actual: float | int
    wanted: float | int


@dataclass
class ApplyPlan:
    """Every stream's limit changes and whole new config, computed and checked before anything is sent."""

    source: str
    wanted: Limits
    changes: list[LimitChange]
    streams: list[str]
    losses: list[str] = field(default_factory=list)  # messages the new limits delete as soon as they apply
    _configs: dict[str, tuple[StreamConfig, StreamConfig]] = field(default_factory=dict)  # (config now, new config)
    # what the new limits delete, per stream: (first sequence before, first sequence kept after) where known
    # (rehearsed, or max_msgs on a live server), else the max_age cutoff time (a live server's estimate)
    kept_from: dict[str, tuple[int, int]] = field(default_factory=dict)
    age_cutoff: dict[str, dt.datetime] = field(default_factory=dict)

    def targets(self) -> set[tuple[str, str, float | int]]:
        """What the plan sets, to compare a plan made again just before applying it."""
        return {(c.stream, c.limit, c.wanted) for c in self.changes}


def limits_diff(changes: list[LimitChange]) -> str:
    """A per-stream unified diff of the limits (actual -> configured)."""
    from mqctl.mq.model import grouped_diff

    return grouped_diff(
        [
            (c.stream, f"{c.limit}: {show_limit(c.limit, c.actual)}", f"{c.limit}: {show_limit(c.limit, c.wanted)}")
            for c in changes
        ],
        "stream",
        "configured",
    )


def _stream_targets(stream: StreamDetails, wanted: Limits) -> Limits:
    """The limits a stream must hold: the configured ones, and a duplicates window no longer than max_age
    (JetStream refuses an update otherwise, error 10052; nats-server caps it the same way on create)."""
    window = stream.duplicate_window_seconds
    if wanted["max_age"] > 0 and window > wanted["max_age"]:
        window = wanted["max_age"]
    return {**wanted, "duplicate_window": window}


def plan_apply(source: StreamSource, wanted: Limits) -> ApplyPlan:
    """The whole new config of every stream that must change to hold `wanted` (see stream_limits_from_config),
    computed and checked before anything is sent."""
    changes: list[LimitChange] = []
    streams: list[str] = []
    losses: list[str] = []
    configs: dict[str, tuple[StreamConfig, StreamConfig]] = {}
    kept_from: dict[str, tuple[int, int]] = {}
    age_cutoff: dict[str, dt.datetime] = {}
    now = clock.now()
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


def _estimate_cut(
    stream: StreamDetails,
    changed: set[str],
    wanted: Limits,
    now: dt.datetime,
    kept_from: dict[str, tuple[int, int]],
    age_cutoff: dict[str, dt.datetime],
) -> None:
    """Where the new limits cut a live stream: max_msgs by sequence, max_age by time (max_bytes cannot be
    told without reading every message; a --nats-store is rehearsed instead, which is exact)."""
    if "max_msgs" in changed and 0 < wanted["max_msgs"] < stream.messages:
        kept_from[stream.name] = (stream.first_seq, stream.last_seq - int(wanted["max_msgs"]) + 1)
    if "max_age" in changed and wanted["max_age"] > 0 and stream.messages and stream.first_time is not None:
        cutoff = now - dt.timedelta(seconds=wanted["max_age"])
        if stream.first_time < cutoff:
            age_cutoff[stream.name] = cutoff


def checkpoint_losses(plan: ApplyPlan, checkpoints: list[LiveCheckpoint]) -> list[str]:
    """The vchannels whose messages after the checkpoint the plan deletes: Milvus seeks there at its next
    start and silently misses them."""
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


def _config_problems(config: StreamConfig) -> list[str]:
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


def _losses(stream: StreamDetails, changed: set[str], wanted: Limits, now: dt.datetime) -> list[str]:
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
