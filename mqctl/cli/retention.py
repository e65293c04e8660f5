"""`mqctl retention`: configured vs actual retention, drift and purge blockages; make streams match (parsing and printing only)."""

from __future__ import annotations

from typing import Annotated

import typer

from mqctl.cli.channels import (ConfigOpt, CredsOpt, NatsOpt, NkeyOpt, PasswordOpt, RocksOpt, StoreOpt, TimeoutOpt,
                                TlsCaOpt, TlsCertOpt, TlsKeyOpt, TokenOpt, UserOpt, format_bytes, source_options)
from mqctl.cli.common import DryRunOpt, JsonOpt, YesOpt, exit_with, output

app = typer.Typer(help="Show configured vs actual retention, find drift and purge blockages; apply.",
                  no_args_is_help=True)


def _age(seconds: float | None) -> str:
    if seconds is None:
        return ""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


def _findings_table(groups):
    from mqctl.output import Output

    return Output.table("findings", ["severity", "code", "key", "where", "message", "fix"],
                        [(g.severity, g.code, g.key, f"{g.file}:{g.line}" if g.file else "Milvus default",
                          f"{_channels_named(g.channels)}: {g.message}", g.hint) for g in groups])


def _channels_named(channels: list[str]) -> str:
    return channels[0] if len(channels) == 1 else f"{len(channels)} channels ({', '.join(channels)})"


def _render_report(report):
    from mqctl.output import Output

    from mqctl.mq.retention import show_limit

    parts = []
    if report.mq == "natsmq":
        rows = [(r.name, *(show_limit(limit, side[limit]) for limit in ("max_age", "max_bytes", "max_msgs")
                           for side in (r.configured, r.actual)), r.actual["messages"],
                 _age(r.actual["oldest_message_age_seconds"]), "DRIFT" if r.findings else "ok") for r in report.channels]
        parts.append(Output.table(f"retention of {report.source} (config: {', '.join(_origins(report))})",
                                  ["stream", "max_age conf", "max_age actual", "max_bytes conf", "max_bytes actual",
                                   "max_msgs conf", "max_msgs actual", "messages", "oldest", "status"], rows,
                                  right=["messages"]))
        parts[-1].columns[0].no_wrap = True
    else:
        first = report.channels[0].configured if report.channels else {}
        title = (f"retention of {report.source}: {first.get('retention_time_minutes')} min / "
                 f"{first.get('retention_size_mb')} MB (config: {', '.join(_origins(report))})")
        rows = [(r.name, r.actual["messages"], format_bytes(r.actual["bytes"]), r.actual["pages"], r.actual["acked_pages"],
                 r.actual["purgeable_pages"], format_bytes(r.actual["reclaimable_bytes"]), r.actual["unacked_pages"],
                 r.actual["never_purged_pages"], _age(r.actual["oldest_message_age_seconds"]),
                 "BLOCKED" if r.findings else "ok") for r in report.channels]
        parts.append(Output.table(title, ["topic", "messages", "bytes", "pages", "acked", "purgeable", "reclaimable",
                                          "unacked", "never purged", "oldest", "status"], rows,
                                  right=["messages", "bytes", "pages", "acked", "purgeable", "reclaimable", "unacked",
                                         "never purged"]))
    if report.finding_groups:
        parts.append(_findings_table(report.finding_groups))
    return parts


def _origins(report) -> list[str]:
    return sorted({where for r in report.channels for where in r.configured["from"]}) or ["none"]


@app.command()
def show(config: ConfigOpt = None, rocksmq: RocksOpt = None, nats: NatsOpt = None, nats_store: StoreOpt = None,
         user: UserOpt = None, password: PasswordOpt = None, token: TokenOpt = None, creds: CredsOpt = None,
         nkey: NkeyOpt = None, tls_ca: TlsCaOpt = None, tls_cert: TlsCertOpt = None, tls_key: TlsKeyOpt = None,
         timeout: TimeoutOpt = 5.0, json_mode: JsonOpt = False):
    """Per channel: configured retention beside what the data shows. Exit 1 on drift or a purge blockage."""
    from mqctl.mq.retention import ConfiguredRetention, retention_report
    from mqctl.mq.sources import load_config, open_source

    options = source_options(rocksmq, nats, nats_store, config, user, password, token, creds, nkey, tls_ca, tls_cert,
                             tls_key, timeout)
    resolution = load_config(options.config) if options.config else None
    with open_source(options, resolution=resolution) as source:
        report = retention_report(source, ConfiguredRetention(resolution))
    out = output(json_mode)
    for warning in report.warnings:
        out.warn(warning)
    out.emit(report, _render_report)
    exit_with(1 if report.findings or report.warnings else 0)


