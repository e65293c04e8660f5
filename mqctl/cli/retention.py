"""`mqctl retention`: configured vs actual retention, drift and purge blockages; make streams match (parsing and printing only)."""

from __future__ import annotations

from typing import Annotated

import typer

from mqctl.cli.channels import (ConfigOpt, CredsOpt, EtcdOpt, EtcdRootOpt, NatsOpt, NkeyOpt, PasswordOpt, RocksOpt,
                                StoreOpt, TimeoutOpt, TlsCaOpt, TlsCertOpt, TlsKeyOpt, TokenOpt, UserOpt, format_bytes,
                                source_options)
from mqctl.cli.common import DryRunOpt, JsonOpt, WideOpt, YesOpt, exit_with, output

app = typer.Typer(help="Show configured vs actual retention, find drift and purge blockages; apply.",
                  no_args_is_help=True)


def _findings_table(findings):
    from pathlib import Path

    from mqctl.output import KEY, LABEL, TEXT, Column, Output

    return Output.table("findings", [Column("where", KEY), Column("code", LABEL, 0), Column("severity", LABEL, 2),
                                     Column("key", LABEL, 1), Column("finding", TEXT, 0)],
                        [(f"{Path(f.file).name}:{f.line}" if f.file else "Milvus default", f.code, f.severity, f.key,
                          f.message + (f"\nfix: {f.hint}" if f.hint else "")) for f in findings])


def _render_report(report):
    import datetime as dt

    from mqctl.mq.retention import show_limit
    from mqctl.output import KEY, LABEL, NUMBER, TIME, Column, Output

    def oldest(actual):
        seconds = actual["oldest_message_age_seconds"]
        return None if seconds is None else dt.timedelta(seconds=seconds)

    parts = []
    if report.mq == "natsmq":
        rows = [(r.name, *(show_limit(limit, side[limit]) for limit in ("max_age", "max_bytes", "max_msgs")
                           for side in (r.configured, r.actual)), r.actual["messages"],
                 oldest(r.actual), "DRIFT" if r.findings else "ok") for r in report.channels]
        columns = [Column("stream", KEY)]
        for rank, limit in enumerate(("max_age", "max_bytes", "max_msgs"), start=1):
            columns += [Column(f"{limit} conf", LABEL, rank), Column(f"{limit} actual", LABEL, rank)]
        columns += [Column("messages", NUMBER, 4), Column("oldest", TIME, 5), Column("status", LABEL, 0)]
        parts.append(Output.table(f"retention of {report.source} (config: {', '.join(_origins(report))})", columns,
                                  rows))
    else:
        first = report.channels[0].configured if report.channels else {}
        title = (f"retention of {report.source}: {first.get('retention_time_minutes')} min / "
                 f"{first.get('retention_size_mb')} MB (config: {', '.join(_origins(report))})")
        rows = [(r.name, r.actual["messages"], format_bytes(r.actual["bytes"]), r.actual["pages"], r.actual["acked_pages"],
                 r.actual["purgeable_pages"], format_bytes(r.actual["reclaimable_bytes"]), r.actual["unacked_pages"],
                 r.actual["never_purged_pages"], oldest(r.actual), "BLOCKED" if r.findings else "ok")
                for r in report.channels]
        columns = [Column("topic", KEY), Column("messages", NUMBER, 1), Column("bytes", NUMBER, 1),
                   Column("pages", NUMBER, 5), Column("acked", NUMBER, 5), Column("purgeable", NUMBER, 3),
                   Column("reclaimable", NUMBER, 3), Column("unacked", NUMBER, 2), Column("never purged", NUMBER, 2),
                   Column("oldest", TIME, 4), Column("status", LABEL, 0)]
        parts.append(Output.table(title, columns, rows))
    if report.findings:
        parts.append(_findings_table(report.findings))
    return parts


def _origins(report) -> list[str]:
    return sorted({where for r in report.channels for where in r.configured["from"]}) or ["none"]


@app.command()
def show(config: ConfigOpt = None, rocksmq: RocksOpt = None, nats: NatsOpt = None, nats_store: StoreOpt = None,
         user: UserOpt = None, password: PasswordOpt = None, token: TokenOpt = None, creds: CredsOpt = None,
         nkey: NkeyOpt = None, tls_ca: TlsCaOpt = None, tls_cert: TlsCertOpt = None, tls_key: TlsKeyOpt = None,
         timeout: TimeoutOpt = 5.0, etcd: EtcdOpt = None, etcd_root: EtcdRootOpt = None, json_mode: JsonOpt = False,
         wide: WideOpt = False):
    """Per channel: configured retention beside what the data shows. Exit 1 on drift, a purge blockage or (--etcd)
    a retention shorter than the oldest channel checkpoint's age."""
    from mqctl.mq.retention import ConfiguredRetention, retention_report
    from mqctl.mq.sources import load_config, open_source

    options = source_options(rocksmq, nats, nats_store, config, user, password, token, creds, nkey, tls_ca, tls_cert,
                             tls_key, timeout)
    resolution = load_config(options.config) if options.config else None
    with open_source(options, resolution=resolution) as source:
        report = retention_report(source, ConfiguredRetention(resolution))
    if etcd or etcd_root:
        from mqctl.mq.checkpoints import retention_against_checkpoints
        from mqctl.mq.milvus_meta import meta_reader
        from mqctl.mq.retention import NATS_KEYS, ROCKS_TIME_KEY

        key = NATS_KEYS["max_age"] if report.mq == "natsmq" else ROCKS_TIME_KEY
        found = retention_against_checkpoints(meta_reader(etcd, etcd_root, resolution).read(),
                                              ConfiguredRetention(resolution).get(key), report.mq)
        report.findings += [found] if found else []
    output(json_mode, wide).emit(report, _render_report)
    exit_with(1 if report.findings else 0)


