"""Plan, execute, resume and roll back a migration over its journal."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from mqctl.errors import InputError, MqctlError, PreconditionError
from mqctl.migrate import steps as S
from mqctl.migrate.journal import (
    COMPLETED,
    DONE,
    FAILED,
    PENDING,
    ROLLED_BACK,
    ROLLING_BACK,
    RUNNING,
    SKIPPED,
    Journal,
    StepRecord,
    archive_finished,
    now,
)
from mqctl.migrate.milvus import MilvusTarget


@dataclass
class PlannedStep:
    name: str
    action: str


@dataclass
class Plan:
    """`mqctl migrate plan`: what each step will do and what preflight found; nothing changed."""

    source_mq: str | None
    target_mq: str
    milvus_version: str | None
    steps: list[PlannedStep]
    findings: list[S.Finding]
    counts: dict = field(default_factory=dict)
    config_diff: str = ""
    checkpoints: list[dict] = field(default_factory=list)  # every vchannel's channel checkpoint now (etcd)

    @property
    def refused(self) -> bool:
        return any(f.level == "error" for f in self.findings)


def plan(options: S.MigrateOptions) -> Plan:
    from mqctl.config.edit import switch

    journal = Journal.new(Path(os.devnull), "?", options.to, options.journaled())
    findings, evidence = S.preflight_findings(S.Context(journal, options), load=False)
    diff = ""
    if not any(f.level == "error" for f in findings):
        diff = switch(
            options.live_config,
            options.to,
            store_dir=options.store_dir,
            port=options.nats_port,
            milvus_version=evidence.get("milvus_version"),
            dry_run=True,
        ).diff
    mechanism = evidence.get("stop_writes", "file")
    where = {"file": f"in {options.live_config} (Milvus re-reads it)", "etcd": f"in etcd {options.etcd}"}.get(mechanism)
    store = evidence.get("store_dir") or evidence.get("rocksmq_path") or "natsmq.server.storeDir"
    dirs = ", ".join(
        str(d)
        for d in S.mq_dirs(S.resolution(options, evidence.get("milvus_version")), evidence.get("source_mq") or "")
    )
    actions = {
        "preflight": "check target, Milvus, overrides, storage, ports; record every collection's row count",
        "stop-writes": f"set {S.FORCE_DENY}=true {where}; wait for Milvus's update event" if where else mechanism,
        "flush": f"FlushAll through gRPC at {options.milvus.uri}; wait up to {options.flush_timeout:.0f} s until every "
        "channel checkpoint (etcd) is at or past the FlushAll timestamp; count rows",
        "stop": f"run `{options.stop_cmd}`; wait until Milvus stops answering" if options.stop_cmd else "no --stop-cmd",
        "switch": f"switch {options.live_config} to {options.to} (atomic, with a backup; diff below)",
        "start": f"run `{options.start_cmd}`; wait for health" if options.start_cmd else "no --start-cmd",
        "verify": f"`try to init mq ... mqType={options.to}` in the log"
        + (f"; jetstream/ under {store}" if options.to == "natsmq" else "")
        + "; every collection loads with the same row count; channel checkpoints move "
        "past the start (a warning if not)",
        "resume-writes": f"put {S.FORCE_DENY} back to its old value; wait for the update event",
        "backup": (
            f"archive {dirs} with a checksum manifest into {options.backup_dir}, read it back"
            + ("; then delete them" if options.cleanup else "")
        )
        if options.backup_dir
        else "skipped (no --backup-dir)",
    }
    return Plan(
        evidence.get("source_mq"),
        options.to,
        evidence.get("milvus_version") or options.milvus_version,
        [PlannedStep(name, actions[name]) for name in actions],
        findings,
        evidence.get("counts", {}),
        diff,
        _checkpoints_now(options, findings),
    )


def _checkpoints_now(options: S.MigrateOptions, findings: list[S.Finding]) -> list[dict]:
    """The channel checkpoints the flush step will wait on; a finding when etcd cannot be read."""
    try:
        return S.read_checkpoints(options)
    except MqctlError as err:
        findings.append(
            S.Finding(
                "warning",
                "checkpoints-unread",
                f"channel checkpoints not read: {err.message}",
                err.hint or "pass --etcd http://HOST:2379 (Milvus's etcd)",
            )
        )
        return []


# ------------------------------------------------------------------ executing


def execute(ctx: S.Context) -> Journal:
    """Run every step that is not done yet, journaling before and after each one."""
    journal = ctx.journal
    functions = {**S.STEP_FUNCTIONS, **ROLLBACK_FUNCTIONS} if ctx.rollback else S.STEP_FUNCTIONS
    for record in ctx.steps:
        if record.status in (DONE, SKIPPED):
            continue
        record.status, record.started, record.error = RUNNING, now(), None
        journal.save()
        ctx.report.step_started(record)
        began = time.monotonic()
        try:
            functions[record.name](ctx, record)
        except MqctlError as err:
            _finish(journal, record, FAILED, began, err.one_line())
            ctx.report.step_finished(record)
            failed = (
                err
                if isinstance(err, S.StepFailed)
                else S.StepFailed(record.name, err.message, err.hint or "fix it, then `mqctl migrate resume`")
            )
            if not ctx.rollback and record.name in BEFORE_THE_SWITCH:
                failed = _reopen_writes(ctx, failed)
            raise _with_milvus_state(ctx, failed) from None
        except KeyboardInterrupt:
            _finish(journal, record, FAILED, began, "interrupted (Ctrl-C)")
            raise
        except Exception as err:  # a bug or a library error: the journal still says where things stand
            _finish(journal, record, FAILED, began, f"{type(err).__name__}: {err}")
            raise
        _finish(journal, record, SKIPPED if record.status == SKIPPED else DONE, began, None)
        ctx.report.step_finished(record)
        if os.environ.get(S.CRASH_ENV) == record.name:
            os.kill(os.getpid(), signal.SIGKILL)  # testing aid, see README
    journal.state = ROLLED_BACK if ctx.rollback else COMPLETED
    journal.save()
    return journal


BEFORE_THE_SWITCH = ("stop-writes", "flush", "stop")  # Milvus may still run on its old MQ, as before the migration


def _reopen_writes(ctx: S.Context, failed: S.StepFailed) -> S.StepFailed:
    """After a failure before the switch, a Milvus still running as before gets its writes back: they
    stay denied only when its state is unknown. stop-writes and flush go back to pending (the journaled
    old value kept), so `resume` denies writes and flushes again before it goes on.

    When stop-writes itself failed, Milvus never logged the deny (or mqctl could not see it), so no
    event can be expected for putting the old value back: it is put back without waiting."""
    stop = ctx.journal.step("stop-writes")
    if "old" not in stop.evidence:  # mqctl did not deny writes
        return failed
    if not S.milvus_up(ctx.options):
        return S.StepFailed(
            failed.step,
            failed.seen,
            failed.next_action,
            writes_note="Milvus does not answer, its state is unknown: writes stay denied",
        )
    deny_seen = failed.step != "stop-writes"
    old = stop.evidence["old"]
    stop.status, stop.evidence = (
        PENDING,
        {"old": old, "mechanism": stop.evidence.get("mechanism"), "reopened_after": failed.step},
    )
    flush = ctx.journal.step("flush")  # what is written from now on must be flushed again before the stop
    flush.status, flush.evidence = PENDING, {}
    ctx.journal.save()
    next_action = failed.next_action + "; resume denies writes again first"
    try:
        S.apply_force_deny(ctx, StepRecord("resume-writes"), old, wait=deny_seen)
    except MqctlError as err:  # the edit may have happened: resume denies writes again either way
        return S.StepFailed(
            failed.step,
            failed.seen,
            next_action,
            writes_note=f"putting forceDeny back was not confirmed ({err.message}): writes may be open",
        )
    if not deny_seen:
        value = next(iter(old.values()))
        put_back = f"put back to {value}" if value is not None else "removed again"
        return S.StepFailed(
            failed.step,
            failed.seen,
            next_action,
            writes_note=f"Milvus still runs on its old MQ; forceDeny was {put_back}, so writes reopen as "
            "soon as Milvus reads it (no event awaited: none was seen for the deny)",
        )
    return S.StepFailed(
        failed.step, failed.seen, next_action, writes_note="Milvus still runs on its old MQ, so writes were resumed"
    )


def _with_milvus_state(ctx: S.Context, failed: S.StepFailed) -> S.StepFailed:
    """Every failure says where Milvus stands (running or stopped, writes denied or not) and how to go on,
    read from the journal: the step's own message knows only what the step saw."""
    if failed.writes_note:
        return failed
    status = {r.name: r.status for r in ctx.steps}
    on = ctx.journal.target_mq if ctx.rollback else ctx.journal.source_mq  # what it ran on before this sequence
    denied = (
        "writes stay stopped by the operator (--writes-stopped)" if ctx.options.writes_stopped else "writes stay denied"
    )
    if status.get("resume-writes") == DONE:
        note = f"Milvus runs on {ctx.expected_mq}, verified, writes open"
    elif status.get("verify") == DONE:
        note = f"Milvus runs on {ctx.expected_mq}, verified; {denied}"
    elif status.get("start") == DONE:
        note = f"Milvus runs on an unverified MQ; {denied}"
    elif status.get("stop") == DONE:
        switched = status.get("switch" if not ctx.rollback else "restore-config") == DONE
        note = f"Milvus is stopped{', its config already switched' if switched else ''}; {denied}"
    elif status.get("stop-writes", DONE) == DONE:
        note = f"Milvus still runs on {on}; {denied}"
    else:
        note = f"Milvus still runs on {on}; nothing was changed"
    again = "`mqctl migrate rollback` again" if ctx.rollback else "`mqctl migrate resume` (or `mqctl migrate rollback`)"
    action = failed.next_action if "mqctl migrate" in failed.next_action else f"{failed.next_action}, then {again}"
    return S.StepFailed(failed.step, failed.seen, action, writes_note=note)


