"""The options of `mqctl migrate` and its subcommands, declared once, and the one place they become a
`MigrateOptions` (`migrate_options()`); what is not given falls back to MigrateOptions's defaults."""

from __future__ import annotations

import functools
import os
import typing
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from mqctl.cli.common import Command, EtcdOpt, EtcdRootOpt, MilvusOpt, takes_bundle
from mqctl.migrate.options import MigrateOptions

if TYPE_CHECKING:
    from mqctl.milvus.client import MilvusTarget

ConfigOpt = Annotated[list[Path] | None, typer.Option("--config", help="Milvus config file(s), merge order.")]
ToOpt = Annotated[str | None, typer.Option("--to", help="Target MQ: natsmq, rocksmq, pulsar, kafka, woodpecker.")]
UserOpt = Annotated[str, typer.Option("--user", help="Milvus user.")]
PasswordOpt = Annotated[
    str, typer.Option("--password", envvar="MQCTL_MILVUS_PASSWORD", help="Milvus password (never journaled).")
]
TokenOpt = Annotated[str, typer.Option("--token", envvar="MQCTL_MILVUS_TOKEN", help="Milvus token (never journaled).")]
ServerPemOpt = Annotated[str, typer.Option("--server-pem", help="CA/server certificate for TLS.")]
ServerNameOpt = Annotated[str, typer.Option("--server-name", help="TLS server name.")]
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
NoProbeOpt = Annotated[
    bool,
    typer.Option(
        "--no-write-probe",
        help="Confirm stop-writes and resume-writes from Milvus's log and the quota rounds only, without the "
        "zero-row insert into a collection that otherwise confirms them at once (it writes nothing).",
    ),
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
KafkaOpt = Annotated[
    str | None,
    typer.Option(
        "--kafka",
        help="With --to kafka: the brokers' HOST:PORT[,HOST:PORT] the switch writes to kafka.brokerList "
        "(with --sandbox: its own broker when it runs one).",
    ),
]
SandboxOpt = Annotated[Path | None, typer.Option("--sandbox", help="Fill every option from `mqctl sandbox` in DIR.")]


def _default(name: str) -> str:
    """A MigrateOptions default as --help shows it (the defaults are written down there only)."""
    return f"[default: {MigrateOptions.__dataclass_fields__[name].default:g}]"


FlushTimeoutOpt = Annotated[
    float | None, typer.Option("--flush-timeout", help=f"Seconds to wait for FlushAll {_default('flush_timeout')}.")
]
StartTimeoutOpt = Annotated[
    float | None,
    typer.Option("--start-timeout", help=f"Seconds to wait for Milvus to start {_default('start_timeout')}."),
]
ConfirmTimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--confirm-timeout", help=f"Seconds to wait for Milvus to log a forceDeny change {_default('confirm_timeout')}."
    ),
]


def sandbox_fill(sandbox: Path | str | None) -> dict[str, Any]:
    if sandbox is None:
        return {}
    from mqctl.sandbox.server import Sandbox

    return Sandbox(sandbox).info().migrate_fill()


def milvus_target(params: dict[str, Any], journaled: dict[str, Any] | None = None) -> MilvusTarget:
    """How to reach Milvus: the options given, else what the journal says (secrets are never journaled)."""
    from mqctl.milvus.client import MilvusTarget

    known = journaled or {}
    return MilvusTarget(
        params.get("milvus") or known.get("uri") or "",
        params.get("user") or known.get("user") or "",
        params.get("password") or "",
        params.get("token") or "",
        params.get("server_pem") or known.get("server_pem") or "",
        params.get("server_name") or known.get("server_name") or "",
    )


def journal_file(
    state_dir: Path | str | None, config: list[Path] | list[str] | None, sandbox: Path | str | None, new: bool = False
) -> Path:
    from mqctl.migrate.record.journal import journal_path

    filled = sandbox_fill(sandbox)
    first = str(config[0]) if config else (filled["configs"][0] if filled else None)
    return journal_path(state_dir=str(state_dir) if state_dir else None, config=first, new=new)


def asked_configs(config: list[Path] | list[str] | None, sandbox: Path | str | None) -> list[str] | None:
    """The configs the operator named (resolved as the journal records them), None when only --state-dir."""
    if config:
        return [str(Path(p).expanduser().resolve()) for p in config]
    return sandbox_fill(sandbox).get("configs")


