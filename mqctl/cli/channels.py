"""`mqctl channels`: list, show and peek into RocksMQ and NATS JetStream channels (parsing and printing only)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mqctl.cli.common import JsonOpt, WideOpt, output, takes_source
from mqctl.mq.sources import SourceOptions

if TYPE_CHECKING:
    from rich.console import RenderableType

    from mqctl.cli.terminal import FitTable, Output
    from mqctl.mq.channels import ChannelDetail, ChannelList, PeekResult
    from mqctl.mq.checkpoints import CheckpointReport
    from mqctl.mq.milvus_meta import ChannelMeta

app = typer.Typer(
    help="Inspect channels of RocksMQ (offline, read-only) and NATS JetStream; decode messages.", no_args_is_help=True
)

NameArg = Annotated[
    str, typer.Argument(help="Channel (topic/stream) name, e.g. by-dev-rootcoord-dml_0.", show_default=False)
]


def format_bytes(count: int | None) -> str:
    """A byte count for people (B, KiB, MiB, GiB); empty when unknown."""
    if count is None:
        return ""
    size: float = count
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{count} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return ""


def _render_list(result: ChannelList) -> FitTable:
    from mqctl.cli.terminal import ID, KEY, NUMBER, TIME, Column, Output

    nats = any(c.consumers is not None for c in result.channels)
    columns: list[Column | str] = [
        Column("channel", KEY),
        Column("messages", NUMBER, 0),
        Column("bytes", NUMBER, 2),
        Column("first id", ID, 4),
        Column("last id", ID, 4),
        Column("oldest", TIME, 1, wide_header="first time (UTC)"),
        Column("newest", TIME, 1, wide_header="last time (UTC)"),
    ]
    columns += [Column("consumers", NUMBER, 3)] if nats else []
    rows = []
    for c in result.channels:
        row = [c.name, c.messages, format_bytes(c.bytes), c.first_id, c.last_id, c.first_time, c.last_time]
        rows.append(row + ([c.consumers] if nats else []))
    totals = result.totals
    footer = [f"total ({totals.channels})", totals.messages, format_bytes(totals.bytes)]
    return Output.table(f"channels of {result.source}", columns, rows, footer=footer)


@app.command("list")
@takes_source()
def list_command(
    source: SourceOptions,
    store_times: Annotated[
        bool,
        typer.Option(
            "--store-times",
            help="NATS: first/last time from the "
            "server's store timestamps, not the Milvus TSO (faster: "
            "no message reads).",
        ),
    ] = False,
    json_mode: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """One row per physical channel: messages, bytes, first/last id and time (from the Milvus TSO)."""
    from mqctl.mq.channels import list_channels
    from mqctl.mq.sources import open_source

    with open_source(source) as opened:
        result = list_channels(opened, store_times=store_times)
    emit_with_warnings(output(json_mode, wide), result, _render_list)


def emit_with_warnings(
    out: Output,
    result: ChannelList | ChannelDetail,
    render: Callable[[Any], RenderableType | Iterable[RenderableType]],
) -> None:
    """Print a result; when its data and metadata disagree, warn on stderr and end with exit 1."""
    from mqctl.cli.common import exit_with

    for warning in result.warnings:
        out.warn(warning)
    out.emit(result, render)
    exit_with(1 if result.warnings else 0)


def _render_show(detail: ChannelDetail) -> list[FitTable]:
    from mqctl.cli.terminal import KEY, LABEL, NUMBER, TEXT, TIME, Column, Output

    c = detail.channel
    facts = [
        ("messages", c.messages),
        ("bytes", format_bytes(c.bytes)),
        ("first id", c.first_id),
        ("last id", c.last_id),
        ("first time", c.first_time),
        ("last time", c.last_time),
        ("consumers", c.consumers),
        ("created", detail.created_at),
        ("open page", format_bytes(detail.open_page_size)),
        ("undecodable", detail.undecodable),
    ]
    parts = [
        Output.table(
            f"{c.name} ({detail.source})",
            [Column("fact", KEY), Column("value", TEXT)],
            [(key, value) for key, value in facts if value not in (None, "")],
            show_header=False,
        ),
        Output.table("messages by type", [Column("type", KEY), Column("count", NUMBER)], detail.types.items()),
        Output.table(
            "collections seen",
            [Column("id", KEY), Column("name", LABEL, 0), Column("schema in stream", LABEL)],
            [(s.id, s.name, "yes" if s.schema_in_stream else "no") for s in detail.collections],
        ),
    ]
    if detail.pages is not None:
        parts.append(
            Output.table(
                "pages (closed)",
                [
                    Column("end id", KEY),
                    Column("size", NUMBER),
                    Column("closed", TIME, wide_header="closed (UTC)"),
                    Column("acked", TIME, wide_header="acked (UTC)"),
                ],
                [
                    (p.end_id, format_bytes(p.size), p.closed_at, p.acked_at if p.acked else "not acked")
                    for p in detail.pages
                ],
            )
        )
    if detail.stream is not None:
        parts.append(
            Output.table(
                "stream config and state", [Column("setting", KEY), Column("value", TEXT)], detail.stream.items()
            )
        )
    return parts


@app.command()
@takes_source()
def show(
    name: NameArg,
    source: SourceOptions,
    json_mode: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """Everything about one channel: counts by message type, collections, RocksMQ pages or the stream's config."""
    from mqctl.mq.channels import show_channel
    from mqctl.mq.sources import open_source

    with open_source(source) as opened:
        detail = show_channel(opened, name)
    emit_with_warnings(output(json_mode, wide), detail, _render_show)