def _finish(journal: Journal, record: StepRecord, status: str, began: float, error: str | None) -> None:
    record.status, record.finished, record.error = status, now(), error
    record.seconds = round(time.monotonic() - began, 3)
    journal.save()


def start(options: S.MigrateOptions, path: Path, report: S.Reporter) -> Journal:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(
            f"cannot create the journal folder {path.parent}: {err.strerror}", hint="pass a writable --state-dir"
        ) from None
    archive_finished(path)
    journal = Journal.new(path, "?", options.to, options.journaled())
    journal.save()
    return execute(S.Context(journal, options, report))


def load_options(journal: Journal, milvus: MilvusTarget, overrides: dict) -> S.MigrateOptions:
    """The journaled options, with what the operator passes again (commands, secrets) on top."""
    options = S.MigrateOptions.from_journal(journal.options, milvus)
    for key, value in overrides.items():
        if value is not None:
            setattr(options, key, value)
    journal.options = options.journaled()
    return options


def resume(path: Path, milvus: MilvusTarget, overrides: dict, report: S.Reporter) -> Journal:
    journal = Journal.load(path)
    if journal.state == COMPLETED:
        return journal
    if journal.state in (ROLLING_BACK, ROLLED_BACK):
        raise PreconditionError(
            f"the migration in {path} is {journal.state}",
            hint="finish it with `mqctl migrate rollback`"
            if journal.state == ROLLING_BACK
            else "start a new migration",
        )
    options = load_options(journal, milvus, overrides)
    return execute(S.Context(journal, options, report))


