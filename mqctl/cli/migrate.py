"""`mqctl migrate`: the journaled stop-writes -> FlushAll -> switch -> restart -> verify migration."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mqctl.cli.common import JsonOpt, WideOpt, YesOpt, exit_with, output

if TYPE_CHECKING:
    from rich.console import RenderableType

    from mqctl.cli.terminal import Output
    from mqctl.migrate.context import Reporter
    from mqctl.migrate.journal import Journal, StepRecord
    from mqctl.migrate.milvus import MilvusTarget
    from mqctl.migrate.options import MigrateOptions

app = typer.Typer(
    help="Journaled, resumable MQ migration: stop writes, FlushAll, switch, restart, verify.",
    invoke_without_command=True,
)

ConfigOpt = Annotated[list[Path] | None, typer.Option("--config", help="Milvus config file(s), merge order.")]
ToOpt = Annotated[str | None, typer.Option("--to", help="Target MQ: natsmq, rocksmq, pulsar, kafka, woodpecker.")]
MilvusOpt = Annotated[str | None, typer.Option("--milvus", help="Milvus gRPC URI, e.g. http://127.0.0.1:19530.")]
UserOpt = Annotated[str, typer.Option("--user", help="Milvus user.")]
PasswordOpt = Annotated[
    str, typer.Option("--password", envvar="MQCTL_MILVUS_PASSWORD", help="Milvus password (never journaled).")
]
TokenOpt = Annotated[str, typer.Option("--token", envvar="MQCTL_MILVUS_TOKEN", help="Milvus token (never journaled).")]
ServerPemOpt = Annotated[str, typer.Option("--server-pem", help="CA/server certificate for TLS.")]
ServerNameOpt = Annotated[str, typer.Option("--server-name", help="TLS server name.")]
EtcdOpt = Annotated[str | None, typer.Option("--etcd", help="etcd client URL (overrides; forceDeny where active).")]
EtcdRootOpt = Annotated[
    str | None, typer.Option("--etcd-root", help="etcd.rootPath of this Milvus (default: the config's, else by-dev).")
]
StopOpt = Annotated[str | None, typer.Option("--stop-cmd", help="Command that stops Milvus.")]
StartOpt = Annotated[str | None, typer.Option("--start-cmd", help="Command that starts Milvus.")]
ShellOpt = Annotated[bool, typer.Option("--shell", help="Run the commands through /bin/sh.")]
LogFileOpt = Annotated[str | None, typer.Option("--log-file", help="File Milvus logs to.")]
LogCmdOpt = Annotated[str | None, typer.Option("--log-cmd", help="Command printing Milvus's recent log.")]
HealthOpt = Annotated[str | None, typer.Option("--health-url", help="Milvus /healthz URL (port 9091).")]
BackupOpt = Annotated[str | None, typer.Option("--backup-dir", help="Archive the old MQ folders here.")]
CleanupOpt = Annotated[bool, typer.Option("--cleanup", help="Delete the old MQ folders once archived and verified.")]
WritesStoppedOpt = Annotated[
    bool, typer.Option("--writes-stopped", help="Writers are stopped already; skip forceDeny.")
]
ClearOpt = Annotated[bool, typer.Option("--clear-etcd-override", help="Delete a conflicting etcd mq.type (journaled).")]
StoreOpt = Annotated[str | None, typer.Option("--store-dir", help="natsmq.server.storeDir / rocksmq.path to use.")]
NatsPortOpt = Annotated[int | None, typer.Option("--nats-port", help="natsmq.server.port to use.")]
VersionOpt = Annotated[
    str | None, typer.Option("--milvus-version", help="Milvus version (else asked from the server).")
]
StateOpt = Annotated[
    Path | None, typer.Option("--state-dir", help="Folder for the journal (default: next to the config).")
]
SandboxOpt = Annotated[Path | None, typer.Option("--sandbox", help="Fill every option from `mqctl sandbox` in DIR.")]
FlushTimeoutOpt = Annotated[
    float | None, typer.Option("--flush-timeout", help="Seconds to wait for FlushAll [default: 600].")
]
StartTimeoutOpt = Annotated[
    float | None, typer.Option("--start-timeout", help="Seconds to wait for Milvus to start [default: 300].")
]
ConfirmTimeoutOpt = Annotated[
    float | None,
    typer.Option("--confirm-timeout", help="Seconds to wait for Milvus to log a forceDeny change [default: 90]."),
]


def _sandbox_fill(sandbox: Path | None) -> dict:
    if sandbox is None:
        return {}
    from mqctl.sandbox import Sandbox

    return Sandbox(sandbox).info().migrate_fill()


def _target(params: dict[str, Any], journaled: dict[str, Any] | None = None) -> MilvusTarget:
    """How to reach Milvus: the options given, else what the journal says (secrets are never journaled)."""
    from mqctl.migrate.milvus import MilvusTarget

    known = journaled or {}
    return MilvusTarget(
        params.get("milvus") or known.get("uri") or "",
        params.get("user") or known.get("user") or "",
        params.get("password") or "",
        params.get("token") or "",
        params.get("server_pem") or known.get("server_pem") or "",
        params.get("server_name") or known.get("server_name") or "",
    )


def _journal_path(state_dir, config, sandbox, new: bool = False):
    from mqctl.migrate.journal import journal_path

    filled = _sandbox_fill(sandbox)
    first = str(config[0]) if config else (filled["configs"][0] if filled else None)
    return journal_path(state_dir=str(state_dir) if state_dir else None, config=first, new=new)


def _asked_configs(config, sandbox) -> list[str] | None:
    """The configs the operator named (resolved as the journal records them), None when only --state-dir."""
    if config:
        return [str(Path(p).expanduser().resolve()) for p in config]
    return _sandbox_fill(sandbox).get("configs")


def reporter(out: Output) -> Reporter:
    from rich.text import Text

    from mqctl.migrate.context import Reporter
    from mqctl.migrate.report import summarize

    last_text, last_at = [""], [0.0]

    def waiting(text: str) -> None:
        if text != last_text[0] and time.monotonic() - last_at[0] > 5:
            out.info(Text(f"    {text}", style="dim"))
            last_text[0], last_at[0] = text, time.monotonic()

    def finished(record: StepRecord) -> None:
        mark = {"done": ("✓", "green"), "skipped": ("-", "dim")}.get(record.status, ("✗", "red"))
        out.info(Text.assemble(mark, f" {record.name:<14} {record.seconds or 0:7.1f} s  {summarize(record)}"))

    return Reporter(
        step_started=lambda r: out.info(Text(f"▶ {r.name} ...", style="bold")), step_finished=finished, waiting=waiting
    )


def _steps_table(title, records):
    from mqctl.cli.terminal import KEY, LABEL, NUMBER, TEXT, Column, Output
    from mqctl.migrate.report import summarize

    return Output.table(
        title,
        [Column("step", KEY), Column("status", LABEL, 0), Column("seconds", NUMBER, 1), Column("evidence", TEXT, 0)],
        [(r.name, r.status, f"{r.seconds:.1f}" if r.seconds is not None else "", summarize(r)) for r in records],
    )


def render_journal(journal):
    title = f"migration {journal.source_mq} -> {journal.target_mq}: {journal.state} (journal {journal.path})"
    tables = [_steps_table(title, journal.steps)]
    if journal.rollback:
        tables.append(_steps_table("rollback", journal.rollback))
    return tables


# The options that describe a migration, by parameter name (one bundle for `migrate` and `plan`); the
# values left unset fall back to MigrateOptions's defaults, the one place they are written down.
TIMEOUTS = {
    "flush_timeout": "--flush-timeout",
    "start_timeout": "--start-timeout",
    "confirm_timeout": "--confirm-timeout",
}
PASSED_ON = ("stop_cmd", "start_cmd", "health_url", "etcd")  # taken from --sandbox when not given
FLAGS = ("shell", "cleanup", "writes_stopped", "clear_etcd_override")
AS_GIVEN = ("backup_dir", "store_dir", "nats_port", "milvus_version", *TIMEOUTS)


def migrate_options(params: dict[str, Any]) -> MigrateOptions:
    """The MigrateOptions of one `migrate`/`plan` command line (`params`: its parameters by name)."""
    from mqctl.config.edit import check_backend_name
    from mqctl.errors import InputError
    from mqctl.migrate.options import DEFAULT_ETCD_ROOT, MigrateOptions

    _check_seconds({TIMEOUTS[name]: params.get(name) for name in TIMEOUTS})
    filled = _sandbox_fill(params.get("sandbox"))
    config = params.get("config")
    # realpath, unlike Path.resolve, leaves a symlink loop for the reader to report
    configs = [os.path.realpath(Path(p).expanduser()) for p in config] if config else filled.get("configs")
    if not configs:
        raise InputError("no --config given", hint="pass the milvus.yaml Milvus reads (or --sandbox DIR)")
    for path in configs:
        if not Path(path).is_file():
            raise InputError(
                f"--config {path} does not exist or is not a file", hint="pass the milvus.yaml Milvus reads"
            )
    etcd_root = params.get("etcd_root")
    if etcd_root is None:  # where this Milvus keeps its etcd keys, forceDeny and mq.type overrides included
        from mqctl.config.resolve import resolve

        etcd_root = resolve(configs).value("etcd.rootPath") or DEFAULT_ETCD_ROOT
    to = params.get("to")
    if not to:
        raise InputError("no --to given", hint="pass --to natsmq|rocksmq|pulsar|kafka|woodpecker")
    check_backend_name(to)
    uri = params.get("milvus") or filled.get("milvus")
    if not uri:
        raise InputError("no --milvus given", hint="pass the gRPC URI, e.g. http://127.0.0.1:19530")
    log_cmd = params.get("log_cmd")
    given: dict[str, Any] = {name: params.get(name) or filled.get(name) for name in PASSED_ON}
    given |= {name: bool(params.get(name)) for name in FLAGS}
    given |= {name: params.get(name) for name in AS_GIVEN}
    given |= {"log_cmd": log_cmd, "log_file": params.get("log_file") or (None if log_cmd else filled.get("log_file"))}
    return MigrateOptions(
        configs=configs,
        to=to,
        milvus=_target({**params, "milvus": uri}),
        etcd_root=etcd_root,
        **{name: value for name, value in given.items() if value is not None},
    )


def _check_seconds(timeouts: dict[str, float | None]) -> None:
    """Every timeout a positive, finite number of seconds (None: not given)."""
    import math

    from mqctl.errors import InputError

    for option, seconds in timeouts.items():
        if seconds is not None and not (seconds > 0 and math.isfinite(seconds)):
            raise InputError(
                f"{option} {seconds:g} is not a positive, finite number of seconds", hint=f"e.g. {option} 600"
            )


def render_plan(result):
    from mqctl.cli.terminal import KEY, LABEL, NUMBER, TEXT, Column, Output

    head = (
        f"migration plan: {result.source_mq} -> {result.target_mq} (Milvus {result.milvus_version or '?'}); "
        "nothing was changed"
    )
    items: list[RenderableType] = [
        Output.table(
            head, [Column("step", KEY), Column("what it will do", TEXT, 0)], [(s.name, s.action) for s in result.steps]
        )
    ]
    if result.findings:
        items.append(
            Output.table(
                "preflight findings",
                [
                    Column("code", KEY),
                    Column("level", LABEL, 1),
                    Column("finding", TEXT, 0),
                    Column("how to fix", TEXT, 0),
                ],
                [(f.code, f.severity, f.message, f.hint or "") for f in result.findings],
            )
        )
    if result.counts:
        items.append(
            Output.table(
                "row counts now",
                [Column("collection", KEY), Column("rows", NUMBER, 0)],
                [
                    (n, c["rows"] if c["rows"] is not None else "not loaded (loaded at preflight)")
                    for n, c in result.counts.items()
                ],
            )
        )
    if result.checkpoints:
        items.append(
            Output.table(
                "channel checkpoints now",
                [
                    Column("vchannel", KEY),
                    Column("collection", TEXT, 0),
                    Column("checkpoint (UTC)", TEXT, 1),
                    Column("position", NUMBER, 2),
                    Column("from", LABEL, 3),
                ],
                [(c["vchannel"], c["collection"], c["time"], c["position"], c["from"]) for c in result.checkpoints],
            )
        )
    if result.config_diff:
        from rich.syntax import Syntax

        items.append(Syntax(result.config_diff, "diff", theme="ansi_dark", background_color="default"))
    return items


def _refuse_group_options(ctx: typer.Context) -> None:
    """`mqctl migrate --to natsmq plan`: options before the subcommand belong to `migrate` itself and
    would be dropped without a word; say so and where they go."""
    from click.core import ParameterSource

    from mqctl.errors import InputError

    given = [
        param.opts[0]
        for param in ctx.command.params
        if param.name and ctx.get_parameter_source(param.name) == ParameterSource.COMMANDLINE
    ]
    if given:
        sub = ctx.invoked_subcommand
        raise InputError(
            f"{', '.join(given)} given before `{sub}`: options of `mqctl migrate` do not apply to `migrate {sub}`",
            hint=f"put them after the subcommand: mqctl migrate {sub} {' '.join(given)} ...",
        )


@app.callback()
def migrate(
    ctx: typer.Context,
    config: ConfigOpt = None,
    to: ToOpt = None,
    milvus: MilvusOpt = None,
    user: UserOpt = "",
    password: PasswordOpt = "",
    token: TokenOpt = "",
    server_pem: ServerPemOpt = "",
    server_name: ServerNameOpt = "",
    etcd: EtcdOpt = None,
    etcd_root: EtcdRootOpt = None,
    stop_cmd: StopOpt = None,
    start_cmd: StartOpt = None,
    shell: ShellOpt = False,
    log_file: LogFileOpt = None,
    log_cmd: LogCmdOpt = None,
    health_url: HealthOpt = None,
    backup_dir: BackupOpt = None,
    cleanup: CleanupOpt = False,
    writes_stopped: WritesStoppedOpt = False,
    clear_etcd_override: ClearOpt = False,
    store_dir: StoreOpt = None,
    nats_port: NatsPortOpt = None,
    milvus_version: VersionOpt = None,
    state_dir: StateOpt = None,
    sandbox: SandboxOpt = None,
    flush_timeout: FlushTimeoutOpt = None,
    start_timeout: StartTimeoutOpt = None,
    confirm_timeout: ConfirmTimeoutOpt = None,
    yes: YesOpt = False,
    json_mode: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """Migrate Milvus to another MQ (see `plan`, `status`, `resume`, `rollback`)."""
    if ctx.invoked_subcommand is not None:
        _refuse_group_options(ctx)
        return
    from mqctl.migrate import run

    out = output(json_mode, wide)
    options = migrate_options(ctx.params)
    if json_mode and not yes:
        from mqctl.errors import InputError

        raise InputError("--json runs unattended and needs --yes", hint="look first with `mqctl migrate plan --json`")
    if not yes:
        result = run.plan(options)
        out.emit(result.to_dict(), lambda _: render_plan(result))
        if result.refused:
            exit_with(3)
        if not out.confirm(f"Migrate Milvus to {options.to}?", assume_yes=False):
            exit_with(3)
    path = _journal_path(state_dir, config, sandbox, new=True)
    _emit_journal(out, run.start(options, path, reporter(out)))


def _emit_journal(out: Output, journal: Journal) -> None:
    """The journal as its file says it (`--json`), or as tables."""
    out.emit(journal.to_dict(), lambda _: render_journal(journal))


@app.command()
def plan(
    ctx: typer.Context,
    config: ConfigOpt = None,
    to: ToOpt = None,
    milvus: MilvusOpt = None,
    user: UserOpt = "",
    password: PasswordOpt = "",
    token: TokenOpt = "",
    server_pem: ServerPemOpt = "",
    server_name: ServerNameOpt = "",
    etcd: EtcdOpt = None,
    etcd_root: EtcdRootOpt = None,
    stop_cmd: StopOpt = None,
    start_cmd: StartOpt = None,
    shell: ShellOpt = False,
    log_file: LogFileOpt = None,
    log_cmd: LogCmdOpt = None,
    health_url: HealthOpt = None,
    backup_dir: BackupOpt = None,
    cleanup: CleanupOpt = False,
    writes_stopped: WritesStoppedOpt = False,
    clear_etcd_override: ClearOpt = False,
    store_dir: StoreOpt = None,
    nats_port: NatsPortOpt = None,
    milvus_version: VersionOpt = None,
    sandbox: SandboxOpt = None,
    json_mode: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """Dry run: every step with what it will do, and the preflight findings. Changes nothing (exit 3 if refused)."""
    from mqctl.migrate import run

    result = run.plan(migrate_options(ctx.params))
    output(json_mode, wide).emit(result.to_dict(), lambda _: render_plan(result))
    exit_with(3 if result.refused else 0)


@app.command()
def status(
    config: ConfigOpt = None,
    state_dir: StateOpt = None,
    sandbox: SandboxOpt = None,
    json_mode: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """Where the journaled migration stands, step by step, with evidence."""
    from mqctl.migrate.journal import Journal

    _emit_journal(output(json_mode, wide), Journal.load(_journal_path(state_dir, config, sandbox)))


def _continue(
    action: Callable[[Path, MilvusTarget, dict[str, Any], Reporter], Journal],
    params: dict[str, Any],
    *,
    confirm: str | None = None,
) -> None:
    """resume and rollback: the journal's options, with what the operator gives again on top."""
    timeouts = {name: params.get(name) for name in TIMEOUTS}
    _check_seconds({TIMEOUTS[name]: seconds for name, seconds in timeouts.items()})
    out = output(params["json_mode"], params["wide"])
    filled = _sandbox_fill(params["sandbox"])
    path = _journal_path(params["state_dir"], params["config"], params["sandbox"])
    from mqctl.migrate.journal import Journal

    loaded = Journal.load(path)  # no journal, or not this migration's: say so before asking anything
    loaded.check_belongs(path, _asked_configs(params["config"], params["sandbox"]))
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
    journal = action(path, _target(params, loaded.options["milvus"]), overrides, reporter(out))
    _emit_journal(out, journal)


