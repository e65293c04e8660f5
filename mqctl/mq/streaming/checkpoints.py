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

from mqctl import clock
from mqctl.findings import ERROR, INFO, WARNING, Finding
from mqctl.mq.streaming import VERIFICATION
from mqctl.mq.streaming.checkpoint_model import (
    ALTERING,
    AT_RISK,
    DEFAULT_TRUNCATION_LAG,
    DROPPED,
    EXPIRED,
    LAGGING,
    MISMATCH,
    OK,
    RULE_ALTER_WAL_MIDWAY,
    RULE_DROPPED,
    RULE_NOTHING,
    RULE_UNDECODABLE,
    RULE_WAL_MISMATCH,
    STALE,
    UNKNOWN,
    PChannelRow,
    StreamingCheckpointReport,
    VChannelRow,
    pchannel_of,
)
from mqctl.mq.streaming.state import StreamingState, tso_time
from mqctl.mq.streaming.woodpecker_checks import (
    against_wal_files,
    stale_after_truncation,
    woodpecker_columns,
)
from mqctl.mq.woodpecker.meta import WoodpeckerMeta
from mqctl.mq.woodpecker.segment_model import Segment


def _collection_id(vchannel: str) -> int | None:
    tail = vchannel.rsplit("_", 1)[-1]
    digits = tail.split("v", 1)[0]
    return int(digits) if digits.isdigit() else None


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
            woodpecker_columns(row, log, cp, now, truncation_lag, findings, woodpecker_storage)
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
            record.pchannel if record else pchannel_of(vchannel),
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
        against_wal_files(prows, vrows, state, woodpecker, wal_files, findings)
    stale_after_truncation(prows, vrows, state, logs, wal_files, findings)
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