# ------------------------------------------------------------------ rollback


def rollback_steps(journal: Journal) -> list[str]:
    """What undoing this journal takes, given how far the migration got."""
    status = {r.name: r.status for r in journal.steps}
    switched, stopped = status["switch"] != PENDING, status["stop"] != PENDING
    cleaned = bool(journal.step("backup").evidence.get("deleted"))
    names = []
    if status["resume-writes"] == DONE and status["stop-writes"] == DONE:
        names.append("stop-writes")
    if switched or stopped:
        names += ["flush", "stop"]
    if switched:
        names.append("restore-config")
    if cleaned:
        names.append("restore-data")
    if switched or stopped:
        names += ["start", "verify"]
    if status["stop-writes"] != PENDING:
        names.append("resume-writes")
    return names


def step_rollback_flush(ctx: S.Context, record: StepRecord) -> None:
    """Flush what the new MQ took since the switch, if Milvus runs; otherwise keep the migration's counts."""
    if not S.milvus_up(ctx.options):
        record.evidence["result"] = "Milvus is down: the counts of the migration's flush are the baseline"
        record.evidence["counts"] = ctx.journal.step("flush").evidence.get("counts", {})
        return
    S.step_flush(ctx, record)


def step_restore_config(ctx: S.Context, record: StepRecord) -> None:
    from mqctl.config.edit import atomic_write

    journal, options = ctx.journal, ctx.options
    backup = journal.step("switch").evidence.get("backup")
    if backup:
        saved = Path(backup).read_text(encoding="utf-8")
        current = Path(options.live_config).read_text(encoding="utf-8")
        if saved != current:
            record.evidence.update(
                restored=backup, backup_of_switched=str(atomic_write(Path(options.live_config), saved))
            )
        else:
            record.evidence.setdefault("restored", backup)
    cleared = journal.step("switch").evidence.get("etcd_cleared")
    if cleared:
        options.etcd_client().put(cleared["key"], cleared["old"])
        record.evidence["etcd_restored"] = cleared


def step_restore_data(ctx: S.Context, record: StepRecord) -> None:
    from mqctl.migrate.backup import restore_archive

    backup = ctx.journal.step("backup").evidence
    if all(S.non_empty_dir(Path(d)) for d in backup["dirs"]):
        record.evidence.setdefault("result", "already restored")
        return
    restore_archive(Path(backup["archive"]), backup["manifest"], backup["dirs"])
    record.evidence["restored"] = backup["dirs"]


ROLLBACK_FUNCTIONS = {
    "flush": step_rollback_flush,
    "restore-config": step_restore_config,
    "restore-data": step_restore_data,
}


def rollback(path: Path, milvus: MilvusTarget, overrides: dict, report: S.Reporter) -> Journal:
    journal = Journal.load(path)
    if journal.state == ROLLED_BACK:
        return journal
    backup = journal.step("backup").evidence
    if backup.get("deleted") and not backup.get("read_back"):
        raise PreconditionError("the old MQ data was deleted without a verified backup: rollback is impossible")
    options = load_options(journal, milvus, overrides)
    if journal.state != ROLLING_BACK:
        journal.rollback = [StepRecord(name) for name in rollback_steps(journal)]
        journal.state = ROLLING_BACK
        journal.save()
    return execute(S.Context(journal, options, report, rollback=True))