def _render_outcome(outcome):
    from mqctl.mq.retention import show_limit
    from mqctl.output import Output

    if not outcome.changes:
        return f"{outcome.source}: every stream already matches the configured retention."
    if outcome.dry_run:
        return f"dry run: {len(outcome.changes)} limit(s) on {len({c.stream for c in outcome.changes})} stream(s) would change."
    rows = [(c.stream, c.limit, show_limit(c.limit, c.actual), show_limit(c.limit, c.wanted)) for c in outcome.changes]
    status = "verified" if outcome.verified else f"NOT verified: {'; '.join(outcome.mismatches)}"
    return Output.table(f"applied to {len(outcome.applied)} stream(s) of {outcome.source}: {status}",
                        ["stream", "limit", "before", "after"], rows)


@app.command()
def apply(config: Annotated[list[str], typer.Option("--config", help="milvus.yaml/user.yaml/CR/Helm values with the "
                                                                     "wanted natsmq.server.retention.* (repeatable).",
                                                    show_default=False)],
          nats: NatsOpt = None, nats_store: StoreOpt = None, user: UserOpt = None, password: PasswordOpt = None,
          token: TokenOpt = None, creds: CredsOpt = None, nkey: NkeyOpt = None, tls_ca: TlsCaOpt = None,
          tls_cert: TlsCertOpt = None, tls_key: TlsKeyOpt = None, timeout: TimeoutOpt = 5.0,
          force: Annotated[bool, typer.Option("--force", help="Apply even though Milvus runs the server.")] = False,
          yes: YesOpt = False, dry_run: DryRunOpt = False, json_mode: JsonOpt = False):
    """Make the streams' max_age/max_bytes/max_msgs match the configured retention (plan, confirm, apply, verify).

    A --nats-store is planned and rehearsed on a private copy and changed only after the confirmation; a
    stream that refuses its new limits puts back the streams already changed."""
    from mqctl.errors import InputError
    from mqctl.mq.retention import ConfiguredRetention, apply_retention, stream_limits_from_config
    from mqctl.mq.sources import load_config

    if not (nats or nats_store):
        raise InputError("retention apply needs the streams to change", hint="pass --nats URL or --nats-store DIR")
    options = source_options(None, nats, nats_store, config, user, password, token, creds, nkey, tls_ca, tls_cert,
                             tls_key, timeout)
    resolution = load_config(options.config)
    wanted = stream_limits_from_config(ConfiguredRetention(resolution).nats_limits())
    out = output(json_mode)
    if nats and not dry_run:  # a dry run changes nothing, so it may look at Milvus's own server
        _refuse_if_milvus_serves(nats, force)

    def confirm(plan) -> bool:
        _show_plan(out, plan.changes, plan.losses)
        return out.confirm(f"Change retention limits of {len({c.stream for c in plan.changes})} stream(s)?",
                           assume_yes=yes)

    outcome = apply_retention(options, wanted, dry_run=dry_run, confirm=confirm)
    if outcome.verified is None:  # nothing applied: the plan was not shown yet
        _show_plan(out, outcome.changes, outcome.losses)
    out.emit(outcome, _render_outcome)
    exit_with(1 if outcome.mismatches else 0)


def _show_plan(out, changes, losses) -> None:
    """The limit diff and the messages the change deletes, before anything is applied."""
    from mqctl.mq.retention import limits_diff

    out.diff(limits_diff(changes))
    for loss in losses:
        out.warn(loss)


def _refuse_if_milvus_serves(url: str, force: bool) -> None:
    from mqctl.errors import PreconditionError
    from mqctl.mq.jetstream import listening_process

    owner = listening_process(url)
    if owner and "milvus" in owner.lower() and not force:
        raise PreconditionError(
            f"{url} is served by Milvus itself ({owner})",
            hint="Milvus creates streams from its own config and never updates them: change the yaml, stop Milvus, "
                 "then run apply with --nats-store DIR; or pass --force if the yaml already matches")
