"""One-line summaries of journaled steps, for people (the journal itself is the JSON)."""

from __future__ import annotations

from mqctl.migrate.record.evidence import (
    BackupEvidence,
    CommandEvidence,
    FlushEvidence,
    PreflightEvidence,
    RestoreConfigEvidence,
    RestoreDataEvidence,
    SwitchEvidence,
    VerifyEvidence,
    WritesEvidence,
)
from mqctl.migrate.record.journal import StepRecord


def summarize(record: StepRecord) -> str:
    ev = record.evidence
    if record.error:
        return record.error
    if isinstance(ev, PreflightEvidence) and ev.source_mq is not None:
        counts = ev.counts or {}
        return (
            f"{ev.source_mq} -> {ev.target}, Milvus {ev.milvus_version}, "
            f"{len(counts)} collection(s), {sum(c['rows'] or 0 for c in counts.values())} rows"
        )
    if isinstance(ev, WritesEvidence):
        if ev.confirmed is None:
            return ""
        how = ev.mechanism or ""
        return f"{how}: " + ("update event logged" if "receive update event" in ev.confirmed else ev.confirmed)
    if isinstance(ev, FlushEvidence) and ev.counts is not None:
        ts = f"flush_all_ts {ev.flush_all_ts}, " if ev.flush_all_ts is not None else ""
        return ts + f"{sum(c['rows'] or 0 for c in ev.counts.values())} rows"
    if isinstance(ev, CommandEvidence):
        cmd = ev.command
        return ev.result or (f"`{cmd['command']}` exited {cmd['returncode']}" if cmd else "")
    if isinstance(ev, SwitchEvidence):
        return ev.result or (f"config backed up to {ev.backup}" if ev.backup else "")
    if isinstance(ev, VerifyEvidence) and ev.counts is not None:
        mq = (ev.init_mq_line or "").rsplit("mqType=", 1)[-1].rstrip("]")
        jetstream = "; jetstream/ present" if str(ev.jetstream_dir or "").endswith("jetstream") else ""
        return f"log: mqType={mq}{jetstream}; row counts equal ({len(ev.counts)} collection(s))"
    if isinstance(ev, BackupEvidence):
        if ev.archive is not None:
            return f"{ev.files} files -> {ev.archive}" + (" (originals deleted)" if ev.deleted else "")
        return ev.result or ""
    if isinstance(ev, RestoreConfigEvidence):
        return f"restored {ev.restored}" if ev.restored else ""
    if isinstance(ev, RestoreDataEvidence):
        return ev.result or (f"restored {ev.restored}" if ev.restored else "")
    return str(ev.to_dict().get("result") or "")
