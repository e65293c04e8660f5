"""One-line summaries of journaled steps, for people (the journal itself is the JSON)."""

from __future__ import annotations

from mqctl.migrate.journal import StepRecord


def summarize(record: StepRecord) -> str:
    ev = record.evidence
    if record.error:
        return record.error
    if record.name == "preflight" and "source_mq" in ev:
        counts = ev.get("counts", {})
        return (
            f"{ev['source_mq']} -> {ev['target']}, Milvus {ev.get('milvus_version')}, "
            f"{len(counts)} collection(s), {sum(c['rows'] or 0 for c in counts.values())} rows"
        )
    if record.name in ("stop-writes", "resume-writes") and "confirmed" in ev:
        how = ev.get("mechanism", "")
        return f"{how}: " + ("update event logged" if "receive update event" in ev["confirmed"] else ev["confirmed"])
    if record.name == "flush" and "counts" in ev:
        ts = f"flush_all_ts {ev['flush_all_ts']}, " if "flush_all_ts" in ev else ""
        return ts + f"{sum(c['rows'] or 0 for c in ev['counts'].values())} rows"
    if record.name in ("stop", "start"):
        cmd = ev.get("command")
        return ev.get("result") or (f"`{cmd['command']}` exited {cmd['returncode']}" if cmd else "")
    if record.name == "switch":
        return ev.get("result") or f"config backed up to {ev.get('backup')}"
    if record.name == "verify" and "counts" in ev:
        mq = ev.get("init_mq_line", "").rsplit("mqType=", 1)[-1].rstrip("]")
        jetstream = "; jetstream/ present" if str(ev.get("jetstream_dir", "")).endswith("jetstream") else ""
        return f"log: mqType={mq}{jetstream}; row counts equal ({len(ev['counts'])} collection(s))"
    if record.name == "backup":
        if "archive" in ev:
            return f"{ev['files']} files -> {ev['archive']}" + (" (originals deleted)" if ev.get("deleted") else "")
        return ev.get("result", "")
    return ev.get("result") or (ev.get("restored") and f"restored {ev['restored']}") or ""
