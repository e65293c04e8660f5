"""The migration steps, each idempotent, each leaving its evidence in the journal.

preflight -> stop-writes -> flush -> stop -> switch -> start -> verify -> resume-writes -> backup, and
the steps only a rollback takes (restore-config, restore-data). stop-writes and resume-writes live in
`writes`. A step that fails raises `StepFailed` (exit 3) with what was seen and what to do next; the
journal then says exactly where things stand, and `resume` runs the remaining steps again.
"""

from __future__ import annotations

import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from mqctl.errors import MqctlError
from mqctl.findings import ERROR
from mqctl.host import hooks
from mqctl.migrate.checkpoints import checkpoint_evidence, checkpoints_before, read_checkpoints, wait_for_checkpoints
from mqctl.migrate.context import (
    Context,
    StepFailed,
    in_background,
    milvus_down,
    milvus_up,
    mq_dirs,
    non_empty_dir,
    utc_now,
)
from mqctl.migrate.options import MigrateOptions
from mqctl.migrate.preflight import finding_json, mq_type_overrides, preflight
from mqctl.migrate.record.evidence import (
    BackupEvidence,
    CommandEvidence,
    FlushEvidence,
    PreflightEvidence,
    RestoreConfigEvidence,
    RestoreDataEvidence,
    SwitchEvidence,
)
from mqctl.migrate.record.journal import SKIPPED, Journal, StepRecord, now
from mqctl.migrate.sessions import read_sessions, revoke_sessions
from mqctl.migrate.writes import REFRESH_SECONDS, plan_resume_edit

if TYPE_CHECKING:
    from mqctl.config.edit.plan import EditPlan


def step_preflight(ctx: Context, record: StepRecord) -> None:
    result = preflight(ctx.options, load=True)
    result.evidence.findings = [finding_json(f) for f in result.findings]
    record.evidence = result.evidence
    errors = [f for f in result.findings if f.severity == ERROR]
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more: {', '.join(f.code for f in errors[1:])})" if len(errors) > 1 else ""
        raise StepFailed(
            "preflight",
            first.message + more,
            first.hint or "fix it and run the command again",
            writes_note="nothing was changed",
        )
    ctx.journal.source_mq = result.evidence.source_mq or "?"
    if result.evidence.stop_writes == "file":
        in_background(lambda: _plan_force_deny(ctx.options.live_config))
    _pre_flush(ctx, result.evidence)
    _before_refresh(ctx, result.evidence)


def _before_refresh(ctx: Context, evidence: PreflightEvidence) -> None:
    """Writes still open, wait until just before the running Milvus re-reads its config (see
    `writes.next_refresh`), so that stop-writes' edit is read at once: the deny takes effect no later than it
    would have, and writes stay open until it does (nothing is denied while this waits)."""
    from mqctl.migrate.writes import DENY_LEAD_SECONDS, next_refresh

    if ctx.options.writes_stopped or evidence.stop_writes not in ("file", "etcd"):
        return
    try:
        found = next_refresh(ctx.options, evidence.stop_writes)
    except MqctlError:  # the log cannot be read now: stop-writes finds out and says so
        return
    if found is None:
        return
    seconds, evidence.refresh_anchor = found
    wait = seconds - DENY_LEAD_SECONDS
    if wait <= 0:  # too close to write in time: the one after
        wait += REFRESH_SECONDS
    ctx.report.waiting(f"writes open: waiting {wait:.1f} s for Milvus's next config re-read ...")
    time.sleep(wait)
    evidence.refresh_wait_seconds = round(wait, 3)
    evidence.milvus_wait_seconds = round((evidence.milvus_wait_seconds or 0) + wait, 3)


def _plan_force_deny(path: str) -> None:
    """The stop-writes edit, planned ahead (nothing written): its parses are then ready when writes are denied."""
    from mqctl.config.edit.set_unset import plan_set
    from mqctl.migrate.writes import FORCE_DENY

    plan_set(path, FORCE_DENY, "true")


