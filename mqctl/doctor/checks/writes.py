"""Write checks: forceDeny left on, and a migration journal that did not finish."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from mqctl.doctor.checks.examination import FORCE_DENY, Examination, fix_value
from mqctl.doctor.verdict import OK
from mqctl.errors import MqctlError
from mqctl.findings import ERROR, INFO, WARNING

if TYPE_CHECKING:
    pass


# --- writes -----------------------------------------------------------------------------------------------
def write_checks(exam: Examination) -> None:
    res = exam.res
    if exam.target.configs:
        deny = (res.value(FORCE_DENY) or "false").strip().lower() == "true"
        enabled = (res.value("quotaAndLimits.enabled") or "false").strip().lower() == "true"
        exam.measured.force_deny = deny and enabled
        if deny and enabled:
            exam.add(
                "writes",
                "DR200",
                ERROR,
                f"{FORCE_DENY} is true ({res.where(FORCE_DENY)}): Milvus refuses writes",
                fix_value(exam, FORCE_DENY, "false") + " (refreshable: writes reopen within seconds, no restart)",
                impact="every insert, upsert, delete and bulk load fails with ForceDeny (code 9); queries and flush "
                "still work",
            )
        elif deny:
            exam.add(
                "writes",
                "DR200",
                WARNING,
                f"{FORCE_DENY} is true ({res.where(FORCE_DENY)}) but quotaAndLimits.enabled is not: no effect now, "
                "writes are refused as soon as quotas are enabled",
                fix_value(exam, FORCE_DENY, "false"),
            )
        else:
            exam.add("writes", "DR200", OK, f"writes are allowed ({FORCE_DENY} is not true)")
    _journal_check(exam)


def _journal_check(exam: Examination) -> None:
    from mqctl.migrate.record.journal import COMPLETED, PENDING, ROLLED_BACK, Journal, journal_path

    if not exam.target.configs:
        return
    path = journal_path(state_dir=None, config=exam.config)  # where `mqctl migrate --config` journals
    if not path.exists():
        exam.add("writes", "DR210", OK, f"no migration journal at {path}")
        return
    try:
        journal = Journal.load(path)
    except MqctlError as err:
        exam.add("writes", "DR210", WARNING, f"unreadable migration journal: {err.message}", err.hint)
        return
    exam.journal = journal
    what = f"migration {journal.source_mq} -> {journal.target_mq} ({journal.id})"
    if journal.state in (COMPLETED, ROLLED_BACK):
        exam.add("writes", "DR210", OK, f"the last {what} is {journal.state} ({path})")
        return
    records = journal.rollback if journal.rollback else journal.steps
    stopped = next((r for r in records if r.status not in ("done", "skipped")), None)
    if stopped is None or all(r.status == PENDING for r in journal.steps if r.name != "preflight"):
        exam.add("writes", "DR210", INFO, f"a {what} was planned and changed nothing ({path})")
        return
    where = f"step {stopped.name} is {stopped.status}" + (f": {stopped.error}" if stopped.error else "")
    flag = (
        ["--sandbox", str(Path(exam.config).parent.parent)]
        if exam.target.found_by == "--sandbox"
        else ["--config", exam.config]
    )
    writes_stopped = journal.done("stop-writes") and not journal.done("resume-writes")
    exam.journal_fix = (
        f"`{shlex.join(['mqctl', 'migrate', 'resume', *flag])}` to finish it, or "
        f"`{shlex.join(['mqctl', 'migrate', 'rollback', *flag])}` to go back"
    )
    exam.add(
        "writes",
        "DR210",
        ERROR,
        f"an interrupted {what}: {journal.state}, {where} ({path})",
        f"`{shlex.join(['mqctl', 'migrate', 'resume', *flag])}` to finish it, or "
        f"`{shlex.join(['mqctl', 'migrate', 'rollback', *flag])}` to go back; "
        f"`{shlex.join(['mqctl', 'migrate', 'status', *flag])}` shows every step",
        impact="writes stay refused (the migration stopped them) until it is resumed or rolled back"
        if writes_stopped
        else "Milvus is between two MQs until the migration is resumed or rolled back",
    )