PK_PREVIEW = 5


def _pk_preview(pks: list[int | str]) -> str:
    shown = ", ".join(str(pk) for pk in pks[:PK_PREVIEW])
    return shown + (f" … (+{len(pks) - PK_PREVIEW})" if len(pks) > PK_PREVIEW else "")


def _short_shard(shard: str | None, channel: str, collection_id: int | None) -> str:
    """The virtual channel without its repeated `<channel>_<collection id>` prefix (e.g. v0)."""
    prefix = f"{channel}_{collection_id}"
    return shard[len(prefix) :] if shard and shard.startswith(prefix) else (shard or "")


def _render_peek(result: PeekResult) -> FitTable:
    from mqctl.cli.terminal import ID, KEY, LABEL, NUMBER, TEXT, TIME, Column, Output

    rows = [
        (
            m.id,
            m.type,
            m.time,
            m.collection or m.collection_id,
            m.partition_id,
            m.segment_id,
            _short_shard(m.shard, result.channel, m.collection_id),
            m.rows or "",
            f"error: {m.error}" if m.error else _pk_preview(m.pks),
        )
        for m in result.messages
    ]
    columns: list[Column | str] = [
        Column("id", KEY),
        Column("type", LABEL, 0),
        Column("age", TIME, 1, wide_header="time (UTC)"),
        Column("collection", LABEL, 2),
        Column("partition", ID, 5),
        Column("segment", ID, 5),
        Column("shard", LABEL, 4),
        Column("rows", NUMBER, 3),
        Column("primary keys", TEXT, 0),
    ]
    return Output.table(f"{result.channel}: {len(result.messages)} messages", columns, rows)


