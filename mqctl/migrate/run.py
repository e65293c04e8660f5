"""Plan, start, resume and roll back a migration over its journal (`executor` runs the steps)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mqctl.backends import BACKENDS
from mqctl.errors import InputError, MqctlError, PreconditionError
from mqctl.findings import ERROR, WARNING, Finding
from mqctl.migrate.checkpoints import read_checkpoints
from mqctl.migrate.context import Context, Reporter, migration_dirs, mq_dirs, resolution
from mqctl.migrate.executor import execute
from mqctl.migrate.options import MigrateOptions
from mqctl.migrate.preflight import finding_json, preflight, switch_diff
from mqctl.migrate.record.evidence import BackupEvidence, CheckpointRows, Counts
from mqctl.migrate.record.journal import (
    COMPLETED,
    DONE,
    PENDING,
    ROLLED_BACK,
    ROLLING_BACK,
    Journal,
    StepRecord,
    archive_finished,
)
from mqctl.migrate.writes import FORCE_DENY
from mqctl.milvus.client import MilvusTarget


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
    findings: list[Finding]
    counts: Counts = field(default_factory=dict)
    config_diff: str = ""
    checkpoints: CheckpointRows = field(default_factory=list)  # every vchannel's channel checkpoint now (etcd)

    @property
    def refused(self) -> bool:
        return any(f.severity == ERROR for f in self.findings)

    def to_dict(self) -> dict[str, Any]:
        """The plan as `--json` shows it (findings with their `level`)."""
        return {**asdict(self), "findings": [finding_json(f) for f in self.findings]}


def plan(options: MigrateOptions) -> Plan:
    checked = preflight(options, load=False)
    evidence = checked.evidence
    diff = "" if checked.refused else switch_diff(options, evidence.milvus_version)
    mechanism = evidence.stop_writes or "file"
    where = {"file": f"in {options.live_config} (Milvus re-reads it)", "etcd": f"in etcd {options.etcd}"}.get(mechanism)
    store = evidence.store_dir or evidence.rocksmq_path or BACKENDS["natsmq"].store_key
    dirs = ", ".join(str(d) for d in mq_dirs(resolution(options, evidence.milvus_version), evidence.source_mq or ""))
    actions = {
        "preflight": "check target, Milvus, overrides, storage, ports; record every collection's row count",
        "stop-writes": f"set {FORCE_DENY}=true {where}; wait for Milvus's update event" if where else mechanism,
        "flush": f"FlushAll through gRPC at {options.milvus.uri}; wait up to {options.flush_timeout:.0f} s until every "
        "channel checkpoint (etcd) is at or past the FlushAll timestamp; count rows",
        "stop": f"run `{options.stop_cmd}`; wait until Milvus stops answering" if options.stop_cmd else "no --stop-cmd",
        "switch": f"switch {options.live_config} to {options.to} (atomic, with a backup; diff below)",
        "start": f"run `{options.start_cmd}`; wait for health" if options.start_cmd else "no --start-cmd",
        "verify": f"`try to init mq ... mqType={options.to}` in the log"
        + (f"; jetstream/ under {store}" if options.to == "natsmq" else "")
        + ("; the topics of Milvus's channels on the brokers" if options.to == "kafka" else "")
        + "; every collection loads with the same row count; channel checkpoints move "
        "past the start (a warning if not)",
        "resume-writes": f"put {FORCE_DENY} back to its old value; wait for the update event",
        "backup": (
            f"archive {dirs} with a checksum manifest into {options.backup_dir}, read it back"
            + ("; then delete them" if options.cleanup else "")
        )
        if options.backup_dir
        else "skipped (no --backup-dir)",
    }
    return Plan(
        evidence.source_mq,
        options.to,
        evidence.milvus_version or options.milvus_version,
        [PlannedStep(name, actions[name]) for name in actions],
        checked.findings,
        evidence.counts or {},
        diff,
        _checkpoints_now(options, checked.findings),
    )


def _checkpoints_now(options: MigrateOptions, findings: list[Finding]) -> CheckpointRows:
    """The channel checkpoints the flush step will wait on; a finding when etcd cannot be read."""
    try:
        return read_checkpoints(options)
    except MqctlError as err:
        findings.append(
            Finding(
                "checkpoints-unread",
                WARNING,
                f"channel checkpoints not read: {err.message}",
                hint=err.hint or "pass --etcd http://HOST:2379 (Milvus's etcd)",
            )
        )
        return []


def refuse_journal_in_mq_data(options: MigrateOptions, path: Path) -> None:
    """The journal must not sit in, or hold, a folder the migration archives, cleans up or starts the new MQ
    in: cleanup would delete it (and with it the way to resume or roll back), a backup would archive it, and
    mqctl would write into Milvus's data. Checked from the files alone, before the journal is created."""
    from mqctl.files import overlap

    try:
        res = resolution(options, options.milvus_version)
    except MqctlError:
        return  # preflight reports what is wrong with the config, journaled
    for folder in migration_dirs(res, options):
        if overlap(path, folder):  # the journal file is, or is inside, the folder
            raise InputError(
                f"the migration journal {path} would be inside {folder}, an MQ data folder the migration "
                "archives, starts Milvus on or cleans up",
                hint="pass a --state-dir outside Milvus's MQ folders",
            )


def start(options: MigrateOptions, path: Path, report: Reporter) -> Journal:
    refuse_journal_in_mq_data(options, path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(
            f"cannot create the journal folder {path.parent}: {err.strerror}", hint="pass a writable --state-dir"
        ) from None
    archive_finished(path)
    ctx = Context(Journal.new(path, "?", options.to, options.journaled()), options, report)
    ctx.save_journal()
    return execute(ctx)


def load_options(journal: Journal, milvus: MilvusTarget, overrides: dict[str, Any]) -> MigrateOptions:
    """The journaled options, with what the operator passes again (commands, secrets) on top."""
    options = MigrateOptions.from_journal(journal.options, milvus, overrides)
    journal.options = options.journaled()
    return options


def resume(path: Path, milvus: MilvusTarget, overrides: dict[str, Any], report: Reporter) -> Journal:
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
    return execute(Context(journal, options, report))


def rollback_steps(journal: Journal) -> list[str]:
    """What undoing this journal takes, given how far the migration got."""
    status = {r.name: r.status for r in journal.steps}
    switched, stopped = status["switch"] != PENDING, status["stop"] != PENDING
    cleaned = bool(journal.evidence("backup", BackupEvidence).deleted)
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


def rollback(path: Path, milvus: MilvusTarget, overrides: dict[str, Any], report: Reporter) -> Journal:
    journal = Journal.load(path)
    if journal.state == ROLLED_BACK:
        return journal
    backup = journal.evidence("backup", BackupEvidence)
    if backup.deleted and not backup.read_back:
        raise PreconditionError("the old MQ data was deleted without a verified backup: rollback is impossible")
    ctx = Context(journal, load_options(journal, milvus, overrides), report, rollback=True)
    if journal.state != ROLLING_BACK:
        journal.rollback = [StepRecord(name) for name in rollback_steps(journal)]
        journal.state = ROLLING_BACK
        ctx.save_journal()
    return execute(ctx)
