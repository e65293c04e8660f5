"""`retention apply --kafka`: plan, confirm, apply all-or-nothing and read back the topic configs Milvus depends on
(`retention.ms`, `retention.bytes`, `cleanup.policy`).

Milvus names no Kafka retention in its config (kafka retention.py's docstring), so the wanted values come from the
command line. What a change deletes is known before it is sent:

- `retention.ms` R: the broker deletes a segment once its newest record is older than R (Kafka's
  `UnifiedLog.deleteRetentionMsBreachedSegments`, rolling the active segment when it is the one), so every record
  before the first one stamped at or after now - R may go: ListOffsets by time gives that offset exactly, and the
  deletion is at most that (whole segments);
- `retention.bytes` B: the oldest segments go while the partition holds more than B bytes
  (`deleteRetentionSizeBreachedSegments`); the Python client cannot ask for the log's size (no DescribeLogDirs), so
  the records after a checkpoint are read and counted uncompressed, an upper bound of what they take on disk.

A change that deletes a message after a vchannel's checkpoint is refused (exit 3) unless forced: Milvus 2.3–2.5's
channel checkpoint (`datacoord-meta/channel-cp`, Milvus resumes after it) and Milvus 2.6's WAL checkpoint
(`streamingnode-meta/wal/<p>/consume-checkpoint`, the LastConfirmedMessageID the streaming node recovers from: that
message itself must stay) on a Kafka WAL.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from mqctl import interrupts
from mqctl.errors import InputError, MqctlError, PreconditionError, Stopped
from mqctl.mq.kafka.retention import RULE_COMPACTED
from mqctl.mq.retention_guard import LossWording, guard_checkpoints

if TYPE_CHECKING:
    from mqctl.config.resolve.resolution import Resolution
    from mqctl.mq.checkpoints import LiveCheckpoint
    from mqctl.mq.kafka.source import KafkaSource

APPLIED_KEYS = ("retention.ms", "retention.bytes", "cleanup.policy")
WAL_CHECKPOINT = "consume-checkpoint"  # LiveCheckpoint.origin of a 2.6 WAL checkpoint


def wanted_configs(retention_ms: int | None, retention_bytes: int | None, cleanup_policy: str | None) -> dict[str, str]:
    """The configs to set, checked as the broker would (and as Milvus needs them) before anything is read."""
    wanted: dict[str, str] = {}
    for key, value in (("retention.ms", retention_ms), ("retention.bytes", retention_bytes)):
        if value is None:
            continue
        if value < -1:
            raise InputError(f"--{key.replace('.', '-')} {value} is below -1 (unlimited)", hint="pass -1 or more")
        wanted[key] = str(value)
    if cleanup_policy is not None:
        policy = cleanup_policy.strip().lower()
        if policy != "delete":
            raise InputError(
                f"--cleanup-policy {cleanup_policy!r}: Milvus needs delete ({RULE_COMPACTED}: a compacted topic refuses "
                "Milvus's records, which have no key)",
                hint="pass --cleanup-policy delete, or leave it out",
            )
        wanted["cleanup.policy"] = policy
    if not wanted:
        raise InputError(
            "nothing to apply: Milvus's config names no Kafka retention",
            hint="pass --retention-ms MS, --retention-bytes BYTES and/or --cleanup-policy delete",
        )
    return wanted


@dataclass
class TopicChange:
    topic: str
    key: str
    before: str | None
    after: str
    override: bool  # `before` is the topic's own value (put back by setting it), else the broker default (deleted)


@dataclass
class KafkaApplyPlan:
    source: str
    wanted: dict[str, str]
    topics: list[str]
    changes: list[TopicChange]
    low: dict[str, int]  # topic -> partition 0's first offset now
    high: dict[str, int]  # topic -> the offset its next record gets
    kept_from: dict[str, int] = field(default_factory=dict)  # topic -> first offset the new retention.ms keeps
    losses: list[str] = field(default_factory=list)

    def changed(self, topic: str, key: str) -> TopicChange | None:
        return next((c for c in self.changes if c.topic == topic and c.key == key), None)

    def targets(self) -> set[tuple[str, str, str]]:
        return {(c.topic, c.key, c.after) for c in self.changes}


@dataclass
class KafkaApplyOutcome:
    """What `retention apply --kafka` did: the changes planned, the topics changed, whether they read back."""

    source: str
    dry_run: bool
    changes: list[TopicChange]
    applied: list[str]
    verified: bool | None  # None: nothing applied
    mismatches: list[str] = field(default_factory=list)
    losses: list[str] = field(default_factory=list)


def configs_diff(changes: list[TopicChange]) -> str:
    """A per-topic unified diff of the configs (now -> wanted)."""
    from mqctl.mq.model import grouped_diff

    return grouped_diff(
        [
            (c.topic, f"{c.key}={c.before}{'' if c.override else ' (broker default)'}", f"{c.key}={c.after}")
            for c in changes
        ],
        "topic",
        "wanted",
    )


def plan_topics(source: KafkaSource, topics: Iterable[str], wanted: dict[str, str]) -> KafkaApplyPlan:
    """Every change the wanted configs make on these topics, and what a new retention.ms deletes at once."""
    names = sorted(topics)
    details = source.topic_config_details(names)
    offsets = source.offsets(names)
    low = {name: parts[0].low for name, parts in offsets.items() if parts}
    high = {name: parts[0].high for name, parts in offsets.items() if parts}
    changes = []
    for name in names:
        for key, value in wanted.items():
            before, override = details.get(name, {}).get(key, (None, False))
            if before != value:
                changes.append(TopicChange(name, key, before, value, override))
    plan = KafkaApplyPlan(source.description, wanted, names, changes, low, high)
    retention_ms = int(wanted.get("retention.ms", "-1"))
    now_ms = int(time.time() * 1000)
    for name in sorted({c.topic for c in changes if c.key == "retention.ms"}):
        if retention_ms <= 0 or low.get(name, 0) >= high.get(name, 0):
            continue
        kept = first_offset_at(source, name, now_ms - retention_ms)
        plan.kept_from[name] = high[name] if kept is None else kept
        if plan.kept_from[name] > low[name]:
            plan.losses.append(
                f"topic {name}: retention.ms {retention_ms} lets the broker delete up to "
                f"{plan.kept_from[name] - low[name]} record(s) at once, offsets {low[name]}..{plan.kept_from[name] - 1} "
                "(older than that; Kafka deletes whole segments, so possibly fewer)"
            )
    return plan


def checkpoint_losses(plan: KafkaApplyPlan, source: KafkaSource, checkpoints: list[LiveCheckpoint]) -> list[str]:
    """The vchannels (2.6: pchannels) whose messages after the checkpoint the new configs delete."""
    found = []
    size_checked: dict[tuple[str, int], int] = {}
    for cp in checkpoints:
        needed = cp.position + 1  # a 2.6 WAL checkpoint comes as the offset before the one it recovers from
        name = f"{cp.database}.{cp.collection} ({cp.vchannel})" if cp.collection else cp.vchannel
        what = "its WAL checkpoint" if cp.origin == WAL_CHECKPOINT else "its checkpoint"
        shown = needed if cp.origin == WAL_CHECKPOINT else cp.position
        low = plan.low.get(cp.pchannel)
        if low is None or needed < low:  # not a topic changed here, or already lost (`channels checkpoints`)
            continue
        kept = plan.kept_from.get(cp.pchannel)
        if plan.changed(cp.pchannel, "retention.ms") and kept is not None and kept > needed:
            found.append(
                f"{name}: the new retention.ms {plan.wanted['retention.ms']} of topic {cp.pchannel} deletes offsets "
                f"{needed}..{kept - 1}, after {what} {shown}"
            )
            continue
        size = plan.changed(cp.pchannel, "retention.bytes")
        limit = int(size.after) if size is not None else -1
        if limit > 0 and needed < plan.high.get(cp.pchannel, 0):
            key = (cp.pchannel, needed)
            if key not in size_checked:
                size_checked[key] = record_bytes(source, cp.pchannel, needed)
            if size_checked[key] > limit:
                found.append(
                    f"{name}: topic {cp.pchannel} holds {size_checked[key]} bytes of records after {what} {shown} "
                    f"(uncompressed), more than the new retention.bytes {limit}: the oldest of them would be deleted"
                )
    return found


def apply_topic_retention(
    open_topics: Callable[[], AbstractContextManager[KafkaSource]],
    wanted: dict[str, str],
    topics: list[str],
    *,
    dry_run: bool,
    confirm: Callable[[KafkaApplyPlan], bool],
    checkpoints: Callable[[], list[LiveCheckpoint] | None] | None = None,
    force: bool = False,
) -> KafkaApplyOutcome:
    """Plan, guard the checkpoints, confirm (`confirm(plan)` shows the plan and answers), apply all-or-nothing and
    read back. `open_topics()` opens the brokers (each time it is called); `topics`: named topics (each must
    exist), else every topic of the source (its topic prefix)."""
    started: list[KafkaApplyPlan] = []
    try:
        with open_topics() as source:
            for topic in topics:
                source._topic(topic)  # a topic that does not exist: one line now
            names = topics or sorted(source.topics)
            if not names:
                raise InputError(
                    f"no topic on {source.description}", hint="check --topic-prefix, or name topics with --topic"
                )
            plan = plan_topics(source, names, wanted)
            losses = partial(checkpoint_losses, plan, source)
            guard_checkpoints(plan, checkpoints, losses, _KAFKA_WORDING, force=force, dry_run=dry_run)
            if not plan.changes or dry_run:
                return KafkaApplyOutcome(plan.source, dry_run, plan.changes, [], None, losses=plan.losses)
            if not confirm(plan):
                raise PreconditionError("not confirmed; nothing changed")
            started.append(plan)
            with interrupts.held() as interrupted:
                applied = apply_plan(source, plan, interrupted)
                mismatches = verify(source, plan)
        return KafkaApplyOutcome(plan.source, False, plan.changes, applied, not mismatches, mismatches, plan.losses)
    except KeyboardInterrupt as stop:
        raise _stopped(open_topics, started[0] if started else None, stop) from None


_KAFKA_WORDING = LossWording(
    change="the new topic configs",
    checkpoint="checkpoint",
    channels="channel(s)",
    show="`mqctl channels checkpoints --kafka`",
    deleted="offsets",
)


def apply_plan(source: KafkaSource, plan: KafkaApplyPlan, interrupted: list[int]) -> list[str]:
    """Each topic's changed configs in one request; when a topic refuses, the topics already changed get their
    old configs back, so they all hold the new configs or all keep the old ones. A stopping signal is acted on
    before each topic (the changed ones go back, then Interrupted)."""
    done: list[str] = []
    for topic in sorted({c.topic for c in plan.changes}):
        if interrupted:
            _restore(source, plan, done)
            raise interrupts.Interrupted(interrupted[0])
        try:
            alter_topic_configs(source, topic, {c.key: c.after for c in plan.changes if c.topic == topic})
        except MqctlError as err:
            unrestored = _restore(source, plan, done)
            restored = (
                f"put back the {len(done) - len(unrestored)} topic(s) already changed" if done else "no topic changed"
            )
            if unrestored:
                restored += f"; could NOT put back {', '.join(unrestored)}"
            raise PreconditionError(f"{err.message}; {restored}", hint="fix the cause and run apply again") from err
        done.append(topic)
    return done


def _restore(source: KafkaSource, plan: KafkaApplyPlan, topics: list[str]) -> list[str]:
    failed = []
    for topic in reversed(topics):
        changed = [c for c in plan.changes if c.topic == topic]
        try:
            alter_topic_configs(
                source,
                topic,
                {c.key: c.before for c in changed if c.override and c.before is not None},
                [c.key for c in changed if not c.override],
            )
        except MqctlError:
            failed.append(topic)
    return failed


def verify(source: KafkaSource, plan: KafkaApplyPlan) -> list[str]:
    """Configs that do not read back as planned."""
    details = source.topic_config_details(plan.topics)
    return [
        f"{c.topic}: {c.key} reads back as {details.get(c.topic, {}).get(c.key, (None, False))[0]}, not {c.after}"
        for c in plan.changes
        if details.get(c.topic, {}).get(c.key, (None, False))[0] != c.after
    ]


def _stopped(
    open_topics: Callable[[], AbstractContextManager[KafkaSource]],
    plan: KafkaApplyPlan | None,
    stop: KeyboardInterrupt,
) -> Stopped:
    """What an interrupted apply says: nothing changed before the first request; else what the topics hold, read
    back from the brokers."""
    reason = interrupts.describe(stop)
    if plan is None:
        return Stopped(f"{reason} before any change: nothing changed")
    with interrupts.held():
        try:
            with open_topics() as source:
                details = source.topic_config_details(plan.topics)
        except MqctlError as err:
            return Stopped(
                f"{reason} while the new configs were being applied; the topics could not be read back: {err.message}",
                hint="run `mqctl retention show --kafka ...` to see which configs each topic holds",
            )
    topics = sorted({c.topic for c in plan.changes})
    new = [t for t in topics if all(details[t].get(c.key, (None,))[0] == c.after for c in plan.changes if c.topic == t)]
    if len(new) == len(topics):
        return Stopped(f"{reason}; read back from {plan.source}: all {len(topics)} topic(s) hold the new configs")
    old = [t for t in topics if t not in new]
    return Stopped(
        f"{reason}; read back from {plan.source}: {len(new)} topic(s) hold the new configs"
        + (f" ({', '.join(new)})" if new else "")
        + f", {len(old)} keep the old ones ({', '.join(old)})",
        hint="run apply again to finish the change",
    )


def kafka_checkpoints(etcd: str | None, etcd_root: str | None, resolution: Resolution | None) -> list[LiveCheckpoint]:
    """Every checkpoint a retention change must keep on Kafka: 2.3–2.5 channel checkpoints (as `channels
    checkpoints --kafka` reads them), or on a 2.6 the datacoord channel checkpoints on Kafka and each pchannel's WAL
    checkpoint on Kafka (as the offset before it: recovery starts at that message itself)."""
    from mqctl.mq.checkpoints import LiveCheckpoint, live_checkpoints
    from mqctl.mq.milvus_meta import meta_reader
    from mqctl.mq.streaming.state import StreamingReader, has_streaming_meta

    reader = meta_reader(etcd, etcd_root, resolution)
    if not has_streaming_meta(reader.etcd, reader.root):
        return live_checkpoints(reader.read())
    state = StreamingReader(reader.etcd, reader.root[len(reader.etcd.root) :].strip("/") or "meta").read()
    found = []
    for vchannel, cp in sorted(state.channel_checkpoints.items()):
        record = state.vchannels.get(vchannel)
        if cp.dropped or cp.wal != "kafka" or not cp.position.order or (record and record.state == "dropped"):
            continue
        pchannel = record.pchannel if record is not None else vchannel.rsplit("_", 1)[0]
        found.append(LiveCheckpoint(vchannel, pchannel, "", "", cp.position.order[0], cp.timestamp, "channel-cp"))
    for pchannel, wal_cp in sorted(state.wal_checkpoints.items()):
        position = wal_cp.position
        if position is None or position.wal != "kafka" or not position.order:
            continue
        found.append(
            LiveCheckpoint(
                f"WAL of {pchannel}", pchannel, "", "", position.order[0] - 1, wal_cp.time_tick, WAL_CHECKPOINT
            )
        )
    return found


# ------------------------------------------------------------------------------ what apply asks of the brokers
def alter_topic_configs(source: KafkaSource, topic: str, set_to: dict[str, str], remove: Iterable[str] = ()) -> None:
    """Set these configs on the topic and delete these overrides (back to the broker default), in one
    IncrementalAlterConfigs request; the broker applies all of them or none."""
    from confluent_kafka import KafkaException

    from mqctl.mq.kafka.librdkafka import admin_module, error_text

    admin = admin_module()
    ops = admin.AlterConfigOpType
    entries = [admin.ConfigEntry(key, value, incremental_operation=ops.SET) for key, value in set_to.items()]
    entries += [admin.ConfigEntry(key, None, incremental_operation=ops.DELETE) for key in remove]
    resource = admin.ConfigResource(admin.ResourceType.TOPIC, topic, incremental_configs=entries)
    try:
        for future in source._admin.incremental_alter_configs(
            [resource], request_timeout=source.access.timeout
        ).values():
            future.result()
    except KafkaException as err:
        raise PreconditionError(
            f"{source.description}: topic {topic} refused the new configs: {error_text(err)}"
        ) from None


def first_offset_at(source: KafkaSource, topic: str, time_ms: int) -> int | None:
    """Partition 0's first offset whose record timestamp is at or after `time_ms` (ListOffsets by time); None when
    every record is older."""
    from confluent_kafka import KafkaException, TopicPartition

    from mqctl.mq.kafka.source import MILVUS_PARTITION

    try:
        (found,) = source._reader().offsets_for_times(
            [TopicPartition(topic, MILVUS_PARTITION, time_ms)], timeout=source.access.timeout
        )
    except KafkaException as err:
        raise source._unreachable(f"{topic}: cannot look up offsets by time", err) from None
    return None if found.offset < 0 else int(found.offset)


def record_bytes(source: KafkaSource, topic: str, first: int) -> int:
    """The bytes of the records from offset `first` to the end (values and headers, uncompressed): an upper bound
    of what they take in the log, since the producer compresses them."""
    return sum(
        len(raw.data) + sum(len(k) + len(v) for k, v in raw.headers.items())
        for raw in source.iter_messages(topic, first)
    )
