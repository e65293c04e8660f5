"""What Woodpecker's meta and segment files add to the 2.6 checkpoint judgement (checkpoints.py): each pchannel's log,
truncation and quorum columns (CP112, CP113), checkpoints against the files (CP116, CP117, CP118, CP119) and a dropped
collection's state left behind the truncation point (CP120)."""

from __future__ import annotations

import datetime as dt

from mqctl.findings import ERROR, WARNING, Finding
from mqctl.mq.streaming.checkpoint_model import (
    AT_RISK,
    DROPPED,
    EXPIRED,
    LAGGING,
    OK,
    RULE_LOOPBACK_QUORUM,
    RULE_SEALED_SHORT,
    RULE_STALE_DROPPED,
    RULE_TRUNCATION_BEHIND,
    RULE_WAL_CORRUPT,
    RULE_WAL_EXPIRED,
    RULE_WAL_SHORTFALL,
    STALE,
    PChannelRow,
    VChannelRow,
    pchannel_of,
)
from mqctl.mq.streaming.state import StreamingState, WalCheckpoint
from mqctl.mq.woodpecker.meta import Log, WoodpeckerMeta
from mqctl.mq.woodpecker.segment_model import Segment


def woodpecker_columns(
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


def against_wal_files(
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
    shortfalls_after_checkpoints(prows, vrows, state, ids, by_log, findings)
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


def shortfalls_after_checkpoints(
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


def stale_after_truncation(
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
                dropped.setdefault(pchannel_of(envelope.vchannel), set()).add(envelope.vchannel)
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