def _pre_flush(ctx: Context, evidence: PreflightEvidence) -> None:
    """FlushAll while writes are still open: what is written up to now is persisted before the write-denied
    window, so the flush step inside it has only the last seconds' writes left. The flush step still flushes
    everything and checks every channel checkpoint; this only moves work out of the window."""
    from mqctl.milvus.client import flush_all

    if ctx.options.writes_stopped or not evidence.counts:
        return
    ctx.report.waiting("FlushAll while writes are still open ...")
    client = ctx.client()
    try:
        flushed = flush_all(
            client, ctx.options.flush_timeout, on_wait=lambda s: ctx.report.waiting(f"FlushAll: {s:.0f} s ...")
        )
    finally:
        client.close()
    evidence.pre_flush_ts, evidence.pre_flush_seconds = flushed["flush_all_ts"], flushed["seconds"]
    evidence.pre_flush_resent = flushed["resent"]
    evidence.milvus_wait_seconds = round((evidence.milvus_wait_seconds or 0) + flushed["seconds"], 3)


def step_flush(ctx: Context, record: StepRecord) -> None:
    """FlushAll, then every vchannel's channel checkpoint at or past the FlushAll timestamp: Milvus resumes each
    vchannel from its checkpoint, so what lies before it is persisted and nothing needs the old MQ."""
    import time

    from mqctl.milvus.client import collection_counts, flush_all

    options, evidence = ctx.options, record.of(FlushEvidence)
    try:
        before: dict[str, object] | None = {row["vchannel"]: row["ts"] for row in read_checkpoints(options)}
    except MqctlError as err:
        before = None
        evidence.checkpoints_unread = err.message
    client = ctx.client()
    try:
        ctx.report.waiting("FlushAll: waiting for every channel to pass the flush timestamp ...")
        flushed = flush_all(
            client, options.flush_timeout, on_wait=lambda s: ctx.report.waiting(f"FlushAll: {s:.0f} s ...")
        )
        waited = time.monotonic()
        evidence.counts = collection_counts(client)
    finally:
        client.close()
    evidence.flush_all_ts, evidence.seconds = flushed["flush_all_ts"], flushed["seconds"]
    evidence.resent = flushed["resent"]
    evidence.milvus_wait_seconds = round(flushed["seconds"] + time.monotonic() - waited, 3)
    if before is None:
        return
    flush_ts = flushed["flush_all_ts"]
    rows, seconds = wait_for_checkpoints(
        options,
        flush_ts,
        max(options.flush_timeout - flushed["seconds"], 1.0),
        lambda s: ctx.report.waiting(f"channel checkpoints: {s:.0f} s ..."),
    )
    evidence.checkpoints = checkpoint_evidence(before, rows, flush_ts)
    evidence.checkpoint_wait_seconds = seconds
    behind = checkpoints_before(rows, flush_ts)
    if behind:
        raise StepFailed(
            "flush",
            f"the channel checkpoint of {', '.join(behind)} is still before the FlushAll "
            f"timestamp {flush_ts} after {options.flush_timeout:.0f} s (see the journal's checkpoints)",
            "Milvus is still flushing: run `mqctl migrate resume` to flush and wait again",
            writes_note="writes stay stopped",
        )


def step_rollback_flush(ctx: Context, record: StepRecord) -> None:
    """Flush what the new MQ took since the switch, if Milvus runs; otherwise keep the migration's counts."""
    if not milvus_up(ctx.options):
        evidence = record.of(FlushEvidence)
        evidence.result = "Milvus is down: the counts of the migration's flush are the baseline"
        evidence.counts = ctx.journal.evidence("flush", FlushEvidence).counts or {}
        return
    step_flush(ctx, record)


def _run_command(options: MigrateOptions, evidence: CommandEvidence, step: str, command: str | None) -> float:
    """Run the operator's stop or start command; its seconds, or StepFailed when it exits non-zero."""
    timeout = options.stop_timeout if step == "stop" else options.start_timeout
    run = hooks.run_command(command or "", shell=options.shell, timeout=timeout)
    evidence.command = run.__dict__
    if run.returncode != 0:
        state = (
            "Milvus state unknown: writes stay stopped"
            if step == "stop"
            else "Milvus is down; writes stay denied in its config"
        )
        fix = (
            "fix the stop command and run `mqctl migrate resume --stop-cmd ...`"
            if step == "stop"
            else "fix the start command, then `mqctl migrate resume --start-cmd ...` (or `mqctl migrate rollback`)"
        )
        raise StepFailed(
            step,
            f"--{step}-cmd exited {run.returncode}: {run.output_tail[-300:] or '(no output)'}",
            fix,
            writes_note=state,
        )
    return run.seconds


