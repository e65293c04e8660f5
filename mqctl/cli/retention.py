"""`mqctl retention`: configured vs actual retention, drift and purge blockages; make streams match (parsing and printing only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from mqctl.cli.channels.group import format_bytes
from mqctl.cli.common import DryRunOpt, EtcdOpt, EtcdRootOpt, YesOpt, exit_with, output, takes_source
from mqctl.mq.sources import SourceOptions

if TYPE_CHECKING:
    import datetime as dt

    from mqctl.cli.terminal import FitTable, Output
    from mqctl.config.resolve.resolution import Resolution
    from mqctl.mq.checkpoints import LiveCheckpoint
    from mqctl.mq.kafka.retention_apply import KafkaApplyOutcome
    from mqctl.mq.nats.retention import ApplyPlan, LimitChange
    from mqctl.mq.retention_apply import ApplyOutcome
    from mqctl.mq.retention_model import FindingGroup, RetentionReport

app = typer.Typer(
    help="Show configured vs actual retention, find drift and purge blockages; apply.", no_args_is_help=True
)


def _findings_table(groups: list[FindingGroup]) -> FitTable:
    from pathlib import Path

    from mqctl.cli.terminal import KEY, LABEL, TEXT, Column, Output

    return Output.table(
        "findings",
        [
            Column("where", KEY),
            Column("code", LABEL, 0),
            Column("severity", LABEL, 2),
            Column("key", LABEL, 1),
            Column("finding", TEXT, 0),
        ],
        [
            (
                f"{Path(g.file).name}:{g.line}" if g.file else "Milvus default",
                g.code,
                g.severity,
                g.key,
                _channels_named(g.channels) + g.message + (f"\nfix: {g.hint}" if g.hint else ""),
            )
            for g in groups
        ],
    )


def _channels_named(channels: list[str]) -> str:
    if not channels:
        return ""
    return f"{channels[0]}: " if len(channels) == 1 else f"{len(channels)} channels ({', '.join(channels)}): "


def _render_report(report: RetentionReport) -> list[FitTable]:
    import datetime as dt

    from mqctl.cli.terminal import KEY, LABEL, NUMBER, TIME, Column, Output
    from mqctl.mq.retention import show_limit

    def oldest(actual: dict[str, Any]) -> dt.timedelta | None:
        seconds = actual["oldest_message_age_seconds"]
        return None if seconds is None else dt.timedelta(seconds=seconds)

    parts: list[FitTable] = []
    if report.mq == "kafka":
        columns_kafka: list[Column | str] = [
            Column("topic", KEY),
            Column("retention.ms", LABEL, 0),
            Column("retention.bytes", LABEL, 1),
            Column("cleanup.policy", LABEL, 0),
            Column("messages", NUMBER, 2),
            Column("oldest", TIME, 3),
            Column("status", LABEL, 0),
        ]
        rows_kafka = [
            (
                r.name,
                "unlimited"
                if r.actual["retention_ms"] < 0
                else f"{r.actual['retention_ms']} ({show_limit('max_age', r.actual['retention_ms'] / 1000)})",
                "unlimited" if r.actual["retention_bytes"] < 0 else str(r.actual["retention_bytes"]),
                r.actual["cleanup_policy"],
                r.actual["messages"],
                oldest(r.actual),
                "; ".join(sorted({f.code for f in r.findings})) or "ok",
            )
            for r in report.channels
        ]
        parts.append(
            Output.table(
                f"retention of {report.source} (config: {', '.join(_origins(report))})", columns_kafka, rows_kafka
            )
        )
    elif report.mq == "natsmq":
        rows = [
            (
                r.name,
                *(
                    show_limit(limit, side[limit])
                    for limit in ("max_age", "max_bytes", "max_msgs")
                    for side in (r.configured, r.actual)
                ),
                r.actual["messages"],
                oldest(r.actual),
                "DRIFT" if r.findings else "ok",
            )
            for r in report.channels
        ]
        columns: list[Column | str] = [Column("stream", KEY)]
        for rank, limit in enumerate(("max_age", "max_bytes", "max_msgs"), start=1):
            columns += [Column(f"{limit} conf", LABEL, rank), Column(f"{limit} actual", LABEL, rank)]
        columns += [Column("messages", NUMBER, 4), Column("oldest", TIME, 5), Column("status", LABEL, 0)]
        parts.append(
            Output.table(f"retention of {report.source} (config: {', '.join(_origins(report))})", columns, rows)
        )
    else:
        first = report.channels[0].configured if report.channels else {}
        title = (
            f"retention of {report.source}: {first.get('retention_time_minutes')} min / "
            f"{first.get('retention_size_mb')} MB (config: {', '.join(_origins(report))})"
        )
        rows = [
            (
                r.name,
                r.actual["messages"],
                format_bytes(r.actual["bytes"]),
                r.actual["pages"],
                r.actual["acked_pages"],
                r.actual["purgeable_pages"],
                format_bytes(r.actual["reclaimable_bytes"]),
                r.actual["unacked_pages"],
                r.actual["never_purged_pages"],
                oldest(r.actual),
                "BLOCKED" if r.findings else "ok",
            )
            for r in report.channels
        ]
        columns = [
            Column("topic", KEY),
            Column("messages", NUMBER, 1),
            Column("bytes", NUMBER, 1),
            Column("pages", NUMBER, 5),
            Column("acked", NUMBER, 5),
            Column("purgeable", NUMBER, 3),
            Column("reclaimable", NUMBER, 3),
            Column("unacked", NUMBER, 2),
            Column("never purged", NUMBER, 2),
            Column("oldest", TIME, 4),
            Column("status", LABEL, 0),
        ]
        parts.append(Output.table(title, columns, rows))
    if report.finding_groups:
        parts.append(_findings_table(report.finding_groups))
    return parts


def _origins(report: RetentionReport) -> list[str]:
    return sorted({where for r in report.channels for where in r.configured["from"]}) or ["none"]


@app.command()
@takes_source(config_first=True, woodpecker=False)
def show(
    source: SourceOptions,
    etcd: EtcdOpt = None,
    etcd_root: EtcdRootOpt = None,
) -> None:
    """Per channel: configured retention beside what the data shows. Exit 1 on drift, a purge blockage or (--etcd)
    a retention shorter than the oldest channel checkpoint's age."""
    from mqctl.mq.retention import retention_report
    from mqctl.mq.retention_model import ConfiguredRetention
    from mqctl.mq.sources import load_config, open_source

    resolution = load_config(source.config) if source.config else None
    with open_source(source, resolution=resolution) as opened:
        report = retention_report(opened, ConfiguredRetention(resolution))
    if etcd or etcd_root:
        from mqctl.mq.milvus_meta import meta_reader
        from mqctl.mq.retention import check_checkpoints

        check_checkpoints(report, meta_reader(etcd, etcd_root, resolution).read(), ConfiguredRetention(resolution))
    out = output()
    for warning in report.warnings:
        out.warn(warning)
    out.emit(report, _render_report)
    exit_with(1 if report.findings or report.warnings else 0)


