"""`mqctl config`: explain, validate and edit a deployment's MQ settings (parsing and printing only)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mqctl.cli.common import DryRunOpt, EtcdOpt, EtcdRootOpt, YesOpt, exit_with, output, takes_bundle
from mqctl.config.resolve.request import ResolveRequest  # at run time: typer reads the annotations

if TYPE_CHECKING:
    from rich.text import Text

    from mqctl.cli.terminal import FitTable
    from mqctl.config.edit.plan import EditOutcome, EditPlan
    from mqctl.config.resolve.lookup import KeyValue
    from mqctl.config.rules.report import Report
    from mqctl.findings import Finding

app = typer.Typer(
    help="Explain, validate and edit MQ settings (milvus.yaml, user.yaml, Operator CR, Helm values).",
    no_args_is_help=True,
)

FilesArg = Annotated[
    list[Path],
    typer.Argument(
        help="milvus.yaml [default.yaml user.yaml], an Operator CR or Helm "
        "values; several files in Milvus's merge order (later wins).",
        show_default=False,
    ),
]
FileArg = Annotated[Path, typer.Argument(help="The file to read or edit.", show_default=False)]
KeyArg = Annotated[
    str,
    typer.Argument(help="Dotted key, e.g. natsmq.server.port or spec.dependencies.msgStreamType.", show_default=False),
]
KindOpt = Annotated[
    str | None,
    typer.Option("--kind", help="Force the document kind: milvus-yaml, operator-cr, helm-values, configmap."),
]
ModeOpt = Annotated[str | None, typer.Option("--mode", help="standalone or cluster (default: from the document).")]
VersionOpt = Annotated[
    str | None, typer.Option("--milvus-version", help="Milvus version, e.g. 2.3.5 (default: from the image tag).")
]
EnvOpt = Annotated[
    bool, typer.Option("--env", help="Apply overrides from this environment (MQ_TYPE, PULSAR_ADDRESS, ...).")
]
RoleOpt = Annotated[
    str | None,
    typer.Option(
        "--role",
        help="full: Milvus reads the file as its whole milvus.yaml (keys left out take code defaults); overlay: "
        "it sits on the stock milvus.yaml (user.yaml, Helm extraConfigFiles, Operator spec.config). "
        "Default: overlay for user.yaml, default.yaml, CRs and Helm values, else full.",
    ),
]


# the resolve options, declared once: explain, validate and get take them as one ResolveRequest
RESOLVE_OPTIONS: dict[str, tuple[Any, Any]] = {
    "kind": (KindOpt, None),
    "mode": (ModeOpt, None),
    "milvus_version": (VersionOpt, None),
    "env": (EnvOpt, False),
    "etcd": (EtcdOpt, None),
    "etcd_root": (EtcdRootOpt, None),
    "role": (RoleOpt, None),
}


def _request(values: dict[str, Any]) -> ResolveRequest:
    from mqctl.config.resolve.request import ResolveRequest

    return ResolveRequest(
        kind=values["kind"],
        mode=values["mode"],
        milvus_version=values["milvus_version"],
        environment=dict(os.environ) if values["env"] else None,
        etcd_url=values["etcd"],
        etcd_root=values["etcd_root"],
        role=values["role"],
    )


takes_resolve_options = takes_bundle("request", RESOLVE_OPTIONS, _request)


def _where(finding: Finding) -> str:
    name = Path(finding.file).name if finding.file else ""
    return f"{name}:{finding.line}" if name and finding.line else name


def _findings_table(findings: list[Finding]) -> FitTable:
    from mqctl.cli.terminal import KEY, LABEL, TEXT, Column, Output

    return Output.table(
        None,
        [Column("severity", LABEL, 1), Column("code", LABEL, 0), Column("where", KEY), Column("finding", TEXT, 0)],
        [(f.severity, f.code, _where(f), f.message + (f"\nfix: {f.hint}" if f.hint else "")) for f in findings],
    )


def _render_report(report: Report, *, explain: bool) -> list[Text | FitTable]:
    from rich.text import Text

    parts: list[Text | FitTable] = []
    if report.effective_mq:
        parts.append(
            Text(
                f"Milvus starts {report.effective_mq} ({report.mode}, "
                f"Milvus {report.milvus_version or 'version unknown'})",
                style="bold green",
            )
        )
    elif report.panic and report.attempted_mq:  # tried that MQ, then a panic or FATAL
        parts.append(Text(f"Milvus would not start (tries {report.attempted_mq}): `{report.panic}`", style="bold red"))
    elif report.panic:
        parts.append(Text(f"Milvus would not start: panic `{report.panic}`", style="bold red"))
    else:
        parts.append(Text(f"Milvus would not work (tries {report.attempted_mq}): `{report.fails}`", style="bold red"))
    if explain:
        step = 0
        for line in report.explanation:
            if line.startswith("  "):
                parts.append(Text(f"     {line.strip()}"))
            else:
                step += 1
                parts.append(Text(f"{step:>2}. {line}"))
    if report.findings:
        parts.append(_findings_table(report.findings))
    parts.append(
        Text(
            f"{report.errors} error(s), {report.warnings} warning(s), "
            f"{len(report.findings) - report.errors - report.warnings} info"
        )
    )
    return parts


@app.command()
@takes_resolve_options
def explain(files: FilesArg, request: ResolveRequest) -> None:
    """Which MQ this Milvus will start, and why, step by step."""
    from mqctl.config.rules.report import report, validate

    resolution = request.resolve(files)
    output().emit(report(resolution, validate(resolution)), lambda r: _render_report(r, explain=True))


@app.command(name="validate")
@takes_resolve_options
def validate_command(
    files: FilesArg,
    request: ResolveRequest,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 on warnings too.")] = False,
    check_host: Annotated[
        bool, typer.Option("--check-host", help="Also check this host: port free, store writable, disk space and kind.")
    ] = False,
) -> None:
    """Findings with stable codes; exit 1 on any error (with --strict, any warning)."""
    from mqctl.config.rules.report import exit_code, report, validate

    resolution = request.resolve(files)
    findings = validate(resolution, check_host=check_host)
    output().emit(report(resolution, findings), lambda r: _render_report(r, explain=False))
    exit_with(exit_code(findings, strict=strict))


@app.command()
def rules() -> None:
    """Every validation rule with its code and why it matters."""
    from mqctl.cli.terminal import KEY, LABEL, TEXT, Column, Output
    from mqctl.config.rules.report import RULES, RuleList

    output().emit(
        RuleList(list(RULES)),
        lambda r: Output.table(
            "config validate rules",
            [Column("code", KEY), Column("severity", LABEL, 1), Column("rule", TEXT, 0), Column("why", TEXT, 2)],
            [(rule.code, rule.severity, rule.title, rule.why) for rule in r.rules],
        ),
    )


@app.command()
@takes_resolve_options
def get(file: FileArg, key: KeyArg, request: ResolveRequest) -> None:
    """A key's effective value and where it comes from (file:line, env, etcd, code default or stock milvus.yaml)."""
    from mqctl.secrets import redact

    found = request.read_key(file, key)
    found.value = redact(found.value, found.key)

    def render(kv: KeyValue) -> Text:
        from rich.text import Text

        where = f"{kv.file}:{kv.line}" if kv.line else (kv.detail or kv.source)
        shown = "(not set)" if kv.value is None else kv.value
        return Text(f"{kv.key} = {shown}    [{kv.source}: {where}]")

    output().emit(found, render)


