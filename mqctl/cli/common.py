"""Options and helpers shared by every command group (parsing and printing only)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar, cast

import typer

from mqctl.cli.context import presentation
from mqctl.cli.terminal import Output
from mqctl.mq.sources import SourceOptions

YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Show what would change; write nothing.")]
# the options that name this Milvus's servers, declared once for every command that takes them
EtcdOpt = Annotated[
    str | None,
    typer.Option(
        "--etcd",
        help="etcd client URL of this Milvus, e.g. http://127.0.0.1:2379 (config overrides, channel meta, "
        "forceDeny); where a command can, the default is the config's etcd.endpoints.",
    ),
]
EtcdRootOpt = Annotated[
    str | None,
    typer.Option("--etcd-root", help="etcd.rootPath of this Milvus (default: the config's, else by-dev)."),
]
MilvusOpt = Annotated[str | None, typer.Option("--milvus", help="Milvus gRPC URI, e.g. http://127.0.0.1:19530.")]
WOODPECKER_STATUS = (
    "Format from Woodpecker v0.1.x / Milvus v2.6.x source, verified against upstream's code: read back entry by entry "
    "from what upstream's Woodpecker (v0.1.13 through Milvus's wp adapter, v0.1.37) wrote, and replayed in batch and "
    "--follow while it appends; not yet verified on a running 2.6. s3:// reads: tested "
    "against moto's S3 server, not yet against MinIO or AWS."
)
S3_ENDPOINT_HELP = (
    "MinIO/S3 endpoint of an s3:// --woodpecker, e.g. http://127.0.0.1:9000 (default: with --config its "
    "minio.address/port/useSSL, else env AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, else AWS S3). Credentials: the "
    "config's minio.accessKeyID/secretAccessKey, else env AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/"
    "AWS_SESSION_TOKEN, MINIO_ACCESS_KEY/MINIO_SECRET_KEY, the AWS credentials file or the mc alias MINIO_ALIAS; never options."
)
S3EndpointOpt = Annotated[str | None, typer.Option("--s3-endpoint", help=S3_ENDPOINT_HELP, show_default=False)]


def seconds(maximum: float, *, positive: bool = False) -> Callable[[float | None], float | None]:
    """A typer callback for an option that is a number of seconds: finite and within [0, maximum] (or
    (0, maximum]); `inf`, `nan` and `1e308` are usage errors (exit 2) before anything runs."""

    def check(value: float | None) -> float | None:
        if value is None:
            return value
        low_ok = value > 0 if positive else value >= 0
        if not (math.isfinite(value) and low_ok and value <= maximum):
            lowest = "above 0" if positive else "from 0"
            raise typer.BadParameter(f"{value:g} is not a number of seconds {lowest} to {maximum:g}")
        return value

    return check


def output() -> Output:
    """The Output for this invocation: --json, --wide and --no-color as the root context holds them."""
    shown = presentation()
    return Output(json_mode=shown.json, no_color=shown.no_color, wide=shown.wide)


def exit_with(code: int) -> None:
    """End the command with an exit code (0 returns normally)."""
    if code:
        raise typer.Exit(code)


# --- the source options of channels, retention and replay: one bundle, built into a SourceOptions ----------------
SOURCE = "Source (choose one)"
NATS_AUTH = "Authentication and TLS (NATS; Kafka SASL and TLS)"
CONFIG_HELP = "milvus.yaml/user.yaml/CR/Helm values: derive the source on this host (repeat for several files)."
SOURCE_OPTIONS: dict[str, Any] = {
    "rocksmq": Annotated[
        Path | None,
        typer.Option(
            "--rocksmq",
            help="RocksMQ directory (rocksmq.path); read-only, also while Milvus runs.",
            rich_help_panel=SOURCE,
        ),
    ],
    "nats": Annotated[
        str | None,
        typer.Option("--nats", help="Live NATS server URL, e.g. nats://127.0.0.1:4222.", rich_help_panel=SOURCE),
    ],
    "nats_store": Annotated[
        Path | None,
        typer.Option(
            "--nats-store",
            help="natsmq storeDir of a stopped Milvus; read through a private nats-server.",
            rich_help_panel=SOURCE,
        ),
    ],
    "woodpecker": Annotated[
        str | None,  # not a Path: an s3:// URL must reach the source intact
        typer.Option(
            "--woodpecker",
            help="Milvus 2.6+ Woodpecker WAL, read-only with CRCs checked: the local folder (<localStorage.path>/wp), "
            "a copy of its bucket, or s3://BUCKET/PREFIX (see --s3-endpoint); --etcd names its logs after their "
            "pchannels. " + WOODPECKER_STATUS,
            rich_help_panel=SOURCE,
        ),
    ],
    "s3_endpoint": Annotated[
        str | None, typer.Option("--s3-endpoint", help=S3_ENDPOINT_HELP, show_default=False, rich_help_panel=SOURCE)
    ],
    "kafka": Annotated[
        str | None,
        typer.Option(
            "--kafka",
            help="Kafka bootstrap brokers, HOST:PORT[,HOST:PORT] (kafka.brokerList); Milvus's topics, read without "
            "joining a group or committing.",
            rich_help_panel=SOURCE,
        ),
    ],
    "topic_prefix": Annotated[
        str | None,
        typer.Option(
            "--topic-prefix",
            help="Kafka: only the topics starting with it, e.g. by-dev- (default: every topic; with --config, its "
            "msgChannel.chanNamePrefix.cluster followed by -).",
            rich_help_panel=SOURCE,
        ),
    ],
    "config": Annotated[list[Path] | None, typer.Option("--config", help=CONFIG_HELP, rich_help_panel=SOURCE)],
    "user": Annotated[
        str | None, typer.Option("--user", help="NATS user, or Kafka SASL user.", rich_help_panel=NATS_AUTH)
    ],
    "password": Annotated[
        str | None,
        typer.Option(
            "--password",
            help="NATS password or Kafka SASL password (or env MQCTL_NATS_PASSWORD / MQCTL_KAFKA_PASSWORD).",
            envvar=["MQCTL_NATS_PASSWORD", "MQCTL_KAFKA_PASSWORD"],
            rich_help_panel=NATS_AUTH,
        ),
    ],
    "security_protocol": Annotated[
        str | None,
        typer.Option(
            "--security-protocol",
            help="Kafka security.protocol: plaintext, ssl, sasl_plaintext or sasl_ssl (kafka.securityProtocol).",
            rich_help_panel=NATS_AUTH,
        ),
    ],
    "sasl_mechanism": Annotated[
        str | None,
        typer.Option(
            "--sasl-mechanism",
            help="Kafka SASL mechanism, e.g. PLAIN or SCRAM-SHA-512 (kafka.saslMechanisms; default PLAIN).",
            rich_help_panel=NATS_AUTH,
        ),
    ],
    "token": Annotated[
        str | None,
        typer.Option(
            "--token",
            help="NATS token (or env MQCTL_NATS_TOKEN).",
            envvar="MQCTL_NATS_TOKEN",
            rich_help_panel=NATS_AUTH,
        ),
    ],
    "creds": Annotated[
        str | None, typer.Option("--creds", help="NATS .creds file (JWT + seed).", rich_help_panel=NATS_AUTH)
    ],
    "nkey": Annotated[str | None, typer.Option("--nkey", help="NATS nkey seed file.", rich_help_panel=NATS_AUTH)],
    "tls_ca": Annotated[str | None, typer.Option("--tls-ca", help="CA certificate file.", rich_help_panel=NATS_AUTH)],
    "tls_cert": Annotated[
        str | None, typer.Option("--tls-cert", help="Client certificate file.", rich_help_panel=NATS_AUTH)
    ],
    "tls_key": Annotated[str | None, typer.Option("--tls-key", help="Client key file.", rich_help_panel=NATS_AUTH)],
    "timeout": Annotated[
        float, typer.Option("--timeout", help="Seconds for each NATS or Kafka request.", rich_help_panel=NATS_AUTH)
    ],
}
Command = TypeVar("Command", bound=Callable[..., Any])


def takes_bundle(
    name: str, options: dict[str, tuple[Any, Any]], build: Callable[[dict[str, Any]], Any]
) -> Callable[[Command], Command]:
    """Give a command `options` (parameter name: annotation, default) in place of its parameter `name`, and call
    it with `build(their values)` there: options declared once, shared by several commands, reaching each as
    one typed object."""
    added = [
        inspect.Parameter(option, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
        for option, (annotation, default) in options.items()
    ]

    def decorate(command: Command) -> Command:
        signature = inspect.signature(command, eval_str=True)
        own = list(signature.parameters.values())
        at = [p.name for p in own].index(name)

        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            kwargs[name] = build({option: kwargs.pop(option) for option in options})
            return command(*args, **kwargs)

        keyword = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own]
        shown = signature.replace(parameters=keyword[:at] + added + keyword[at + 1 :])
        run.__signature__ = shown  # type: ignore[attr-defined]  # what typer reads the options from
        run.__annotations__ = {p.name: p.annotation for p in shown.parameters.values()}
        return cast(Command, run)

    return decorate


def takes_source(
    *,
    rocksmq: bool = True,
    woodpecker: bool = True,
    config_first: bool = False,
    config_help: str | None = None,
    config_required: bool = True,
) -> Callable[[Command], Command]:
    """Give a command the source options in place of its `source: SourceOptions` parameter, and call it with them
    built into one SourceOptions (whose field defaults are the options' defaults).

    `rocksmq=False` leaves out --rocksmq (commands that change NATS streams), `woodpecker=False` --woodpecker and
    --s3-endpoint (commands that cannot read it, or declare them themselves); `config_first` lists --config
    first; `config_help` gives --config this help and makes it required (the config is what the command applies)
    unless `config_required` is false (the command checks it where it needs it)."""
    names = [
        name
        for name in SOURCE_OPTIONS
        if (rocksmq or name != "rocksmq") and (woodpecker or name not in ("woodpecker", "s3_endpoint"))
    ]
    if config_first:
        names.remove("config")
        names.insert(0, "config")
    defaults = {f.name: f.default for f in dataclasses.fields(SourceOptions)}
    options = {}
    for name in names:
        annotation, default = SOURCE_OPTIONS[name], defaults[name]
        if name == "config":
            default = None  # a list option: SourceOptions makes it []
            if config_help is not None:
                annotation = Annotated[list[str], typer.Option("--config", help=config_help, show_default=False)]
                default = inspect.Parameter.empty if config_required else None
        options[name] = (annotation, default)

    def build(values: dict[str, Any]) -> SourceOptions:
        return SourceOptions(**{**values, "config": [Path(file) for file in values["config"] or []]})

    return takes_bundle("source", options, build)