def _render_outcome(outcome: ApplyOutcome) -> str | FitTable:
    from mqctl.cli.terminal import KEY, LABEL, Column, Output
    from mqctl.mq.retention import show_limit

    if not outcome.changes:
        return f"{outcome.source}: every stream already matches the configured retention."
    if outcome.dry_run:
        return f"dry run: {len(outcome.changes)} limit(s) on {len({c.stream for c in outcome.changes})} stream(s) would change."
    rows = [(c.stream, c.limit, show_limit(c.limit, c.actual), show_limit(c.limit, c.wanted)) for c in outcome.changes]
    status = "verified" if outcome.verified else f"NOT verified: {'; '.join(outcome.mismatches)}"
    return Output.table(
        f"applied to {len(outcome.applied)} stream(s) of {outcome.source}: {status}",
        [Column("stream", KEY), Column("limit", LABEL, 0), Column("before", LABEL, 1), Column("after", LABEL, 0)],
        rows,
    )


KAFKA_APPLY = "Kafka topic configs (with --kafka)"


@app.command()
@takes_source(
    woodpecker=False,
    rocksmq=False,
    config_first=True,
    config_help="milvus.yaml/user.yaml/CR/Helm values with the wanted natsmq.server.retention.* (repeatable); on "
    "Kafka optional (kafka.* to reach the brokers).",
    config_required=False,
)
def apply(
    source: SourceOptions,
    etcd: EtcdOpt = None,
    etcd_root: EtcdRootOpt = None,
    retention_ms: Annotated[
        int | None,
        typer.Option(
            "--retention-ms", help="Kafka: the topics' retention.ms (-1: unlimited).", rich_help_panel=KAFKA_APPLY
        ),
    ] = None,
    retention_bytes: Annotated[
        int | None,
        typer.Option(
            "--retention-bytes", help="Kafka: the topics' retention.bytes (-1: unlimited).", rich_help_panel=KAFKA_APPLY
        ),
    ] = None,
    cleanup_policy: Annotated[
        str | None,
        typer.Option(
            "--cleanup-policy",
            help="Kafka: the topics' cleanup.policy (delete: Milvus needs it).",
            rich_help_panel=KAFKA_APPLY,
        ),
    ] = None,
    topics: Annotated[
        list[str] | None,
        typer.Option(
            "--topic",
            help="Kafka: change only this topic (repeatable; default: every topic of --topic-prefix).",
            rich_help_panel=KAFKA_APPLY,
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Apply even though Milvus runs the server or the new "
            "limits delete messages after a channel checkpoint.",
        ),
    ] = False,
    yes: YesOpt = False,
    dry_run: DryRunOpt = False,
) -> None:
    """Make the streams' max_age/max_bytes/max_msgs match the configured retention (plan, confirm, apply, verify).

    A --nats-store is planned and rehearsed on a private copy and changed only after the confirmation; a
    stream that refuses its new limits puts back the streams already changed. Limits that delete messages after a
    vchannel's channel checkpoint (read from --etcd, or the config's etcd) are refused (exit 3) unless --force."""
    from mqctl.errors import InputError
    from mqctl.mq.retention import stream_limits_from_config
    from mqctl.mq.retention_apply import apply_retention
    from mqctl.mq.retention_model import ConfiguredRetention
    from mqctl.mq.sources import load_config

    kafka_given = [
        name
        for name, value in (
            ("--retention-ms", retention_ms),
            ("--retention-bytes", retention_bytes),
            ("--cleanup-policy", cleanup_policy),
            ("--topic", topics),
        )
        if value is not None
    ]
    resolution = load_config(source.config) if source.config else None
    if source.kafka or (not source.explicit and resolution is not None and resolution.effective_mq == "kafka"):
        from mqctl.mq.kafka.retention_apply import wanted_configs

        wanted_kafka = wanted_configs(retention_ms, retention_bytes, cleanup_policy)
        _apply_kafka(source, resolution, wanted_kafka, topics or [], etcd, etcd_root, force, yes, dry_run)
        return
    if kafka_given:
        raise InputError(f"{kafka_given[0]} changes Kafka topics", hint="add --kafka HOST:PORT, or drop it")
    if not (source.nats or source.nats_store):
        raise InputError(
            "retention apply needs the streams or topics to change",
            hint="pass --nats URL or --nats-store DIR (with --config), or --kafka HOST:PORT",
        )
    if resolution is None:
        raise InputError(
            "retention apply on NATS applies a config's natsmq.server.retention.*",
            hint="pass --config milvus.yaml (or user.yaml, a CR, Helm values)",
        )
    wanted = stream_limits_from_config(ConfiguredRetention(resolution).nats_limits())
    out = output()
    if source.nats and not dry_run:  # a dry run changes nothing, so it may look at Milvus's own server
        _refuse_if_milvus_serves(source.nats, force)

    def confirm(plan: ApplyPlan) -> bool:
        _show_plan(out, plan.changes, plan.losses)
        return out.confirm(
            f"Change retention limits of {len({c.stream for c in plan.changes})} stream(s)?", assume_yes=yes
        )

    outcome = apply_retention(
        source,
        wanted,
        dry_run=dry_run,
        confirm=confirm,
        force=force,
        checkpoints=lambda: _checkpoints(out, etcd, etcd_root, resolution),
    )
    if outcome.verified is None:  # nothing applied: the plan was not shown yet
        _show_plan(out, outcome.changes, outcome.losses)
    out.emit(outcome, _render_outcome)
    exit_with(1 if outcome.mismatches else 0)


