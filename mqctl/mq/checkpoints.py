"""`mqctl channels checkpoints`: is every vchannel's unflushed data still in the MQ?

Milvus recovers a vchannel by seeking its consumers to the channel checkpoint datacoord keeps in
etcd; rows inserted after it and not yet flushed exist only in the MQ. JetStream deletes messages by
`max_age` whether Milvus persisted them or not, so once a pchannel's first retained message lies after a
checkpoint, a restart silently loses those rows (reproduced on 2.3.5, see docs/channels.md). RocksMQ's size
retention, a deleted page or an old data dir restored make the same gap. Running FlushAll before a
restart persists what the datanode still holds.

Positions: a checkpoint's msgID is the NATS stream sequence or RocksMQ message id of the message the
consumer resumes *after*, so what Milvus needs starts right after it.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mqctl import clock
from mqctl.findings import ERROR, INFO, WARNING, Finding
from mqctl.mq.decode import messages
from mqctl.mq.milvus_meta import ChannelMeta, CollectionMeta, Position, physical_channel
from mqctl.mq.model import MQSource
from mqctl.sorting import ascii_int

OK, AT_RISK, EXPIRED, UNKNOWN = "ok", "at-risk", "expired", "unknown"
WORST_FIRST = {EXPIRED: 0, AT_RISK: 1, UNKNOWN: 2, OK: 3}
RULE_EXPIRED = "CP100"
RULE_AT_RISK = "CP101"
RULE_UNKNOWN = "CP102"
RULE_NOTHING = "CP103"
DROPPED_CHECKPOINT_TS = 2**64 - 1  # datacoord's dropped-channel checkpoint timestamp (math.MaxUint64)
FLUSH_HOW = (
    'pymilvus: MilvusClient(uri="{uri}").flush_all() (pymilvus >= 2.6.4; older: '
    'connections.connect(uri="{uri}"); utility.flush_all())'
)


@dataclass
class VChannelCheckpoint:
    vchannel: str
    pchannel: str
    collection: str | None
    collection_id: int | None
    database: str | None
    checkpoint_ts: int | None  # Milvus TSO of the position
    checkpoint_time: dt.datetime | None
    position: int | None  # NATS stream sequence / RocksMQ message id of the checkpoint
    first_retained: int | None  # the pchannel's first stored position (NATS: next sequence when empty)
    last: int | None  # the pchannel's last stored position
    lag_messages: int | None  # messages of this vchannel stored after the checkpoint
    lag_seconds: float | None  # newest message of the pchannel after the checkpoint minus the checkpoint time
    status: str
    lost_messages: int | None  # expired: pchannel positions between the checkpoint and the first retained one
    hint: str | None
    checkpoint_from: str | None = None  # channel-cp | segment-dml | segment-start | collection-start
    unflushed_since: dt.datetime | None = None  # time of this vchannel's first message after the checkpoint
    retention_seconds: float | None = None  # the pchannel's age limit (0: none)
    reason: str = ""
    lag_rows: int | None = None  # rows inserted by this vchannel's messages after the checkpoint (not flushed)


@dataclass
class CheckpointReport:
    source: str
    etcd: str
    meta_root: str
    checkpoints: list[VChannelCheckpoint]
    findings: list[Finding] = field(default_factory=list)
    watch_seconds: float | None = None

    @property
    def failing(self) -> bool:
        return any(c.status in (EXPIRED, AT_RISK) for c in self.checkpoints)


@dataclass
class PChannelState:
    first_retained: int | None
    last: int | None
    retention_seconds: float | None
    sequences: bool  # ids are contiguous (NATS): gaps can be counted


@dataclass
class ChannelScan:
    """What one read of a pchannel after the earliest checkpoint found, per vchannel."""

    counts: dict[str, int] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)  # insert rows
    first_time: dict[str, dt.datetime] = field(default_factory=dict)
    newest_time: dt.datetime | None = None


def pchannel_states(
    source: MQSource, names: set[str], rocksmq_retention_seconds: float | None
) -> dict[str, PChannelState]:
    """First/last stored position and age limit of each pchannel the source has; an MQ without a per-channel age
    limit (RocksMQ) has the configured `rocksmq_retention_seconds`."""
    return {
        name: PChannelState(
            b.first,
            b.last,
            rocksmq_retention_seconds if b.max_age_seconds is None else b.max_age_seconds,
            source.sequential_ids,
        )
        for name, b in source.channel_bounds(names).items()
    }


def scan_after(source: MQSource, pchannel: str, positions: dict[str, int]) -> ChannelScan:
    """Count each vchannel's messages after its own checkpoint, in one read from the earliest one."""
    scan = ChannelScan()
    for raw in source.iter_messages(pchannel, start_id=min(positions.values()) + 1):
        msg = messages.decode(raw.data, raw.headers, insert_keys=False)
        if msg.time is not None:
            scan.newest_time = msg.time
        shard = msg.shard
        if shard in positions and raw.id > positions[shard]:
            scan.counts[shard] = scan.counts.get(shard, 0) + 1
            if msg.type_code == messages.INSERT:
                scan.rows[shard] = scan.rows.get(shard, 0) + msg.rows
            if msg.time is not None and shard not in scan.first_time:
                scan.first_time[shard] = msg.time
    return scan


