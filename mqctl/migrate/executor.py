"""Runs a step sequence over the journal: one registry of steps (forward and rollback), the journal
checkpointed before and after every step, and every failure told with where Milvus and its writes stand."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from mqctl.errors import MqctlError
from mqctl.migrate import steps
from mqctl.migrate.context import Context, StepFailed
from mqctl.migrate.record.journal import (
    COMPLETED,
    DONE,
    FAILED,
    ROLLED_BACK,
    RUNNING,
    SKIPPED,
    Journal,
    StepRecord,
    StepStatus,
    now,
)
from mqctl.migrate.verify import step_verify
from mqctl.migrate.writes import reopen_writes, step_resume_writes, step_stop_writes

CRASH_ENV = "MQCTL_CRASH_AFTER_STEP"  # testing aid: SIGKILL this process right after the named step
StepFunction = Callable[[Context, StepRecord], None]


@dataclass(frozen=True)
class Step:
    """What a step does in a migration (`forward`) and in a rollback (`back`); None: not in that sequence."""

    forward: StepFunction | None
    back: StepFunction | None


# one entry per name of journal.MIGRATION_STEPS (forward) and journal.ROLLBACK_STEPS (back)
REGISTRY: dict[str, Step] = {
    "preflight": Step(steps.step_preflight, None),
    "stop-writes": Step(step_stop_writes, step_stop_writes),
    "flush": Step(steps.step_flush, steps.step_rollback_flush),
    "stop": Step(steps.step_stop, steps.step_stop),
    "switch": Step(steps.step_switch, None),
    "restore-config": Step(None, steps.step_restore_config),
    "restore-data": Step(None, steps.step_restore_data),
    "start": Step(steps.step_start, steps.step_start),
    "verify": Step(step_verify, step_verify),
    "resume-writes": Step(step_resume_writes, step_resume_writes),
    "backup": Step(steps.step_backup, None),
}
BEFORE_THE_SWITCH = ("stop-writes", "flush", "stop")  # Milvus may still run on its old MQ, as before the migration


def execute(ctx: Context) -> Journal:
    """Run every step that is not done yet, journaling before and after each one."""
    journal = ctx.journal
    for record in ctx.steps:
        if record.status in (DONE, SKIPPED):
            continue
        function = REGISTRY[record.name].back if ctx.rollback else REGISTRY[record.name].forward
        if function is None:
            raise KeyError(f"{record.name} is no step of a {'rollback' if ctx.rollback else 'migration'}")
        record.status, record.started, record.error = RUNNING, now(), None
        ctx.save_journal()
        ctx.report.step_started(record)
        began = time.monotonic()
        try:
            function(ctx, record)
        except MqctlError as err:
            _finish(ctx, record, FAILED, began, err.one_line())
            ctx.report.step_finished(record)
            failed = (
                err
                if isinstance(err, StepFailed)
                else StepFailed(record.name, err.message, err.hint or "fix it, then `mqctl migrate resume`")
            )
            if not ctx.rollback and record.name in BEFORE_THE_SWITCH:
                failed = reopen_writes(ctx, failed)
            raise _with_milvus_state(ctx, failed) from None
        except KeyboardInterrupt:
            _finish(ctx, record, FAILED, began, "interrupted (Ctrl-C)")
            raise
        except Exception as err:  # a bug or a library error: the journal still says where things stand
            _finish(ctx, record, FAILED, began, f"{type(err).__name__}: {err}")
            raise
        _finish(ctx, record, SKIPPED if record.status == SKIPPED else DONE, began, None)
        ctx.report.step_finished(record)
        if os.environ.get(CRASH_ENV) == record.name:
            os.kill(os.getpid(), signal.SIGKILL)  # testing aid, see docs/migrate.md
    journal.state = ROLLED_BACK if ctx.rollback else COMPLETED
    ctx.save_journal()
    return journal


def _with_milvus_state(ctx: Context, failed: StepFailed) -> StepFailed:
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
    return failed.noted(note, action)


def _finish(ctx: Context, record: StepRecord, status: StepStatus, began: float, error: str | None) -> None:
    record.status, record.finished, record.error = status, now(), error
    record.seconds = round(time.monotonic() - began, 3)
    ctx.save_journal()