@app.command()
def resume(
    ctx: typer.Context,
    config: ConfigOpt = None,
    state_dir: StateOpt = None,
    sandbox: SandboxOpt = None,
    milvus: MilvusOpt = None,
    user: UserOpt = "",
    password: PasswordOpt = "",
    token: TokenOpt = "",
    server_pem: ServerPemOpt = "",
    server_name: ServerNameOpt = "",
    stop_cmd: StopOpt = None,
    start_cmd: StartOpt = None,
    log_file: LogFileOpt = None,
    log_cmd: LogCmdOpt = None,
    etcd: EtcdOpt = None,
    writes_stopped: WritesStoppedOpt = False,
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
    json_mode: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """Continue a stopped or crashed migration from its journal (commands, timeouts, etcd may be given anew)."""
    from mqctl.migrate import run

    _continue(run.resume, ctx.params)


@app.command()
def rollback(
    ctx: typer.Context,
    config: ConfigOpt = None,
    state_dir: StateOpt = None,
    sandbox: SandboxOpt = None,
    milvus: MilvusOpt = None,
    user: UserOpt = "",
    password: PasswordOpt = "",
    token: TokenOpt = "",
    server_pem: ServerPemOpt = "",
    server_name: ServerNameOpt = "",
    stop_cmd: StopOpt = None,
    start_cmd: StartOpt = None,
    log_file: LogFileOpt = None,
    log_cmd: LogCmdOpt = None,
    etcd: EtcdOpt = None,
    writes_stopped: WritesStoppedOpt = False,
    yes: YesOpt = False,
    json_mode: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """Undo the journaled migration: restore the config and etcd values (and data from the backup), restart, verify."""
    from mqctl.migrate import run

    _continue(run.rollback, ctx.params, confirm="Roll the migration back?")