def flush_hint(milvus_uri: str | None) -> str:
    """How to persist what a vchannel holds only in the MQ (FlushAll), for this Milvus."""
    uri = milvus_uri or "http://HOST:19530"
    return "run FlushAll before any restart; a restart now loses these rows — " + FLUSH_HOW.format(uri=uri)


def assess(
    meta: ChannelMeta,
    source: MQSource,
    *,
    now: dt.datetime | None = None,
    rocksmq_retention_seconds: float | None = None,
    previous: dict[str, VChannelCheckpoint] | None = None,
    milvus_uri: str | None = None,
    etcd: str = "",
) -> CheckpointReport:
    """One row per vchannel, worst first. `previous`: the same vchannels sampled earlier (--watch), to
    catch a checkpoint that stays put while the vchannel's messages keep coming."""
    now = now or clock.now()
    vchannels = meta.vchannels()
    pchannels = {v: _pchannel_of(v, c) for v, c in vchannels.items()}
    states = pchannel_states(source, set(pchannels.values()), rocksmq_retention_seconds)
    positions = {v: meta.seek_position(v) for v in vchannels}
    scans = {}
    for pchannel in set(pchannels.values()) & set(states):
        wanted = {
            v: p.id
            for v, p in positions.items()
            if p is not None and pchannels[v] == pchannel and vchannels[v] is not None
        }
        if wanted and states[pchannel].last is not None:
            scans[pchannel] = scan_after(source, pchannel, wanted)
    rows = [
        _row(
            v,
            vchannels[v],
            pchannels[v],
            positions[v],
            states.get(pchannels[v]),
            scans.get(pchannels[v]),
            now,
            (previous or {}).get(v),
            milvus_uri,
        )
        for v in vchannels
    ]
    rows.sort(key=lambda r: (WORST_FIRST[r.status], -(r.lag_seconds or 0), r.vchannel))
    report = CheckpointReport(source.description, etcd, meta.meta_root, rows, _findings(rows))
    if not rows:
        report.findings.append(
            Finding(
                RULE_NOTHING,
                INFO,
                f"no collection and no channel checkpoint under {meta.meta_root}/",
                hint="check --etcd-root (etcd.rootPath) and that this etcd belongs to the Milvus whose MQ you read",
            )
        )
    return report


def _pchannel_of(vchannel: str, collection: CollectionMeta | None) -> str:
    if collection is not None and collection.channels.get(vchannel):
        return collection.channels[vchannel]
    return physical_channel(vchannel)


def _row(
    vchannel: str,
    collection: CollectionMeta | None,
    pchannel: str,
    position: Position | None,
    state: PChannelState | None,
    scan: ChannelScan | None,
    now: dt.datetime,
    before: VChannelCheckpoint | None,
    milvus_uri: str | None,
) -> VChannelCheckpoint:
    row = VChannelCheckpoint(
        vchannel=vchannel,
        pchannel=pchannel,
        collection=collection.name if collection else None,
        collection_id=collection.id if collection else _collection_id(vchannel),
        database=collection.database if collection else None,
        checkpoint_ts=position.timestamp if position else None,
        checkpoint_time=messages.tso_to_datetime(position.timestamp) if position else None,
        position=position.id if position else None,
        first_retained=state.first_retained if state else None,
        last=state.last if state else None,
        lag_messages=None,
        lag_seconds=None,
        status=UNKNOWN,
        lost_messages=None,
        hint=None,
        checkpoint_from=position.origin if position else None,
        retention_seconds=state.retention_seconds if state else None,
    )
    if position is not None and position.timestamp == DROPPED_CHECKPOINT_TS:
        row.checkpoint_time = None
        row.reason = (
            "dropped: datacoord keeps the MaxUint64 sentinel as this vchannel's checkpoint "
            "(funcutil.DroppedChannelCheckpointTimestamp; birdwatcher PR #527), not a lagging vchannel"
        )
        return row
    if collection is None:
        row.reason = "no live collection owns this vchannel in root-coord meta (dropped?): its checkpoint is left over"
        return row
    if position is None:
        row.reason = "no channel checkpoint, segment position or collection start position in etcd"
        return row
    if state is None:
        row.reason = f"pchannel {pchannel} is not in this MQ"
        return row
    if state.last is None and not state.sequences:
        row.reason = (
            "the RocksMQ topic holds no message: whether retention purged what follows the checkpoint is unknown"
        )
        return row
    row.lag_messages = scan.counts.get(vchannel, 0) if scan else 0
    row.lag_rows = scan.rows.get(vchannel, 0) if scan else 0
    row.unflushed_since = scan.first_time.get(vchannel) if scan else None
    newest = scan.newest_time if scan else None
    row.lag_seconds = (
        round(max((newest - row.checkpoint_time).total_seconds(), 0.0), 3) if newest and row.checkpoint_time else 0.0
    )
    _judge(row, position.id, row.lag_messages, state, now, before, milvus_uri)
    return row