def _apply_kafka(
    source: SourceOptions,
    resolution: Resolution | None,
    wanted: dict[str, str],
    topics: list[str],
    etcd: str | None,
    etcd_root: str | None,
    force: bool,
    yes: bool,
    dry_run: bool,
) -> None:
    """retention apply --kafka: the plan as a diff, the losses, the question; then the read-back."""
    import contextlib
    from collections.abc import Iterator

    from mqctl.errors import InputError
    from mqctl.mq.kafka.retention_apply import KafkaApplyPlan, apply_topic_retention, configs_diff
    from mqctl.mq.kafka.source import KafkaSource
    from mqctl.mq.sources import open_source

    out = output()

    def confirm(plan: KafkaApplyPlan) -> bool:
        out.diff(configs_diff(plan.changes))
        for loss in plan.losses:
            out.warn(loss)
        return out.confirm(f"Change the configs of {len({c.topic for c in plan.changes})} topic(s)?", assume_yes=yes)

    def open_topics() -> Iterator[KafkaSource]:
        with open_source(source, resolution=resolution) as opened:
            if not isinstance(opened, KafkaSource):  # --config on another MQ was checked before: cannot happen
                raise InputError(f"{opened.description} is not a Kafka")
            yield opened

    outcome = apply_topic_retention(
        contextlib.contextmanager(open_topics),
        wanted,
        topics,
        dry_run=dry_run,
        confirm=confirm,
        checkpoints=lambda: _kafka_checkpoints(out, etcd, etcd_root, resolution),
        force=force,
    )
    if outcome.verified is None:  # nothing applied: the plan was not shown yet
        out.diff(configs_diff(outcome.changes))
        for loss in outcome.losses:
            out.warn(loss)
    out.emit(outcome, _render_kafka_outcome)
    exit_with(1 if outcome.mismatches else 0)


