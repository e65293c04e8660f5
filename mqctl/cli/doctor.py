"""`mqctl doctor`: one verdict on the Milvus running here (parsing and printing only)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import click
import typer

from mqctl.cli.common import exit_with, output, takes_bundle
from mqctl.cli.context import presentation, settings

if TYPE_CHECKING:
    from rich.console import RenderableType

    from mqctl.doctor.discovery import Request
    from mqctl.doctor.verdict import Report

app = typer.Typer(
    help="Is my Milvus healthy? Find the Milvus running here, check its MQ, one verdict.", add_completion=False
)

FORMATS = ["text", "json", "prometheus", "nagios"]
TARGET = "Target (default: the `milvus run standalone` process of this host)"
ELSEWHERE = "A Milvus elsewhere (a container's mounted config, a Helm release's port-forwards)"


PidOpt = Annotated[int | None, typer.Option("--pid", help="Examine this Milvus process.", rich_help_panel=TARGET)]
SandboxOpt = Annotated[
    Path | None, typer.Option("--sandbox", help="Examine the `mqctl sandbox` in DIR.", rich_help_panel=TARGET)
]
ConfigsOpt = Annotated[
    list[Path] | None,
    typer.Option("--config", help="milvus.yaml [user.yaml] it reads (repeat, merge order).", rich_help_panel=ELSEWHERE),
]
TargetEtcdOpt = Annotated[
    str | None,
    typer.Option("--etcd", help="Its etcd client URL, e.g. http://127.0.0.1:2379.", rich_help_panel=ELSEWHERE),
]
TargetEtcdRootOpt = Annotated[
    str | None, typer.Option("--etcd-root", help="etcd.rootPath (default: from the config).", rich_help_panel=ELSEWHERE)
]
TargetMilvusOpt = Annotated[
    str | None,
    typer.Option("--milvus", help="Its gRPC URI, e.g. http://127.0.0.1:19530.", rich_help_panel=ELSEWHERE),
]
RocksmqOpt = Annotated[
    Path | None, typer.Option("--rocksmq", help="Its RocksMQ directory (rocksmq.path).", rich_help_panel=ELSEWHERE)
]
NatsOpt = Annotated[
    str | None,
    typer.Option("--nats", help="Its live NATS URL, e.g. nats://127.0.0.1:4222.", rich_help_panel=ELSEWHERE),
]
NatsStoreOpt = Annotated[
    Path | None, typer.Option("--nats-store", help="Its natsmq storeDir (Milvus stopped).", rich_help_panel=ELSEWHERE)
]
VersionOpt = Annotated[
    str | None,
    typer.Option(
        "--milvus-version", help="Its version, e.g. 2.3.5 (default: its log banner).", rich_help_panel=ELSEWHERE
    ),
]
TimeoutOpt = Annotated[
    float, typer.Option("--timeout", min=0.1, help="Seconds for each network call (etcd, NATS, /healthz).")
]


# the target options, declared once: doctor, exporter and bundle take them as one Target
TARGET_OPTIONS: dict[str, tuple[Any, Any]] = {
    "pid": (PidOpt, None),
    "sandbox": (SandboxOpt, None),
    "config": (ConfigsOpt, None),
    "etcd": (TargetEtcdOpt, None),
    "etcd_root": (TargetEtcdRootOpt, None),
    "milvus": (TargetMilvusOpt, None),
    "rocksmq": (RocksmqOpt, None),
    "nats": (NatsOpt, None),
    "nats_store": (NatsStoreOpt, None),
    "milvus_version": (VersionOpt, None),
    "timeout": (TimeoutOpt, 5.0),
}


@dataclass(frozen=True)
class Target:
    """The target options as given; `request()` checks them (exit 2 on a conflict) and makes the doctor's Request,
    when the command is ready to report what it says (the Nagios line reports a conflict as UNKNOWN)."""

    pid: int | None
    sandbox: Path | None
    config: list[Path] | None
    etcd: str | None
    etcd_root: str | None
    milvus: str | None
    rocksmq: Path | None
    nats: str | None
    nats_store: Path | None
    milvus_version: str | None
    timeout: float

    def request(self) -> Request:
        from mqctl.doctor.discovery import Request
        from mqctl.errors import InputError

        if sum(x is not None for x in (self.pid, self.sandbox)) > 1:
            raise InputError("choose --pid or --sandbox, not both")
        sources = (("--rocksmq", self.rocksmq), ("--nats", self.nats), ("--nats-store", self.nats_store))
        given = [name for name, value in sources if value]
        if len(given) > 1:
            raise InputError(f"choose one MQ source, not {' and '.join(given)}")
        return Request(
            pid=self.pid,
            sandbox=str(self.sandbox) if self.sandbox else None,
            configs=[str(c) for c in self.config or []],
            etcd=self.etcd,
            etcd_root=self.etcd_root,
            milvus=self.milvus,
            rocksmq=str(self.rocksmq) if self.rocksmq else None,
            nats=self.nats,
            nats_store=str(self.nats_store) if self.nats_store else None,
            milvus_version=self.milvus_version,
            timeout=self.timeout,
        )


takes_target = takes_bundle("target", TARGET_OPTIONS, lambda values: Target(**values))


@app.command()
@takes_target
def doctor(
    target: Target,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 on warnings too.")] = False,
    output_format: Annotated[
        str,
        typer.Option(
            "--format",
            help="text, json (as --json), prometheus (a textfile for node_exporter's textfile collector; exit 0 "
            "whenever it is printed) or nagios (one status line; exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN).",
            click_type=click.Choice(FORMATS),
        ),
    ] = "text",
) -> None:
    """Find the Milvus standalone running here (or the one named), run every MQ check, print one verdict.

    Exit 0 when no check is an error, 1 when one is (--strict: or a warning), 2 on bad usage (several
    Milvus processes: choose one with --pid), 3 when there is nothing to examine. --format nagios has the
    plugin codes instead (docs/monitoring.md)."""
    from mqctl.doctor.checks import examine
    from mqctl.doctor.verdict import exit_code
    from mqctl.errors import InputError, MqctlError

    given = settings()
    if given.get("json") and output_format not in ("text", "json"):
        raise InputError(f"choose --json or --format {output_format}, not both")
    given["json"] = given.get("json") or output_format == "json"  # --format json is --json
    if output_format == "nagios":
        from mqctl.cli.terminal import shown
        from mqctl.doctor.nagios import plugin_result, unknown

        try:
            plugin = plugin_result(examine(target.request()))
        except MqctlError as err:  # nothing examined (bad options included): UNKNOWN with the reason
            plugin = unknown(err.one_line())
        output().plain(shown(plugin.line))  # URL passwords masked, control characters escaped
        exit_with(plugin.code)
        return
    result = examine(target.request())
    if output_format == "prometheus":
        from mqctl.doctor.metrics import exposition, families

        output().plain(exposition(families(result)))
        return
    output().emit(result, lambda r: _render(r, presentation().wide))
    exit_with(exit_code(result, strict=strict))


STYLE = {"ok": "bold green", "warning": "bold yellow", "error": "bold red"}


def _render(result: Report, wide: bool) -> list[RenderableType]:
    from rich.text import Text

    from mqctl.cli.terminal import LABEL, TEXT, Column, Output

    target = result.target
    counts = result.summary
    who = f"Milvus pid {target.pid}" if target.pid else "no running Milvus"
    version = f", Milvus {target.version}" if target.version else ""
    running = f"runs {target.mq.mq} now, " if target.mq and target.mq.mq else ""
    parts: list[RenderableType] = [
        Text.assemble(
            (f"verdict: {result.verdict}", STYLE.get(result.verdict, "bold")),
            f" — {counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} info, "
            f"{counts['ok']} ok ({result.seconds:.1f} s)",
        ),
        Text(
            f"{who} ({target.found_by}){version}: {running}"
            f"starts {target.next_mq or 'nothing'} at its next restart; "
            f"config {', '.join(target.configs) or 'none'}; etcd {target.etcd or 'unknown'}"
        ),
    ]
    shown = [c for c in result.checks if wide or c.severity != "ok"]
    rows = []
    for check in shown:
        text = check.message
        if check.impact:
            text += f"\nimpact: {check.impact}"
        if check.fix:
            text += f"\nfix: {check.fix}"
        if wide and check.details:
            text += "\n" + "\n".join(f"  {line}" for line in check.details)
        rows.append(
            (
                check.severity.upper() if check.severity in ("error", "warning") else check.severity,
                check.area,
                check.code,
                text,
            )
        )
    if rows:
        parts.append(
            Output.table(
                None,
                [
                    Column("severity", LABEL, 0),
                    Column("area", LABEL, 1),
                    Column("code", LABEL, 0),
                    Column("finding", TEXT, 0),
                ],
                rows,
            )
        )
    if not wide:
        passed = sorted({f"{c.code}" for c in result.checks if c.severity == "ok"})
        if passed:
            parts.append(Text(f"passed: {' '.join(passed)} (--wide shows them)"))
    parts += [Text(f"note: {note}") for note in target.notes]
    return parts