def _render_outcome(outcome):
    from mqctl.mq.retention import show_limit
    from mqctl.output import KEY, LABEL, Column, Output

    if not outcome.changes:
        return f"{outcome.source}: every stream already matches the configured retention."
    if outcome.dry_run:
        return f"dry run: {len(outcome.changes)} limit(s) on {len({c.stream for c in outcome.changes})} stream(s) would change."
    rows = [(c.stream, c.limit, show_limit(c.limit, c.actual), show_limit(c.limit, c.wanted)) for c in outcome.changes]
    status = "verified" if outcome.verified else f"NOT verified: {'; '.join(outcome.mismatches)}"
    return Output.table(f"applied to {len(outcome.applied)} stream(s) of {outcome.source}: {status}",
                        [Column("stream", KEY), Column("limit", LABEL, 0), Column("before", LABEL, 1),
                         Column("after", LABEL, 0)], rows)


@app.command()
def apply(config: Annotated[list[str], typer.Option("--config", help="milvus.yaml/user.yaml/CR/Helm values with the "
                                                                     "wanted natsmq.server.retention.* (repeatable).",
                                                    show_default=False)],
          nats: NatsOpt = None, nats_store: StoreOpt = None, user: UserOpt = None, password: PasswordOpt = None,
          token: TokenOpt = None, creds: CredsOpt = None, nkey: NkeyOpt = None, tls_ca: TlsCaOpt = None,
          tls_cert: TlsCertOpt = None, tls_key: TlsKeyOpt = None, timeout: TimeoutOpt = 5.0,
          force: Annotated[bool, typer.Option("--force", help="Apply even though Milvus runs the server.")] = False,
          yes: YesOpt = False, dry_run: DryRunOpt = False, json_mode: JsonOpt = False, wide: WideOpt = False):
    """Make the streams' max_age/max_bytes/max_msgs match the configured retention (plan, confirm, apply, verify)."""
    from mqctl.errors import InputError, PreconditionError
    from mqctl.mq.retention import ApplyOutcome, ConfiguredRetention, apply_plan, plan_apply, stream_limits_from_config, verify
    from mqctl.mq.sources import load_config, open_source

    if not (nats or nats_store):
        raise InputError("retention apply needs the streams to change", hint="pass --nats URL or --nats-store DIR")
    options = source_options(None, nats, nats_store, config, user, password, token, creds, nkey, tls_ca, tls_cert,
                             tls_key, timeout)
    resolution = load_config(options.config)
    wanted = stream_limits_from_config(ConfiguredRetention(resolution).nats_limits())
    out = output(json_mode, wide)
    if nats and not dry_run:  # a dry run changes nothing, so it may look at Milvus's own server
        _refuse_if_milvus_serves(nats, force)
    with open_source(options, writable_store=not dry_run) as source:
        plan = plan_apply(source, wanted)
        out.diff(plan.diff())
        for loss in plan.losses:
            out.warn(loss)
        if not plan.changes or dry_run:
            out.emit(ApplyOutcome(plan.source, dry_run, plan.changes, [], None, losses=plan.losses), _render_outcome)
            return
        if not out.confirm(f"Change retention limits of {len({c.stream for c in plan.changes})} stream(s)?",
                           assume_yes=yes):
            raise PreconditionError("not confirmed; nothing changed")
        applied = apply_plan(source, plan)
        mismatches = verify(source, plan)
    if nats_store and not mismatches:
        with open_source(options) as reopened:  # the limits survive a restart of the store
            mismatches = verify(reopened, plan)
    out.emit(ApplyOutcome(plan.source, False, plan.changes, applied, not mismatches, mismatches, losses=plan.losses),
             _render_outcome)
    exit_with(1 if mismatches else 0)


def _refuse_if_milvus_serves(url: str, force: bool) -> None:
    from mqctl.errors import PreconditionError
    from mqctl.mq.jetstream import listening_process

    owner = listening_process(url)
    if owner and "milvus" in owner.lower() and not force:
        raise PreconditionError(
            f"{url} is served by Milvus itself ({owner})",
            hint="Milvus creates streams from its own config and never updates them: change the yaml, stop Milvus, "
                 "then run apply with --nats-store DIR; or pass --force if the yaml already matches")