@app.command()
@takes_source()
def peek(
    name: NameArg,
    *,
    start: Annotated[
        str | None,
        typer.Option(
            "--from", help="Start at this message id / sequence, or at this time (ISO-8601, UTC if no offset)."
        ),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many messages.")] = 20,
    types: Annotated[
        str | None, typer.Option("--type", help="Only these types, e.g. insert,delete (names or numbers).")
    ] = None,
    collection: Annotated[str | None, typer.Option("--collection", help="Only this collection.")] = None,
    source: SourceOptions,
    json_mode: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """Decoded messages: type, time, collection, partition, segment, shard, rows, primary keys."""
    from mqctl.mq.channels import peek as peek_messages
    from mqctl.mq.sources import open_source

    with open_source(source) as opened:
        result = peek_messages(opened, name, start=start, limit=limit, types=types, collection=collection)
        output(json_mode, wide).emit(result, _render_peek)


# --- channels checkpoints ------------------------------------------------------------------------------
META = "Milvus meta"
EtcdOpt = Annotated[
    str | None,
    typer.Option(
        "--etcd",
        help="etcd client URL, e.g. http://127.0.0.1:2379 (default with --config: etcd.endpoints).",
        rich_help_panel=META,
    ),
]
EtcdRootOpt = Annotated[
    str | None,
    typer.Option(
        "--etcd-root", help="etcd.rootPath of this Milvus (default: from --config, else by-dev).", rich_help_panel=META
    ),
]
MilvusOpt = Annotated[
    str | None,
    typer.Option(
        "--milvus",
        help="Milvus gRPC URI: map vchannels to collections through Milvus instead of root-coord's etcd meta.",
        rich_help_panel=META,
    ),
]
MilvusTokenOpt = Annotated[
    str | None,
    typer.Option(
        "--milvus-token",
        help="Milvus token, user:password (or env MQCTL_MILVUS_TOKEN).",
        envvar="MQCTL_MILVUS_TOKEN",
        rich_help_panel=META,
    ),
]
WatchOpt = Annotated[
    float,
    typer.Option(
        "--watch",
        min=0,
        help="Sample twice this many seconds apart: a checkpoint "
        "that stays put while its vchannel's messages keep "
        "coming is at-risk.",
    ),
]


def _render_checkpoints(report: CheckpointReport) -> list[FitTable | str]:
    import datetime as dt

    from mqctl.cli.terminal import ID, KEY, LABEL, NUMBER, TIME, Column, Output

    rows = [
        (
            c.status if c.status == "ok" else c.status.upper(),
            c.vchannel,
            f"{c.database}.{c.collection}" if c.collection else (c.collection_id or ""),
            c.checkpoint_time,
            c.checkpoint_from,
            c.position,
            c.first_retained,
            c.last,
            c.lag_messages,
            None if c.lag_seconds is None else dt.timedelta(seconds=c.lag_seconds),
            c.lost_messages,
        )
        for c in report.checkpoints
    ]
    watch = f", watched {report.watch_seconds:g} s" if report.watch_seconds else ""
    columns: list[Column | str] = [
        Column("status", LABEL, 0),
        Column("vchannel", KEY),
        Column("collection", LABEL, 1),
        Column("checkpoint", TIME, 3, wide_header="checkpoint (UTC)"),
        Column("from", LABEL, 5),
        Column("position", ID, 4),
        Column("first retained", ID, 4),
        Column("last", ID, 4),
        Column("lag msgs", NUMBER, 2),
        Column("lag", NUMBER, 2),
        Column("lost", NUMBER, 1),
    ]
    parts: list[FitTable | str] = [
        Output.table(
            f"channel checkpoints of {report.source} (etcd {report.etcd}, {report.meta_root}/{watch})", columns, rows
        )
    ]
    parts += [f"{c.vchannel}: {c.status}: {c.reason}" for c in report.checkpoints if c.status != "ok"]
    parts += [f"fix: {hint}" for hint in sorted({c.hint for c in report.checkpoints if c.hint})]
    parts += [f"note: {f.message} — {f.hint}" for f in report.findings if f.code == "CP103"]
    return parts


@app.command()
@takes_source()
def checkpoints(
    source: SourceOptions,
    etcd: EtcdOpt = None,
    etcd_root: EtcdRootOpt = None,
    milvus: MilvusOpt = None,
    milvus_token: MilvusTokenOpt = None,
    watch: WatchOpt = 0,
    json_mode: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """Per vchannel: is what Milvus has not flushed still in the MQ after its channel checkpoint?
    Exit 1 when any vchannel is expired or at-risk, 3 when etcd or the MQ cannot be read."""
    from mqctl.cli.common import exit_with
    from mqctl.mq.checkpoints import checkpoint_report
    from mqctl.mq.milvus_meta import collections_from_milvus, meta_reader
    from mqctl.mq.retention import ROCKS_TIME_KEY, ConfiguredRetention
    from mqctl.mq.sources import load_config, open_source

    resolution = load_config(source.config) if source.config else None
    reader = meta_reader(etcd, etcd_root, resolution)
    target = None
    if milvus:
        from mqctl.milvus_client import MilvusTarget

        target = MilvusTarget(milvus, token=milvus_token or "")

    def read_meta() -> ChannelMeta:
        return reader.read(collections=collections_from_milvus(target) if target else None)

    rocksmq_window = ConfiguredRetention(resolution).get(ROCKS_TIME_KEY).value * 60
    with open_source(source, resolution=resolution) as opened:
        report = checkpoint_report(
            read_meta,
            opened,
            watch_seconds=watch,
            rocksmq_retention_seconds=rocksmq_window,
            milvus_uri=target.uri if target else None,
            etcd=reader.etcd.shown,
        )
    output(json_mode, wide).emit(report, _render_checkpoints)
    exit_with(1 if report.failing else 0)