def _kafka_checkpoints(
    out: Output, etcd: str | None, etcd_root: str | None, resolution: Resolution | None
) -> list[LiveCheckpoint] | None:
    """As _checkpoints, with Milvus 2.6's checkpoints on a Kafka WAL; without any etcd to read, a warning."""
    from mqctl.errors import MqctlError
    from mqctl.mq.kafka.retention_apply import kafka_checkpoints

    if not (etcd or etcd_root or (resolution is not None and resolution.value("etcd.endpoints"))):
        out.warn(
            "channel checkpoints not checked (no --etcd): the new configs may delete messages Milvus has not "
            "persisted; pass --etcd http://HOST:2379 to check them"
        )
        return None
    try:
        return kafka_checkpoints(etcd, etcd_root, resolution)
    except MqctlError as err:
        if etcd:
            raise
        out.warn(
            f"channel checkpoints not checked ({err.message}): the new configs may delete messages Milvus has "
            "not persisted; pass --etcd http://HOST:2379 to check them"
        )
        return None


def _render_kafka_outcome(outcome: KafkaApplyOutcome) -> str | FitTable:
    from mqctl.cli.terminal import KEY, LABEL, Column, Output

    if not outcome.changes:
        return f"{outcome.source}: every topic already holds these configs."
    if outcome.dry_run:
        topics = len({c.topic for c in outcome.changes})
        return f"dry run: {len(outcome.changes)} config(s) on {topics} topic(s) would change."
    status = "verified" if outcome.verified else f"NOT verified: {'; '.join(outcome.mismatches)}"
    return Output.table(
        f"applied to {len(outcome.applied)} topic(s) of {outcome.source}: {status} (read back)",
        [Column("topic", KEY), Column("config", LABEL, 0), Column("before", LABEL, 1), Column("after", LABEL, 0)],
        [(c.topic, c.key, c.before if c.override else f"{c.before} (default)", c.after) for c in outcome.changes],
    )


def _checkpoints(
    out: Output, etcd: str | None, etcd_root: str | None, resolution: Resolution
) -> list[LiveCheckpoint] | None:
    """Every live vchannel's checkpoint, from --etcd/--etcd-root or else the config's etcd; None (with a
    warning) when the config's etcd cannot be read. An etcd given on the command line must answer."""
    from mqctl.errors import MqctlError
    from mqctl.mq.channel_checkpoints import live_checkpoints
    from mqctl.mq.milvus_meta import meta_reader

    try:
        return live_checkpoints(meta_reader(etcd, etcd_root, resolution), resolution.version)
    except MqctlError as err:
        if etcd:
            raise
        out.warn(
            f"channel checkpoints not checked ({err.message}): the new limits may delete messages Milvus has "
            "not persisted; pass --etcd http://HOST:2379 to check them"
        )
        return None


def _show_plan(out: Output, changes: list[LimitChange], losses: list[str]) -> None:
    """The limit diff and the messages the change deletes, before anything is applied."""
    from mqctl.mq.nats.retention import limits_diff

    out.diff(limits_diff(changes))
    for loss in losses:
        out.warn(loss)


def _refuse_if_milvus_serves(url: str, force: bool) -> None:
    from mqctl.errors import PreconditionError
    from mqctl.mq.nats.client import listening_process

    owner = listening_process(url)
    if owner and "milvus" in owner.lower() and not force:
        raise PreconditionError(
            f"{url} is served by Milvus itself ({owner})",
            hint="Milvus creates streams from its own config and never updates them: change the yaml, stop Milvus, "
            "then run apply with --nats-store DIR; or pass --force if the yaml already matches",
        )
