"""`mqctl migrate`: the journaled stop-writes -> FlushAll -> switch -> restart -> verify migration."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mqctl.cli.common import EtcdOpt, MilvusOpt, YesOpt, exit_with, output, takes_bundle
from mqctl.cli.context import presentation
from mqctl.cli.measure import MeasureOpt
from mqctl.cli.migrate.measured import check_can_measure, emit_measured_journal, measure_before
from mqctl.cli.migrate.options import (
    TIMEOUTS,
    ConfigOpt,
    LogCmdOpt,
    LogFileOpt,
    PasswordOpt,
    SandboxOpt,
    ServerNameOpt,
    ServerPemOpt,
    StartOpt,
    StateOpt,
    StopOpt,
    TokenOpt,
    UserOpt,
    WritesStoppedOpt,
    asked_configs,
    check_seconds,
    group_callback,
    journal_file,
    milvus_target,
    sandbox_fill,
    takes_migration,
)
from mqctl.cli.migrate.render import emit_journal, emit_plan, reporter
from mqctl.migrate.options import MigrateOptions

if TYPE_CHECKING:
    from mqctl.migrate.context import Reporter
    from mqctl.migrate.record.journal import Journal
    from mqctl.milvus.client import MilvusTarget


app = typer.Typer(
    help="Journaled, resumable MQ migration: stop writes, FlushAll, switch, restart, verify.",
    invoke_without_command=True,
)


@app.callback()
@group_callback
@takes_migration()
def migrate(
    ctx: typer.Context,
    options: MigrateOptions,
    yes: YesOpt = False,
    measure: MeasureOpt = False,
) -> None:
    """Migrate Milvus to another MQ (see `plan`, `status`, `resume`, `rollback`)."""
    from mqctl.migrate import alter_wal, run

    out = output()
    alter_wal.refuse_run(options)  # 2.6+: a file edit does not switch the MQ; mqctl does not call AlterWAL
    check_can_measure(measure, options.writes_stopped)
    if presentation().json and not yes:
        from mqctl.errors import InputError

        raise InputError("--json runs unattended and needs --yes", hint="look first with `mqctl migrate plan --json`")
    if not yes:
        result = run.plan(options)
        emit_plan(out, result)
        if result.refused:
            exit_with(3)
        if not out.confirm(f"Migrate Milvus to {options.to}?", assume_yes=False):
            exit_with(3)
    # where the journal goes is no part of the migration: the options as given
    path = journal_file(ctx.params["state_dir"], ctx.params["config"], ctx.params["sandbox"], new=True)
    before = measure_before(options.milvus, out.info) if measure else None
    journal = run.start(options, path, reporter(out))
    if before is None:
        emit_journal(out, journal)
    else:
        emit_measured_journal(out, journal, options.milvus, before)


@app.command()
@takes_migration(run=False)
def plan(options: MigrateOptions) -> None:
    """Dry run: every step with what it will do, and the preflight findings. Changes nothing (exit 3 if refused).

    On Milvus 2.6+ with --etcd the AlterWAL plan also reads the Streaming Service state (WAL checkpoints, AlterWAL
    stage, Woodpecker meta): format from Milvus v2.6.x / Woodpecker v0.1.x source; not yet verified on a running
    2.6."""
    from mqctl.migrate import alter_wal, run

    result = alter_wal.plan(options) if alter_wal.applies(options) else run.plan(options)
    emit_plan(output(), result)
    exit_with(3 if result.refused else 0)


@app.command()
def status(
    config: ConfigOpt = None,
    state_dir: StateOpt = None,
    sandbox: SandboxOpt = None,
) -> None:
    """Where the journaled migration stands, step by step, with evidence."""
    from mqctl.migrate.record.journal import Journal

    emit_journal(output(), Journal.load(journal_file(state_dir, config, sandbox)))


def _continue(
    action: Callable[[Path, MilvusTarget, dict[str, Any], Reporter], Journal],
    params: dict[str, Any],
    *,
    confirm: str | None = None,
) -> None:
    """resume and rollback: the journal's options, with what the operator gives again on top."""
    timeouts = {name: params.get(name) for name in TIMEOUTS}
    check_seconds({TIMEOUTS[name]: seconds for name, seconds in timeouts.items()})
    out = output()
    filled = sandbox_fill(params["sandbox"])
    path = journal_file(params["state_dir"], params["config"], params["sandbox"])
    from mqctl.migrate.record.journal import Journal

    loaded = Journal.load(path)  # no journal, or not this migration's: say so before asking anything
    loaded.check_belongs(path, asked_configs(params["config"], params["sandbox"]))
    if confirm and not out.confirm(confirm, assume_yes=params.get("yes", False)):
        exit_with(3)
    overrides = {
        "stop_cmd": params["stop_cmd"] or filled.get("stop_cmd"),
        "start_cmd": params["start_cmd"] or filled.get("start_cmd"),
        "log_file": params["log_file"],
        "log_cmd": params["log_cmd"],
        "etcd": params["etcd"],
        "writes_stopped": True if params["writes_stopped"] else None,  # None keeps the journaled value
        **timeouts,
    }
    journal = action(path, milvus_target(params, loaded.options["milvus"]), overrides, reporter(out))
    emit_journal(out, journal)


# what resume and rollback take again (the journal has the rest), declared once for both
CONTINUE_OPTIONS: dict[str, tuple[Any, Any]] = {
    "config": (ConfigOpt, None),
    "state_dir": (StateOpt, None),
    "sandbox": (SandboxOpt, None),
    "milvus": (MilvusOpt, None),
    "user": (UserOpt, ""),
    "password": (PasswordOpt, ""),
    "token": (TokenOpt, ""),
    "server_pem": (ServerPemOpt, ""),
    "server_name": (ServerNameOpt, ""),
    "stop_cmd": (StopOpt, None),
    "start_cmd": (StartOpt, None),
    "log_file": (LogFileOpt, None),
    "log_cmd": (LogCmdOpt, None),
    "etcd": (EtcdOpt, None),
    "writes_stopped": (WritesStoppedOpt, False),
}


@app.command()
@takes_bundle("given", CONTINUE_OPTIONS, dict)
def resume(
    *,
    given: dict[str, Any],
    flush_timeout: Annotated[
        float | None, typer.Option("--flush-timeout", help="Seconds to wait for FlushAll (default: as journaled).")
    ] = None,
    start_timeout: Annotated[
        float | None,
        typer.Option("--start-timeout", help="Seconds to wait for Milvus to start (default: as journaled)."),
    ] = None,
    confirm_timeout: Annotated[
        float | None,
        typer.Option("--confirm-timeout", help="Seconds to wait for a forceDeny event (default: as journaled)."),
    ] = None,
) -> None:
    """Continue a stopped or crashed migration from its journal (commands, timeouts, etcd may be given anew)."""
    from mqctl.migrate import run

    timeouts = {"flush_timeout": flush_timeout, "start_timeout": start_timeout, "confirm_timeout": confirm_timeout}
    _continue(run.resume, {**given, **timeouts})


@app.command()
@takes_bundle("given", CONTINUE_OPTIONS, dict)
def rollback(
    *,
    given: dict[str, Any],
    yes: YesOpt = False,
) -> None:
    """Undo the journaled migration: restore the config and etcd values (and data from the backup), restart, verify."""
    from mqctl.migrate import run

    params = {**given, "yes": yes}
    _continue(run.rollback, params, confirm="Roll the migration back?")