def step_stop(ctx: Context, record: StepRecord) -> None:
    options, evidence = ctx.options, record.of(CommandEvidence)
    if milvus_down(options):
        evidence.result = evidence.result or "already down"
        return
    try:  # the sessions of the Milvus this command stops, journaled before it runs
        evidence.sessions, evidence.sessions_unread = read_sessions(options), None
    except MqctlError as err:
        evidence.sessions_unread = err.message
    ctx.save_journal()
    if not ctx.rollback:
        in_background(lambda: _plan_switch(ctx))  # the switch's parses, done while Milvus stops
    seconds = _run_command(options, evidence, "stop", options.stop_cmd)
    ctx.report.waiting("waiting for Milvus to go down ...")
    waited = utc_now()
    if not hooks.wait_until(lambda: milvus_down(options), options.stop_timeout):
        raise StepFailed(
            "stop",
            f"Milvus still answers {options.milvus.uri} {options.stop_timeout:.0f} s after the stop command",
            "stop it yourself, then `mqctl migrate resume`",
            writes_note="writes stay stopped",
        )
    evidence.milvus_wait_seconds = round(seconds + (utc_now() - waited).total_seconds(), 3)


def step_start(ctx: Context, record: StepRecord) -> None:
    options, evidence = ctx.options, record.of(CommandEvidence)
    if evidence.log_offset is None or not milvus_up(options):
        evidence.log_offset, evidence.started_at = options.log.mark(), now()
        ctx.save_journal()
    in_background(lambda: plan_resume_edit(ctx))  # resume-writes' parses, done while Milvus starts
    stale = ctx.record("stop").of(CommandEvidence).sessions or []
    handled: dict[str, bool] = {}
    if milvus_up(options):
        evidence.result = evidence.result or "already running"
        revoke_sessions(options, stale, handled)
        _journal_revoked(evidence, stale, handled)
        return
    # The stopped Milvus's sessions are revoked while the new one starts (its etcd may come up with it).
    with ThreadPoolExecutor(1) as pool:
        run = pool.submit(_run_command, options, evidence, "start", options.start_cmd)
        while not run.done() and not revoke_sessions(options, stale, handled):
            time.sleep(0.5)
        seconds = run.result()
    ctx.report.waiting("waiting for Milvus to become healthy ...")
    waited = utc_now()

    def healthy() -> bool:
        revoke_sessions(options, stale, handled)
        return milvus_up(options)

    if not hooks.wait_until(healthy, options.start_timeout, interval=0.2):
        raise StepFailed(
            "start",
            f"Milvus not healthy {options.start_timeout:.0f} s after the start command",
            "read its log, fix it, then `mqctl migrate resume` (or `mqctl migrate rollback`)",
            writes_note="Milvus state unknown: writes stay stopped",
        )
    evidence.milvus_wait_seconds = round(seconds + (utc_now() - waited).total_seconds(), 3)
    revoke_sessions(options, stale, handled)
    _journal_revoked(evidence, stale, handled)


def _journal_revoked(evidence: CommandEvidence, stale: list[dict[str, str]], handled: dict[str, bool]) -> None:
    """The session keys of the stopped Milvus whose leases were still alive and are now revoked."""
    if stale:
        evidence.sessions_revoked = [s["key"] for s in stale if handled.get(s["lease"])]


def _plan_switch(ctx: Context) -> EditPlan:
    from mqctl.config.edit.set_unset import plan_switch

    options = ctx.options
    return plan_switch(
        options.live_config,
        options.to,
        store_dir=options.store_dir,
        port=options.nats_port,
        kafka=options.kafka,
        milvus_version=ctx.journal.evidence("preflight", PreflightEvidence).milvus_version,
    )