def _apply(file: Path, make_plan: Callable[[], EditPlan], *, yes: bool, dry_run: bool) -> None:
    """Under the file's edit lock: plan, show the diff, ask (unless --yes), write atomically with a backup;
    --dry-run takes no lock and writes nothing."""
    import contextlib

    from mqctl import interrupts
    from mqctl.config.edit.set_unset import EditOutcome
    from mqctl.files import edit_lock

    out = output()
    # once the write starts, stopping signals wait: the file is written whole and the result says so (exit 0)
    finishing = contextlib.ExitStack()
    with finishing:
        with contextlib.nullcontext() if dry_run else edit_lock(file):
            plan = make_plan()
            if plan.changed:
                out.diff(plan.diff)
            for note in plan.notes:
                out.info(note)
            for warning in plan.warnings:
                out.warn(warning)
            written, backup = False, None
            if plan.changed and not dry_run:
                if not out.confirm(f"Write these changes to {plan.document.path}?", assume_yes=yes):
                    out.info("Nothing written.")
                    exit_with(3)
                finishing.enter_context(interrupts.held())
                backup = plan.commit().backup
                written = True
        outcome = EditOutcome(
            str(plan.document.path),
            plan.changed,
            written,
            dry_run,
            str(backup) if backup else None,
            plan.diff,
            plan.notes,
            plan.warnings,
            plan.reconcile,
        )

        def render(o: EditOutcome) -> str:
            if not o.changed:
                return "No change: the file already says that."
            if o.dry_run:
                return "Dry run: nothing written."
            return f"Wrote {o.path} (backup: {o.backup})."

        out.emit(outcome, render)


# a negative VALUE such as -1 (natsmq's random port) is a value, not an unknown option
@app.command(name="set", context_settings={"ignore_unknown_options": True})
def set_command(
    file: FileArg,
    key: KeyArg,
    value: Annotated[str, typer.Argument(help="New value (checked against the key's type).", show_default=False)],
    kind: KindOpt = None,
    yes: YesOpt = False,
    dry_run: DryRunOpt = False,
    force: Annotated[
        bool, typer.Option("--force", help="Write a value `config validate` reports as an error.")
    ] = False,
) -> None:
    """Set a key (missing parents are created); everything else stays byte-identical."""
    from mqctl.config.edit.set_unset import plan_set

    _apply(file, lambda: plan_set(file, key, value, kind=kind, force=force), yes=yes, dry_run=dry_run)


@app.command()
def unset(
    file: FileArg,
    key: KeyArg,
    kind: KindOpt = None,
    yes: YesOpt = False,
    dry_run: DryRunOpt = False,
) -> None:
    """Remove a key's lines; Milvus then uses its default."""
    from mqctl.config.edit.set_unset import plan_unset

    _apply(file, lambda: plan_unset(file, key, kind=kind), yes=yes, dry_run=dry_run)


@app.command()
def switch(
    file: FileArg,
    to: Annotated[str, typer.Option("--to", help="natsmq, rocksmq, pulsar, kafka or woodpecker.", show_default=False)],
    store_dir: Annotated[str | None, typer.Option("--store-dir", help="natsmq storeDir or rocksmq path.")] = None,
    port: Annotated[int | None, typer.Option("--port", help="natsmq or pulsar port.")] = None,
    mode: ModeOpt = None,
    milvus_version: VersionOpt = None,
    kind: KindOpt = None,
    yes: YesOpt = False,
    dry_run: DryRunOpt = False,
) -> None:
    """Point the deployment at another MQ: the right key for the kind, plus the target's defaults when missing."""
    from mqctl.config.edit.set_unset import plan_switch

    _apply(
        file,
        lambda: plan_switch(
            file, to, store_dir=store_dir, port=port, mode=mode, milvus_version=milvus_version, kind=kind
        ),
        yes=yes,
        dry_run=dry_run,
    )
