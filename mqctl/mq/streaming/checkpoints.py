"""`mqctl channels checkpoints` on Milvus 2.6+: per vchannel and per pchannel, where recovery starts, on which
WAL, and the hazards the 2.6 state shows (format from Milvus v2.6.x / Woodpecker v0.1.x source; not yet
verified on a running 2.6).

Hazards flagged:
- CP110: a checkpoint whose WAL is not the pinned mq.type. After AlterWAL, consumers holding a position of the
  old WAL loop on `WALNAME_MISMATCH` and tSafe stalls (milvus #52013, PR #52018).
- CP111: an AlterWAL stage left mid-way (FLUSHING or ADVANCE_CHECKPOINT in a WAL checkpoint): the streaming node
  finishes it only when it reopens the pchannel (milvus internal/streamingnode/server/wal/adaptor/opener.go).
- CP112: segments carrying embedded Woodpecker's placeholder quorum (`127.0.0.1:59456`, id -1) on a deployment
  whose Woodpecker runs in service mode, or next to segments with a real quorum: the next restart dials the
  loopback address (milvus #53582, zilliztech/woodpecker #216).
- CP113: Woodpecker segments wholly before the WAL checkpoint and still not truncated long after they closed:
  the WAL truncator is not following the checkpoint and disks fill up (milvus #44434, #51032).
- CP114 (info): a dropped vchannel's checkpoint holds the MaxUint64 sentinel (funcutil
  DroppedChannelCheckpointTimestamp): shown as dropped, never as frozen or lagging (birdwatcher PR #527).
- CP115: a key whose value does not decode with the cited format.
- CP116: with the Woodpecker files, a WAL or channel checkpoint before the first stored entry.
- CP117: with the Woodpecker files, a damaged segment (a CRC, a structural cross-check, a count short of etcd's
  LastEntryId, a misnamed file): segments.py and meta_check.py say what was found where.
- CP118: with the Woodpecker files, entries at or after a WAL checkpoint that the files do not hold (a damaged, cut
  short or missing segment, a shortfall against the footer LAC or etcd): the streaming node cannot replay them, so
  the rows of the pchannel's vchannels written after the checkpoint are at risk.
- CP119: with the Woodpecker files, a segment etcd records as Completed or Sealed that has no footer, or whose
  footer LAC is below etcd's LastEntryId: readers before Woodpecker v0.1.37 loop on "no record extract" and tSafe
  stalls (milvus #52341, zilliztech/woodpecker #242/#243).
- CP120: a dropped collection's vchannel meta or channel checkpoint, or a WAL checkpoint of a pchannel that carried a
  dropped collection, behind the Woodpecker log's truncation point (or its first stored entry): recovery replays
  the dropped collection's messages without its vchannel and streaming nodes crash-loop (milvus #47802, fixed by
  PR #47886).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from mqctl import clock
from mqctl.findings import ERROR, INFO, WARNING, Finding
from mqctl.mq.streaming import VERIFICATION
from mqctl.mq.streaming.state import StreamingState, WalCheckpoint, tso_time
from mqctl.mq.woodpecker.meta import Log, WoodpeckerMeta
from mqctl.mq.woodpecker.segments import Segment

RULE_WAL_MISMATCH = "CP110"
RULE_ALTER_WAL_MIDWAY = "CP111"
RULE_LOOPBACK_QUORUM = "CP112"
RULE_TRUNCATION_BEHIND = "CP113"
RULE_DROPPED = "CP114"
RULE_UNDECODABLE = "CP115"
RULE_WAL_EXPIRED = "CP116"
RULE_WAL_CORRUPT = "CP117"
RULE_WAL_SHORTFALL = "CP118"
RULE_SEALED_SHORT = "CP119"
RULE_STALE_DROPPED = "CP120"
RULE_NOTHING = "CP103"
DEFAULT_TRUNCATION_LAG = dt.timedelta(hours=24)
OK, DROPPED, MISMATCH, ALTERING, LAGGING, UNKNOWN = "ok", "dropped", "wal-mismatch", "altering", "lagging", "unknown"
EXPIRED = "expired"
STALE = "stale"  # CP120: left behind the WAL's truncation point by a dropped collection
AT_RISK = "at-risk"  # entries after the WAL checkpoint are not in the files (CP118)


@dataclass
class PChannelRow:
    pchannel: str
    node: str | None
    term: int | None
    state: str | None  # streaming coordinator's PChannelMeta state
    wal: str | None  # WAL of the checkpoint position
    checkpoint: str | None  # position as Milvus tools print it
    checkpoint_time: dt.datetime | None
    alter_stage: str | None  # none | flushing | advance-checkpoint
    alter_target: str | None
    log_id: int | None = None  # Woodpecker
    segments: int | None = None
    truncated_to: str | None = None  # segment/entry, "none" when nothing was truncated
    last_entry: str | None = None
    untruncated_before_checkpoint: int | None = None
    untruncated_bytes: int | None = None
    oldest_untruncated_closed: dt.datetime | None = None
    loopback_segments: int | None = None
    first_retained: str | None = None  # with the WAL files: first stored entry, segment/entry
    last_retained: str | None = None
    status: str = OK
    reasons: list[str] = field(default_factory=list)


@dataclass
class VChannelRow:
    vchannel: str
    pchannel: str
    collection: str | None
    collection_id: int | None
    state: str | None  # VChannelMeta state: normal | dropped
    wal: str | None  # WAL_name of datacoord's channel checkpoint
    position: str | None
    checkpoint_time: dt.datetime | None
    meta_time: dt.datetime | None  # VChannelMeta checkpoint time tick
    first_retained: str | None = None  # with the WAL files: first stored entry of its pchannel
    status: str = OK
    reason: str = ""


@dataclass
class StreamingCheckpointReport:
    etcd: str
    meta_root: str
    verification: str
    pinned_mq: str | None
    pinned_key: str
    woodpecker_prefix: str | None
    woodpecker_storage: str | None
    pchannels: list[PChannelRow]
    vchannels: list[VChannelRow]
    findings: list[Finding] = field(default_factory=list)

    @property
    def failing(self) -> bool:
        return any(f.severity in (ERROR, WARNING) for f in self.findings)


def _collection_id(vchannel: str) -> int | None:
    tail = vchannel.rsplit("_", 1)[-1]
    digits = tail.split("v", 1)[0]
    return int(digits) if digits.isdigit() else None


def _pchannel_of(vchannel: str) -> str:
    return vchannel.rsplit("_", 1)[0] if "_" in vchannel else vchannel


def assess_streaming(
    state: StreamingState,
    woodpecker: WoodpeckerMeta | None,
    *,
    collections: dict[int, tuple[str, str]] | None = None,
    woodpecker_storage: str | None = None,
    wal_files: list[Segment] | None = None,
    truncation_lag: dt.timedelta = DEFAULT_TRUNCATION_LAG,
    now: dt.datetime | None = None,
    etcd: str = "",
) -> StreamingCheckpointReport:
    """One row per pchannel and per vchannel, with the findings. `collections`: id -> (database, name);
    `woodpecker_storage`: woodpecker.storage.type as configured (service | minio | local), when known;
    `wal_files`: the Woodpecker segments read from disk (mqctl.mq.woodpecker.segments), to tell whether what each
    checkpoint needs is still stored."""
    now = now or clock.now()
    findings: list[Finding] = []
    pinned = state.pinned_mq
    logs = woodpecker.logs if woodpecker else {}
    alter_active = {
        p: cp.alter_wal for p, cp in state.wal_checkpoints.items() if cp.alter_wal and cp.alter_wal.stage != "none"
    }

    names = sorted(set(state.pchannels) | set(state.wal_checkpoints) | set(logs))
    prows = []
    for name in names:
        assignment = state.pchannels.get(name)
        cp = state.wal_checkpoints.get(name)
        alter = cp.alter_wal if cp else None
        row = PChannelRow(
            name,
            assignment.node_address if assignment else None,
            assignment.term if assignment else None,
            assignment.state if assignment else None,
            cp.position.wal if cp and cp.position else None,
            cp.position.text if cp and cp.position else None,
            cp.time if cp else None,
            alter.stage if alter else None,
            alter.target if alter else None,
        )
        if cp is None:
            row.status = UNKNOWN
            row.reasons.append("no WAL checkpoint in streamingnode-meta (never opened by a streaming node?)")
        if alter is not None and alter.stage != "none":
            row.status = ALTERING
            row.reasons.append(
                f"AlterWAL to {alter.target} stopped at stage {alter.stage}: the streaming node finishes it when it "
                "reopens this pchannel"
            )
            findings.append(
                Finding(
                    RULE_ALTER_WAL_MIDWAY,
                    WARNING,
                    f"{name}: AlterWAL to {alter.target} left at stage {alter.stage} "
                    f"(WAL checkpoint {state.meta_root}/streamingnode-meta/wal/{name}/consume-checkpoint)",
                    name,
                    hint="let the streaming node reopen the pchannel (it resumes the stage); do not start another "
                    "WAL switch until every pchannel's stage is none (milvus #52013, #52018)",
                )
            )
        elif cp is not None and cp.position and pinned and cp.position.wal not in (pinned, "unknown"):
            row.status = MISMATCH
            row.reasons.append(f"WAL checkpoint is on {cp.position.wal}, the pinned mq.type is {pinned}")
            findings.append(
                Finding(
                    RULE_WAL_MISMATCH,
                    ERROR,
                    f"{name}: WAL checkpoint {cp.position.text} is a {cp.position.wal} position but mq.type is "
                    f"pinned to {pinned} ({state.pinned_key}) and no AlterWAL is under way",
                    name,
                    hint="the streaming node reopens the WAL its checkpoint names, not mq.type (birdwatcher #522), "
                    "and consumers seeking an old-WAL position loop on WALNAME_MISMATCH (milvus #52013): with Milvus "
                    "stopped, put the pin back, or rewrite every position to the pinned WAL (birdwatcher "
                    "`reset checkpoint --target-wal <wal> --run=true`, PR #523)",
                )
            )
        log = logs.get(name)
        if log is not None:
            _woodpecker_columns(row, log, cp, now, truncation_lag, findings, woodpecker_storage)
        prows.append(row)

    vrows = []
    vnames = sorted(set(state.vchannels) | set(state.channel_checkpoints))
    for vchannel in vnames:
        record = state.vchannels.get(vchannel)
        ccp = state.channel_checkpoints.get(vchannel)
        cid = record.collection_id if record and record.collection_id else _collection_id(vchannel)
        database_name = (collections or {}).get(cid) if cid is not None else None
        vrow = VChannelRow(
            vchannel,
            record.pchannel if record else _pchannel_of(vchannel),
            f"{database_name[0]}.{database_name[1]}" if database_name else None,
            cid,
            record.state if record else None,
            ccp.wal if ccp else None,
            None if ccp is None or ccp.dropped else ccp.position.text,
            ccp.time if ccp else None,
            None,
        )
        if record is not None:
            vrow.meta_time = tso_time(record.checkpoint_time_tick)
        if (ccp is not None and ccp.dropped) or (record is not None and record.state == "dropped"):
            vrow.status = DROPPED
            vrow.reason = (
                "dropped: datacoord keeps the MaxUint64 sentinel as its checkpoint (not a frozen vchannel)"
                if ccp is not None and ccp.dropped
                else "dropped in the streaming node's vchannel meta"
            )
            findings.append(Finding(RULE_DROPPED, INFO, f"{vchannel}: {vrow.reason}", vchannel))
        elif ccp is None:
            vrow.status = UNKNOWN
            vrow.reason = "no datacoord channel checkpoint yet"
        else:
            expected = pinned
            pchannel_alter = alter_active.get(vrow.pchannel)
            if expected and ccp.wal not in (expected, "unknown") and pchannel_alter is None:
                vrow.status = MISMATCH
                vrow.reason = f"channel checkpoint is a {ccp.wal} position, mq.type is pinned to {expected}"
                findings.append(
                    Finding(
                        RULE_WAL_MISMATCH,
                        ERROR,
                        f"{vchannel}: channel checkpoint {ccp.position.text} has WAL_name {ccp.wal} but mq.type is "
                        f"pinned to {expected} ({state.pinned_key})",
                        vchannel,
                        hint="query nodes seeking it loop on WALNAME_MISMATCH and tSafe stalls (milvus #52013); "
                        "wait for AlterWAL's ADVANCE_CHECKPOINT stage to rewrite it, or flush the collection",
                    )
                )
            elif ccp.wal == "unknown" and ccp.position.raw:
                vrow.reason = "the position carries no WAL_name (written before 2.6?)"
        vrows.append(vrow)

    if wal_files is not None:
        _against_wal_files(prows, vrows, state, woodpecker, wal_files, findings)
    _stale_after_truncation(prows, vrows, state, logs, wal_files, findings)
    for key in state.undecodable + (woodpecker.undecodable if woodpecker else []):
        findings.append(
            Finding(
                RULE_UNDECODABLE,
                WARNING,
                f"{key}: the value does not decode with the format mqctl was built from ({VERIFICATION})",
                key,
                hint="report it with the Milvus and Woodpecker versions: the format may differ in this release",
            )
        )
    if not prows and not vrows:
        findings.append(
            Finding(
                RULE_NOTHING,
                INFO,
                f"no pchannel, WAL checkpoint or channel checkpoint under {state.meta_root}/",
                hint="check --etcd-root (etcd.rootPath) and that this etcd belongs to the Milvus 2.6 you mean",
            )
        )
    order = {EXPIRED: 0, AT_RISK: 0, STALE: 0, MISMATCH: 1, ALTERING: 2, LAGGING: 3, UNKNOWN: 4, OK: 5, DROPPED: 6}
    prows.sort(key=lambda r: (order.get(r.status, 9), r.pchannel))
    vrows.sort(key=lambda r: (order.get(r.status, 9), r.vchannel))
    return StreamingCheckpointReport(
        etcd,
        state.meta_root,
        VERIFICATION,
        pinned,
        state.pinned_key,
        woodpecker.prefix if woodpecker else None,
        woodpecker_storage,
        prows,
        vrows,
        findings,
    )


def _woodpecker_columns(
    row: PChannelRow,
    log: Log,
    cp: WalCheckpoint | None,
    now: dt.datetime,
    lag: dt.timedelta,
    findings: list[Finding],
    storage: str | None,
) -> None:
    row.log_id = log.id
    row.segments = len(log.segments)
    row.truncated_to = "none" if log.truncated_segment < 0 else f"{log.truncated_segment}/{log.truncated_entry}"
    last = log.last_entry
    row.last_entry = f"{last[0]}/{last[1]}" if last else None
    loopback = [s for s in log.segments if s.embedded_quorum]
    real = [s for s in log.segments if s.quorum_nodes and not s.embedded_quorum]
    row.loopback_segments = len(loopback)
    service = (storage or "").lower() == "service"
    if loopback and (service or real):
        why = (
            "woodpecker.storage.type is service"
            if service
            else f"{len(real)} other segment(s) of this log name a real quorum"
        )
        row.reasons.append(f"{len(loopback)} segment(s) record the embedded placeholder quorum while {why}")
        findings.append(
            Finding(
                RULE_LOOPBACK_QUORUM,
                WARNING,
                f"{row.pchannel}: segment(s) {', '.join(str(s.id) for s in loopback[:5])} of Woodpecker log "
                f"{log.id} record the loopback quorum {loopback[0].quorum_nodes or ['id -1']} while {why}",
                row.pchannel,
                hint="the next restart dials that address from another host (milvus #53582, zilliztech/woodpecker "
                "#216); keep the streaming nodes running and follow the upstream fix before restarting",
            )
        )
    position = cp.position if cp is not None else None
    checkpoint_segment = position.segment if position is not None else None
    if position is None or checkpoint_segment is None:
        return
    behind = [
        s for s in log.segments if s.id < checkpoint_segment and s.id > log.truncated_segment and s.state != "truncated"
    ]
    row.untruncated_before_checkpoint = len(behind)
    row.untruncated_bytes = sum(max(s.size, 0) for s in behind)
    closed = [stamp for s in behind if (stamp := s.closed_at or s.created) is not None]
    row.oldest_untruncated_closed = min(closed) if closed else None
    if row.oldest_untruncated_closed is not None and now - row.oldest_untruncated_closed > lag:
        age = now - row.oldest_untruncated_closed
        if row.status == OK:
            row.status = LAGGING
        row.reasons.append(
            f"{len(behind)} segment(s) before the WAL checkpoint's segment {checkpoint_segment} are not truncated "
            f"(truncation point {row.truncated_to}); the oldest closed {age.total_seconds() / 3600:.1f} h ago"
        )
        findings.append(
            Finding(
                RULE_TRUNCATION_BEHIND,
                WARNING,
                f"{row.pchannel}: Woodpecker truncation point {row.truncated_to} is behind the WAL checkpoint "
                f"{position.text}: {len(behind)} segment(s), {row.untruncated_bytes} bytes, the oldest closed "
                f"{age.total_seconds() / 3600:.1f} h ago",
                row.pchannel,
                hint="the WAL truncator does not follow the checkpoint (milvus #44434, #51032): check the streaming "
                "node's truncator log and the Woodpecker disk usage; upgrading to a release with the fix is the cure",
            )
        )


def _against_wal_files(
    prows: list[PChannelRow],
    vrows: list[VChannelRow],
    state: StreamingState,
    woodpecker: WoodpeckerMeta | None,
    segments: list[Segment],
    findings: list[Finding],
) -> None:
    """Is the entry after each WAL and channel checkpoint still in the Woodpecker files? A checkpoint before the
    first stored entry means the streaming node (WAL checkpoint) or the flusher (channel checkpoint) cannot
    replay what it has not persisted: those messages are gone."""
    from mqctl.mq.woodpecker.meta_check import check_against_meta

    segments = check_against_meta(segments, woodpecker)
    ids = {name: log.id for name, log in (woodpecker.logs.items() if woodpecker else [])}
    by_log: dict[int, list[Segment]] = {}
    for segment in segments:
        by_log.setdefault(segment.log_id, []).append(segment)
        for problem in segment.problems:
            if problem.what.startswith(RULE_SEALED_SHORT):
                findings.append(
                    Finding(
                        RULE_SEALED_SHORT,
                        ERROR,
                        f"Woodpecker segment sealed short: {problem}",
                        str(segment.log_id),
                        hint="upgrade to a Milvus shipping Woodpecker v0.1.37 or later (milvus PR #52019: compaction "
                        "refuses a replica behind LastEntryId, zilliztech/woodpecker #243) before the pchannel is "
                        "reopened; keep a copy of the segment, and restore its objects from a replica that holds "
                        "the entries up to LastEntryId (docs/doctor.md, CP119)",
                    )
                )
                continue
            findings.append(
                Finding(
                    RULE_WAL_CORRUPT,
                    WARNING,
                    f"corrupt Woodpecker segment: {problem}",
                    str(segment.log_id),
                    hint="read stops at the damage: keep a copy before Milvus reopens this log",
                )
            )
    firsts: dict[str, tuple[int, int]] = {}
    for row in prows:
        stored = [(s.segment_id, e.entry_id) for s in by_log.get(ids.get(row.pchannel, -1), []) for e in s.entries]
        if not stored:
            continue
        first, last = min(stored), max(stored)
        firsts[row.pchannel] = first
        row.first_retained, row.last_retained = f"{first[0]}/{first[1]}", f"{last[0]}/{last[1]}"
        cp = state.wal_checkpoints.get(row.pchannel)
        position = cp.position if cp is not None else None
        if position is not None and position.wal == "woodpecker" and position.order and position.order < first:
            row.status = EXPIRED
            row.reasons.append(f"WAL checkpoint {position.text} precedes the first stored entry {row.first_retained}")
            findings.append(
                Finding(
                    RULE_WAL_EXPIRED,
                    ERROR,
                    f"{row.pchannel}: WAL checkpoint {position.text} precedes the first stored Woodpecker entry "
                    f"{row.first_retained}: the streaming node cannot replay from it",
                    row.pchannel,
                    hint="the segments before it were removed (truncation or retention ran past the checkpoint)",
                )
            )
    _shortfalls_after_checkpoints(prows, vrows, state, ids, by_log, findings)
    for vrow in vrows:
        head = firsts.get(vrow.pchannel)
        ccp = state.channel_checkpoints.get(vrow.vchannel)
        if head is None or ccp is None or ccp.dropped or ccp.wal != "woodpecker" or not ccp.position.order:
            continue
        vrow.first_retained = f"{head[0]}/{head[1]}"
        if ccp.position.order < head:
            vrow.status = EXPIRED
            vrow.reason = (
                f"channel checkpoint {ccp.position.text} precedes the first stored entry {vrow.first_retained}"
            )
            findings.append(
                Finding(
                    RULE_WAL_EXPIRED,
                    ERROR,
                    f"{vrow.vchannel}: channel checkpoint {ccp.position.text} precedes the first stored Woodpecker "
                    f"entry {vrow.first_retained}: rows not flushed after it are gone",
                    vrow.vchannel,
                    hint="flush the collection before any restart; check the WAL retention (woodpecker.logstore."
                    "retentionPolicy.ttl) against the flush interval",
                )
            )


def _shortfalls_after_checkpoints(
    prows: list[PChannelRow],
    vrows: list[VChannelRow],
    state: StreamingState,
    ids: dict[str, int],
    by_log: dict[int, list[Segment]],
    findings: list[Finding],
) -> None:
    """CP118: the first entry the files may have lost (Segment.at_risk_from) at or after a pchannel's WAL
    checkpoint: the streaming node replays from the checkpoint, so what is lost after it is lost for good, and the
    rows of every vchannel on the pchannel written after the checkpoint are at risk."""
    for row in prows:
        cp = state.wal_checkpoints.get(row.pchannel)
        position = cp.position if cp is not None else None
        if position is None or position.wal != "woodpecker" or not position.order:
            continue
        risks = [
            (start, segment)
            for segment in by_log.get(ids.get(row.pchannel, -1), [])
            if (start := segment.at_risk_from()) is not None and start >= position.order[:2]
        ]
        if not risks:
            continue
        start, segment = min(risks, key=lambda item: item[0])
        vchannels = sorted(v.vchannel for v in vrows if v.pchannel == row.pchannel)
        row.status = EXPIRED if row.status == EXPIRED else AT_RISK
        row.reasons.append(f"entries from {start[0]}/{start[1]} on, after the WAL checkpoint, are not in the files")
        when = f" (written after {cp.time:%Y-%m-%d %H:%M:%S} UTC)" if cp is not None and cp.time else ""
        findings.append(
            Finding(
                RULE_WAL_SHORTFALL,
                ERROR,
                f"{row.pchannel}: the Woodpecker files do not hold entries from {start[0]}/{start[1]} on, after the WAL "
                f"checkpoint {position.text} ({next(p.what for p in segment.problems if p.loses_entries)}): the streaming node cannot replay them; "
                f"rows of {', '.join(vchannels) or 'its vchannels'}{when} are at risk",
                row.pchannel,
                hint="do not let Milvus reopen this pchannel before the segment files are restored from a copy; flush "
                "the collections once it runs and compare row counts with the source of the data",
            )
        )


def _stale_after_truncation(
    prows: list[PChannelRow],
    vrows: list[VChannelRow],
    state: StreamingState,
    logs: dict[str, Log],
    wal_files: list[Segment] | None,
    findings: list[Finding],
) -> None:
    """CP120 (milvus #47802): a dropped collection's state left behind the WAL's retention. A vchannel is dropped when
    its vchannel meta or channel checkpoint says so, or (with the files) when a DropCollection for it is stored; the
    retention point is the first entry after the Woodpecker log's truncation point (truncation is inclusive: milvus
    pkg/streaming/walimpls/wal.go `Truncate`, "truncates the wal to the given id (inclusive)"; a reader from the
    earliest entry starts at the truncated entry + 1, zilliztech/woodpecker woodpecker/log/log_handle.go
    `adjustPendingReadPointIfTruncated`, v0.1.13), or the first stored entry when the files are read."""
    from mqctl.mq.decode.envelope import read_envelope

    dropped: dict[str, set[str]] = {}
    for vrow in vrows:
        if vrow.status == DROPPED or vrow.state == "dropped":
            dropped.setdefault(vrow.pchannel, set()).add(vrow.vchannel)
    retained: dict[int, tuple[int, int]] = {}
    for segment in wal_files or []:
        for entry in segment.entries:
            key = (entry.segment_id, entry.entry_id)
            retained[entry.log_id] = min(retained.get(entry.log_id, key), key)
            envelope = read_envelope(entry.properties)
            if envelope.type == "DropCollection" and envelope.vchannel:
                dropped.setdefault(_pchannel_of(envelope.vchannel), set()).add(envelope.vchannel)
    for row in prows:
        log = logs.get(row.pchannel)
        gone = dropped.get(row.pchannel)
        if log is None or not gone:
            continue
        truncated = (log.truncated_segment, log.truncated_entry) if log.truncated_segment >= 0 else None
        stored = retained.get(log.id)
        after_truncation = (truncated[0], truncated[1] + 1) if truncated else None
        marks = [mark for mark in (after_truncation, stored) if mark is not None]
        if not marks:
            continue
        point = max(marks)
        if truncated is not None and point == after_truncation:
            what, shown = "truncation point", f"{truncated[0]}/{truncated[1]}"
        else:
            what, shown = "first stored entry", f"{point[0]}/{point[1]}"
        cp = state.wal_checkpoints.get(row.pchannel)
        position = cp.position if cp is not None else None
        if position is not None and position.wal == "woodpecker" and position.order and position.order[:2] < point:
            row.status = STALE
            row.reasons.append(f"WAL checkpoint {position.text} is behind the log's {what} {shown}")
            findings.append(
                Finding(
                    RULE_STALE_DROPPED,
                    ERROR,
                    f"{row.pchannel}: WAL checkpoint {position.text} is behind the Woodpecker log's {what} {shown}, "
                    f"and the pchannel carried dropped collection(s) ({', '.join(sorted(gone))}): once the entries "
                    "it needs are removed, recovery replays from the oldest retained entry through messages whose "
                    "vchannel is gone and streaming nodes crash-loop (milvus #47802)",
                    row.pchannel,
                    hint="upgrade to a Milvus with milvus PR #47886 before restarting the streaming node; a stuck "
                    "cluster recovers once the dropped collection's stale keys are deleted with Milvus stopped and "
                    "etcd backed up (docs/doctor.md, CP120)",
                )
            )
        for vrow in vrows:
            if vrow.vchannel not in gone:
                continue
            ccp = state.channel_checkpoints.get(vrow.vchannel)
            behind = (
                ccp is not None
                and not ccp.dropped
                and ccp.wal == "woodpecker"
                and ccp.position.order
                and ccp.position.order[:2] < point
            )
            if not behind or ccp is None:
                continue
            keys = [f"{state.meta_root}/datacoord-meta/channel-cp/{vrow.vchannel}"]
            if vrow.vchannel in state.vchannels:
                keys.insert(0, f"{state.meta_root}/streamingnode-meta/wal/{row.pchannel}/vchannel/{vrow.vchannel}")
            vrow.status = STALE
            vrow.reason = f"dropped collection's checkpoint {ccp.position.text} is behind the log's {what} {shown}"
            findings.append(
                Finding(
                    RULE_STALE_DROPPED,
                    ERROR,
                    f"{vrow.vchannel}: the dropped collection's channel checkpoint {ccp.position.text} is behind the "
                    f"Woodpecker log's {what} {shown}; stale keys: {', '.join(keys)} (milvus #47802)",
                    vrow.vchannel,
                    hint="with Milvus stopped and etcd backed up, delete those keys (`etcdctl del KEY`); upgrade to a "
                    "Milvus with milvus PR #47886, whose recovery skips dropped vchannels (docs/doctor.md, CP120)",
                )
            )