def step_switch(ctx: Context, record: StepRecord) -> None:
    from mqctl.files import backup_copy

    options, journal, evidence = ctx.options, ctx.journal, record.of(SwitchEvidence)
    preflight_seen = journal.evidence("preflight", PreflightEvidence)
    if evidence.backup is None:  # journaled before the edit: a crash right after it keeps the way back
        evidence.backup = str(backup_copy(options.live_config))
        ctx.save_journal()
    result = _plan_switch(ctx).commit(backup=Path(evidence.backup))
    if result.changed:
        evidence.diff = result.diff
    else:
        evidence.result = evidence.result or "config already switched"
    etcd_old = preflight_seen.etcd_mq_type
    etcd = options.etcd_client()
    if etcd_old is None or not etcd or not options.clear_etcd_override:
        return
    if not evidence.etcd_cleared:
        now_there = mq_type_overrides(etcd)
        # A journal of an older preflight names no keys: the ones there now are the override it saw.
        keys = preflight_seen.etcd_mq_type_keys or sorted(now_there)
        cleared = [{"key": key.removeprefix(etcd.prefix), "old": now_there.get(key, etcd_old)} for key in keys]
        evidence.etcd_cleared = {**cleared[0], "keys": cleared} if cleared else None
        ctx.save_journal()  # the old values are journaled before any is deleted; a resume deletes them again
    for item in (evidence.etcd_cleared or {}).get("keys", []):
        etcd.delete(item["key"])


def step_restore_config(ctx: Context, record: StepRecord) -> None:
    from mqctl.files import atomic_write

    options, evidence = ctx.options, record.of(RestoreConfigEvidence)
    switched = ctx.journal.evidence("switch", SwitchEvidence)
    if switched.backup:
        saved = Path(switched.backup).read_text(encoding="utf-8")
        current = Path(options.live_config).read_text(encoding="utf-8")
        if saved != current:
            evidence.restored = switched.backup
            evidence.backup_of_switched = str(atomic_write(Path(options.live_config), saved))
        else:
            evidence.restored = evidence.restored or switched.backup
    cleared = switched.etcd_cleared
    etcd = options.etcd_client()
    if cleared and etcd:
        for item in cleared.get("keys") or [cleared]:  # `keys`: every spelling deleted; older journals name one
            etcd.put(item["key"], item["old"])
        evidence.etcd_restored = cleared


def step_backup(ctx: Context, record: StepRecord) -> None:
    from mqctl.migrate.backup import archive_dirs, verify_archive

    options, journal, evidence = ctx.options, ctx.journal, record.of(BackupEvidence)
    if not options.backup_dir:
        record.status = SKIPPED
        evidence.result = "no --backup-dir"
        return
    dirs = _source_dirs(journal, journal.evidence("switch", SwitchEvidence).backup)
    missing = [str(d) for d in dirs if not d.exists()]
    if evidence.archive is None:
        if not dirs or missing:
            raise StepFailed(
                "backup",
                f"old {journal.source_mq} data not found on this host: {missing or 'no path'}",
                "run mqctl where the MQ data is, or migrate without --backup-dir",
            )
        archived = archive_dirs(dirs, Path(options.backup_dir), f"{journal.source_mq}-{journal.id}")
        evidence.archive, evidence.dirs, evidence.files = archived["archive"], archived["dirs"], archived["files"]
        evidence.bytes, evidence.manifest = archived["bytes"], archived["manifest"]
        ctx.save_journal()
    verify_archive(Path(evidence.archive), evidence.manifest or {})
    evidence.read_back = "checksums match"
    if options.cleanup:
        for path in dirs:
            if path.exists():
                shutil.rmtree(path)
        evidence.deleted = [str(d) for d in dirs]


def _source_dirs(journal: Journal, config_backup: str | None) -> list[Path]:
    """The old MQ's folders, read from the config as it was before the switch."""
    from mqctl.config.resolve.resolution import resolve

    configs = list(journal.options["configs"])
    if config_backup:
        configs[-1] = config_backup
    res = resolve(configs, milvus_version=journal.evidence("preflight", PreflightEvidence).milvus_version)
    return mq_dirs(res, journal.source_mq)


def step_restore_data(ctx: Context, record: StepRecord) -> None:
    from mqctl.migrate.backup import restore_archive

    backup, evidence = ctx.journal.evidence("backup", BackupEvidence), record.of(RestoreDataEvidence)
    dirs = backup.dirs or []
    if all(non_empty_dir(Path(d)) for d in dirs):
        evidence.result = evidence.result or "already restored"
        return
    restore_archive(Path(backup.archive or ""), backup.manifest or {}, dirs)
    evidence.restored = dirs