def _judge(
    row: VChannelCheckpoint,
    checkpoint: int,
    lag: int,
    state: PChannelState,
    now: dt.datetime,
    before: VChannelCheckpoint | None,
    milvus_uri: str | None,
) -> None:
    """expired > at-risk > ok, with the reason and the fix."""
    needed = checkpoint + 1
    if state.first_retained is not None and (
        state.first_retained > needed if state.sequences else state.first_retained > checkpoint
    ):
        row.status = EXPIRED
        if state.sequences:
            row.lost_messages = state.first_retained - needed
            row.reason = (
                f"messages {needed}..{state.first_retained - 1} after the checkpoint are gone "
                f"(first retained {state.first_retained}): Milvus needs them to recover this vchannel"
            )
        else:
            row.reason = (
                f"the checkpoint's message {checkpoint} is gone (first retained {state.first_retained}); "
                "RocksMQ ids are sparse, so how many messages after it were purged is unknown"
            )
        row.hint = flush_hint(milvus_uri)
        return
    age = (now - row.unflushed_since).total_seconds() if row.unflushed_since else None
    window = state.retention_seconds or 0
    if lag and age is not None and window > 0 and age > window / 2:
        row.status = AT_RISK
        row.reason = (
            f"{lag} unflushed message(s), the oldest {age:.0f} s old: more than half the retention "
            f"window ({window:.0f} s); retention deletes them in {max(window - age, 0):.0f} s"
        )
        row.hint = flush_hint(milvus_uri)
        return
    if (
        before is not None
        and before.checkpoint_ts == row.checkpoint_ts
        and before.position == checkpoint
        and lag > (before.lag_messages or 0)
    ):
        row.status = AT_RISK
        row.reason = (
            f"the checkpoint did not move while {lag - (before.lag_messages or 0)} new "
            "message(s) of this vchannel arrived: a stuck vchannel's unflushed window grows until "
            "retention catches it"
        )
        row.hint = flush_hint(milvus_uri)
        return
    row.status = OK
    row.reason = "everything after the checkpoint is still stored"


def _collection_id(vchannel: str) -> int | None:
    """The collection id inside a vchannel name `<pchannel>_<collection id>v<N>`."""
    tail = vchannel.rsplit("_", 1)[-1]
    digits = tail.split("v", 1)[0]
    return ascii_int(digits)


def _findings(rows: list[VChannelCheckpoint]) -> list[Finding]:
    found = []
    for row in rows:
        if row.status == OK:
            continue
        code, severity = {
            EXPIRED: (RULE_EXPIRED, ERROR),
            AT_RISK: (RULE_AT_RISK, WARNING),
            UNKNOWN: (RULE_UNKNOWN, INFO),
        }[row.status]
        what = f"{row.database}.{row.collection}" if row.collection else f"collection {row.collection_id}"
        found.append(
            Finding(code, severity, f"{row.vchannel} ({what}): {row.status}: {row.reason}", row.vchannel, hint=row.hint)
        )
    return found


def checkpoint_report(
    read_meta: Callable[[], ChannelMeta],
    source: MQSource,
    *,
    watch_seconds: float = 0,
    sleep: Callable[[float], None] = time.sleep,
    **options: Any,
) -> CheckpointReport:
    """Assess once, or (watch) twice `watch_seconds` apart, judging the second sample against the first."""
    previous = None
    if watch_seconds > 0:
        first = assess(read_meta(), source, **options)
        previous = {row.vchannel: row for row in first.checkpoints}
        sleep(watch_seconds)
    report = assess(read_meta(), source, previous=previous, **options)
    report.watch_seconds = watch_seconds or None
    return report


def seek_positions(meta: ChannelMeta) -> dict[str, tuple[str, int]]:
    """vchannel -> (pchannel, position) where Milvus would resume each live collection's vchannel: what
    lies after it is all Milvus has not persisted (replay --from checkpoint)."""
    found = {}
    for vchannel, collection in meta.vchannels().items():
        position = meta.seek_position(vchannel)
        if collection is not None and position is not None:
            found[vchannel] = (_pchannel_of(vchannel, collection), position.id)
    return found


@dataclass
class LiveCheckpoint:
    """Where Milvus resumes a live collection's vchannel: the messages after `position` on `pchannel` are all
    it has not persisted (retention apply guards them, migrate waits for them to pass FlushAll)."""

    vchannel: str
    pchannel: str
    database: str
    collection: str
    position: int
    ts: int  # Milvus TSO
    origin: str  # channel-cp | segment-dml | segment-start | collection-start

    @property
    def time(self) -> dt.datetime | None:
        return messages.tso_to_datetime(self.ts)


def live_checkpoints(meta: ChannelMeta) -> list[LiveCheckpoint]:
    """Every live collection's vchannel with its seek position (see seek_positions), by vchannel."""
    found = []
    for vchannel, collection in sorted(meta.vchannels().items()):
        position = meta.seek_position(vchannel)
        if collection is not None and position is not None:
            found.append(
                LiveCheckpoint(
                    vchannel,
                    _pchannel_of(vchannel, collection),
                    collection.database,
                    collection.name,
                    position.id,
                    position.timestamp,
                    position.origin,
                )
            )
    return found