TIMEOUTS = {
    "flush_timeout": "--flush-timeout",
    "start_timeout": "--start-timeout",
    "confirm_timeout": "--confirm-timeout",
}
# The options that describe a migration, by parameter name, in --help order: one bundle for `migrate` and
# `plan` (`takes_migration`); the values left unset fall back to MigrateOptions's defaults, the one place
# they are written down.
MIGRATION_OPTIONS: dict[str, Any] = {
    "config": ConfigOpt,
    "to": ToOpt,
    "milvus": MilvusOpt,
    "user": UserOpt,
    "password": PasswordOpt,
    "token": TokenOpt,
    "server_pem": ServerPemOpt,
    "server_name": ServerNameOpt,
    "etcd": EtcdOpt,
    "etcd_root": EtcdRootOpt,
    "stop_cmd": StopOpt,
    "start_cmd": StartOpt,
    "shell": ShellOpt,
    "log_file": LogFileOpt,
    "log_cmd": LogCmdOpt,
    "health_url": HealthOpt,
    "backup_dir": BackupOpt,
    "cleanup": CleanupOpt,
    "writes_stopped": WritesStoppedOpt,
    "no_write_probe": NoProbeOpt,
    "clear_etcd_override": ClearOpt,
    "store_dir": StoreOpt,
    "nats_port": NatsPortOpt,
    "kafka": KafkaOpt,
    "milvus_version": VersionOpt,
    "state_dir": StateOpt,
    "sandbox": SandboxOpt,
    "flush_timeout": FlushTimeoutOpt,
    "start_timeout": StartTimeoutOpt,
    "confirm_timeout": ConfirmTimeoutOpt,
}
RUN_ONLY = ("state_dir", *TIMEOUTS)  # what only starting a migration uses, not `plan`
PASSED_ON = ("stop_cmd", "start_cmd", "health_url", "etcd")  # taken from --sandbox when not given
FLAGS = ("shell", "cleanup", "writes_stopped", "no_write_probe", "clear_etcd_override")
AS_GIVEN = ("backup_dir", "store_dir", "nats_port", "milvus_version", *TIMEOUTS)


def migrate_options(params: dict[str, Any]) -> MigrateOptions:
    """The MigrateOptions of one `migrate`/`plan` command line (`params`: its parameters by name)."""
    from mqctl.config.edit.set_unset import check_backend_name
    from mqctl.config.resolve.sources import DEFAULT_ETCD_ROOT
    from mqctl.errors import InputError

    check_seconds({TIMEOUTS[name]: params.get(name) for name in TIMEOUTS})
    filled = sandbox_fill(params.get("sandbox"))
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
        from mqctl.config.resolve.resolution import resolve

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
    given["kafka"] = params.get("kafka") or (filled.get("kafka") if to == "kafka" else None)
    return MigrateOptions(
        configs=configs,
        to=to,
        milvus=milvus_target({**params, "milvus": uri}),
        etcd_root=etcd_root,
        **{name: value for name, value in given.items() if value is not None},
    )


def takes_migration(*, run: bool = True) -> Callable[[Command], Command]:
    """Give a command the migration options in place of its `options: MigrateOptions` parameter, and call it
    with them built by `migrate_options`. `run=False` leaves out what only a run uses (`plan`)."""
    unset = {str: "", bool: False}  # an option not given: MigrateOptions has the defaults
    options = {
        name: (annotation, unset.get(typing.get_args(annotation)[0]))
        for name, annotation in MIGRATION_OPTIONS.items()
        if run or name not in RUN_ONLY
    }
    return takes_bundle("options", options, migrate_options)


def group_callback(callback: Command) -> Command:
    """A group's callback that does its own work only without a subcommand; options given to it before a
    subcommand are refused (`refuse_group_options`)."""

    @functools.wraps(callback)
    def run(ctx: typer.Context, *args: Any, **kwargs: Any) -> Any:
        if ctx.invoked_subcommand is not None:
            refuse_group_options(ctx)
            return None
        return callback(ctx, *args, **kwargs)

    return cast(Command, run)


def check_seconds(timeouts: dict[str, float | None]) -> None:
    """Every timeout a positive, finite number of seconds (None: not given)."""
    import math

    from mqctl.errors import InputError

    for option, seconds in timeouts.items():
        if seconds is not None and not (seconds > 0 and math.isfinite(seconds)):
            raise InputError(
                f"{option} {seconds:g} is not a positive, finite number of seconds", hint=f"e.g. {option} 600"
            )


def refuse_group_options(ctx: typer.Context) -> None:
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
