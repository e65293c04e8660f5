"""`mqctl channels`: list, show and peek into RocksMQ and NATS JetStream channels (parsing and printing only)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mqctl.cli.common import (
    EtcdOpt,
    EtcdRootOpt,
    JsonOpt,
    MilvusOpt,
    S3EndpointOpt,
    WideOpt,
    output,
    seconds,
    takes_source,
)
from mqctl.config.resolve.sources import DEFAULT_ETCD_ROOT
from mqctl.mq.sources import SourceOptions

if TYPE_CHECKING:
    from rich.console import RenderableType

    from mqctl.cli.terminal import FitTable, Output
    from mqctl.config.resolve.resolution import Resolution
    from mqctl.mq.channels import ChannelDetail, ChannelList, PeekResult
    from mqctl.mq.checkpoints import CheckpointReport
    from mqctl.mq.milvus_meta import ChannelMeta, MetaReader
    from mqctl.mq.sources import SourceOptions
    from mqctl.mq.streaming.checkpoints import StreamingCheckpointReport
    from mqctl.mq.streaming.wal_files import WoodpeckerReport

app = typer.Typer(
    help="Inspect channels of RocksMQ (offline, read-only), NATS JetStream and Woodpecker (2.6+, offline, read-only; "
    "format from Woodpecker v0.1.x / Milvus v2.6.x source, not yet verified on a running 2.6); decode messages.",
    no_args_is_help=True,
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


WoodpeckerEtcdOpt = Annotated[
    str | None,
    typer.Option(
        "--etcd",
        help="With --woodpecker: etcd client URL of this Milvus; Woodpecker's meta there names each log after its "
        "pchannel (else logs go by their ids).",
    ),
]


def _with_etcd(source: SourceOptions, etcd: str | None, etcd_root: str | None) -> SourceOptions:
    """The source with --etcd/--etcd-root, which only --woodpecker reads (log names)."""
    import dataclasses

    from mqctl.errors import InputError

    if (etcd or etcd_root) and not source.woodpecker and not source.config:
        raise InputError("--etcd/--etcd-root name Woodpecker's logs here", hint="add --woodpecker PATH, or drop --etcd")
    return dataclasses.replace(source, etcd=etcd, etcd_root=etcd_root)


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
    etcd: WoodpeckerEtcdOpt = None,
    etcd_root: EtcdRootOpt = None,
    json_mode: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """One row per physical channel: messages, bytes, first/last id and time (from the Milvus TSO; Woodpecker:
    one row per log, ids are segment * 10**10 + entry, times from the `_tt` time ticks)."""
    from mqctl.mq.channels import list_channels
    from mqctl.mq.sources import open_source

    with open_source(_with_etcd(source, etcd, etcd_root)) as opened:
        result = list_channels(opened, store_times=store_times)
    emit_with_warnings(output(json_mode, wide), result, _render_list)


def emit_with_warnings(
    out: Output,
    result: ChannelList | ChannelDetail | PeekResult,
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
    if detail.segments is not None:
        parts.append(
            Output.table(
                "Woodpecker segments",
                [
                    Column("segment", KEY),
                    Column("layout", LABEL, 3),
                    Column("state", LABEL),
                    Column("blocks", NUMBER, 2),
                    Column("entries", NUMBER),
                    Column("first entry", NUMBER, 1),
                    Column("last entry", NUMBER, 1),
                    Column("footer", NUMBER, 2),
                    Column("LAC", NUMBER, 2),
                ],
                [
                    (
                        g.segment,
                        g.layout,
                        g.state.upper() if g.state == "corrupt" else g.state,
                        g.blocks,
                        g.entries,
                        g.first_entry,
                        g.last_entry,
                        g.footer_version,
                        g.lac,
                    )
                    for g in detail.segments
                ],
            )
        )
    if detail.topic is not None:
        topic = detail.topic
        parts.append(
            Output.table(
                "Kafka partitions (Milvus uses 0)",
                [Column("partition", KEY), Column("low", NUMBER), Column("high", NUMBER), Column("leader", NUMBER, 2)],
                [(p["partition"], p["low"], p["high"], p["leader"]) for p in topic["partitions"]],
            )
        )
        parts.append(
            Output.table("topic configs", [Column("config", KEY), Column("value", TEXT)], topic["configs"].items())
        )
        parts.append(
            Output.table(
                "consumer groups with committed offsets (Milvus commits none: its positions are channel checkpoints)",
                [Column("group", KEY), Column("partition", NUMBER), Column("committed", NUMBER), Column("lag", NUMBER)],
                [(g["group"], g["partition"], g["committed"], g["lag"]) for g in topic["groups"]],
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
    etcd: WoodpeckerEtcdOpt = None,
    etcd_root: EtcdRootOpt = None,
    json_mode: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """Everything about one channel: counts by message type, collections, RocksMQ pages, the stream's config, or
    a Woodpecker log's segments."""
    from mqctl.mq.channels import show_channel
    from mqctl.mq.sources import open_source

    with open_source(_with_etcd(source, etcd, etcd_root)) as opened:
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

    txns = any(m.txn is not None for m in result.messages)
    rows = [
        (
            m.position or m.id,
            m.type,
            m.time,
            m.collection or m.collection_id,
            m.partition_id,
            m.segment_id,
            _short_shard(m.shard, result.channel, m.collection_id),
            m.rows or "",
            f"error: {m.error}" if m.error else (_pk_preview(m.pks) or m.detail or ""),
        )
        + ((m.txn,) if txns else ())
        for m in result.messages
    ]
    woodpecker = any(m.position for m in result.messages)
    columns: list[Column | str] = [
        Column("segment/entry" if woodpecker else "id", KEY),
        Column("type", LABEL, 0),
        Column("age", TIME, 1, wide_header="time (UTC)"),
        Column("collection", LABEL, 2),
        Column("partition", ID, 5),
        Column("segment", ID, 5),
        Column("shard", LABEL, 4),
        Column("rows", NUMBER, 3),
        Column("primary keys" + (" / detail" if any(m.detail for m in result.messages) else ""), TEXT, 0),
    ]
    columns += [Column("txn", ID, 1)] if txns else []  # 2.6: messages of a transaction, shown as stored
    count = len(result.messages)
    return Output.table(f"{result.channel}: {count} message{'' if count == 1 else 's'}", columns, rows)


@app.command()
@takes_source()
def peek(
    name: NameArg,
    *,
    start: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="Start at this message id / sequence (Woodpecker also segment/entry, e.g. 3/17), or at this time "
            "(ISO-8601, UTC if no offset).",
        ),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many messages.")] = 20,
    types: Annotated[
        str | None, typer.Option("--type", help="Only these types, e.g. insert,delete (names or numbers).")
    ] = None,
    collection: Annotated[str | None, typer.Option("--collection", help="Only this collection.")] = None,
    source: SourceOptions,
    etcd: WoodpeckerEtcdOpt = None,
    etcd_root: EtcdRootOpt = None,
    json_mode: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """Decoded messages: type, time, collection, partition, segment, shard, rows, primary keys. Milvus 2.6
    messages (Woodpecker) are read through their envelope: type and time tick from it, a version-2 body's facts as
    its detail, an encrypted payload (`_ch`) is said to be so and not decoded."""
    from mqctl.mq.channels import peek as peek_messages
    from mqctl.mq.sources import open_source

    with open_source(_with_etcd(source, etcd, etcd_root)) as opened:
        result = peek_messages(opened, name, start=start, limit=limit, types=types, collection=collection)
    emit_with_warnings(output(json_mode, wide), result, _render_peek)


@app.command()
def decode(
    payload: Annotated[
        str, typer.Argument(help="File holding one message's payload as the MQ stored it (- for standard input).")
    ],
    *,
    properties: Annotated[
        list[str] | None,
        typer.Option(
            "--property",
            help="A property (Kafka header, Pulsar property) as KEY=VALUE, repeatable: e.g. --property _t=2.",
        ),
    ] = None,
    properties_file: Annotated[
        str | None,
        typer.Option(
            "--properties",
            help="The properties from a JSON file: an object, kcat's headers array, or a whole kcat -J record.",
        ),
    ] = None,
    hex_text: Annotated[bool, typer.Option("--hex", help="The file holds the payload as hex digits.")] = False,
    json_mode: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """Decode one Milvus message dumped by an MQ's own tools (a Kafka record value, a Pulsar payload, a RocksMQ
    value): a 2.6 message by its envelope when its properties are given (Milvus 2.6 keeps them as Kafka headers
    and Pulsar properties) or the value is a 2.6 RocksMQ one, else as the msgpb request 2.3–2.5 wrote. Exit 1 when
    the bytes are not the message they claim to be (or are encrypted), 2 for a missing file or bad properties.
    2.6 format from Milvus v2.6.x source; not yet verified on a running 2.6."""
    from mqctl.mq.dumped import decode_dumped, parse_properties, read_payload

    data = read_payload(payload, hex_text=hex_text)
    result = decode_dumped(data, parse_properties(properties or [], properties_file), payload)
    emit_with_warnings(output(json_mode, wide), result, _render_peek)


# --- channels checkpoints ------------------------------------------------------------------------------
META = "Milvus meta"
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
        callback=seconds(86_400),
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


MilvusVersionOpt = Annotated[
    str | None,
    typer.Option(
        "--milvus-version",
        help="Milvus version, e.g. 2.6.17: 2.6+ reads the Streaming Service state (default: detected from etcd, "
        "streamingcoord-meta/streamingnode-meta keys).",
        rich_help_panel=META,
    ),
]
WoodpeckerOpt = Annotated[
    str | None,
    typer.Option(
        "--woodpecker",
        help="2.6: the local Woodpecker folder, a copy of its bucket or s3://BUCKET/PREFIX (MinIO/S3, see "
        "--s3-endpoint): is what each checkpoint needs still stored? Default: where a --config on Woodpecker puts "
        "it.",
        rich_help_panel=META,
    ),
]
TruncationLagOpt = Annotated[
    float,
    typer.Option(
        "--truncation-lag",
        min=0,
        help="2.6 Woodpecker: hours a segment before the WAL checkpoint may stay untruncated before it is flagged.",
    ),
]


def _render_streaming(report: StreamingCheckpointReport) -> list[FitTable | str]:
    from mqctl.cli.terminal import ID, KEY, LABEL, NUMBER, TIME, Column, Output

    pinned = report.pinned_mq or "not pinned"
    wp = f", Woodpecker meta under {report.woodpecker_prefix}/" if report.woodpecker_prefix else ""
    prows = [
        (
            r.status if r.status == "ok" else r.status.upper(),
            r.pchannel,
            r.node,
            r.term,
            r.wal,
            r.checkpoint,
            r.checkpoint_time,
            r.alter_stage if r.alter_stage not in (None, "none") else "",
            r.alter_target if r.alter_stage not in (None, "none") else "",
            r.log_id,
            r.segments,
            r.truncated_to,
            r.last_entry,
            r.untruncated_before_checkpoint,
            r.first_retained,
        )
        for r in report.pchannels
    ]
    pcolumns: list[Column | str] = [
        Column("status", LABEL, 0),
        Column("pchannel", KEY),
        Column("node", LABEL, 4),
        Column("term", NUMBER, 5),
        Column("wal", LABEL, 1),
        Column("checkpoint", ID, 2),
        Column("checkpoint time", TIME, 2, wide_header="checkpoint (UTC)"),
        Column("alter stage", LABEL, 1),
        Column("alter to", LABEL, 3),
        Column("log", ID, 5),
        Column("segments", NUMBER, 4),
        Column("truncated to", ID, 3),
        Column("last entry", ID, 4),
        Column("untruncated", NUMBER, 3),
        Column("first stored", ID, 2),
    ]
    vrows = [
        (
            r.status if r.status == "ok" else r.status.upper(),
            r.vchannel,
            r.collection or r.collection_id or "",
            r.state,
            r.wal,
            r.position,
            r.checkpoint_time,
        )
        for r in report.vchannels
    ]
    vcolumns: list[Column | str] = [
        Column("status", LABEL, 0),
        Column("vchannel", KEY),
        Column("collection", LABEL, 1),
        Column("state", LABEL, 3),
        Column("wal", LABEL, 1),
        Column("position", ID, 2),
        Column("checkpoint", TIME, 2, wide_header="checkpoint (UTC)"),
    ]
    parts: list[FitTable | str] = [
        Output.table(f"pchannels of {report.meta_root}/ (etcd {report.etcd}; mq.type {pinned}{wp})", pcolumns, prows),
        Output.table("vchannels (datacoord channel checkpoints)", vcolumns, vrows),
    ]
    parts += [f"{r.pchannel}: {reason}" for r in report.pchannels for reason in r.reasons]
    parts += [f"{r.vchannel}: {r.status}: {r.reason}" for r in report.vchannels if r.status not in ("ok",) and r.reason]
    parts += [
        f"{f.code} {f.severity}: {f.message}" + (f" — {f.hint}" if f.hint else "")
        for f in report.findings
        if f.code != "CP114"
    ]
    parts.append(f"note: {report.verification}")
    return parts


def _checkpoint_wal(
    source: SourceOptions, woodpecker: str | None, s3_endpoint: str | None, resolution: Resolution | None
) -> SourceOptions | None:
    """The Woodpecker files 2.6 checkpoints are compared with: --woodpecker, else the WAL --config derives (as
    `channels list --config` reads it; not a separate Woodpecker service's, whose files are where its own config
    says), else none."""
    import dataclasses

    from mqctl.errors import InputError
    from mqctl.mq.sources import resolve_source
    from mqctl.mq.woodpecker.location import kept_by_service

    wal = SourceOptions(woodpecker=woodpecker, s3_endpoint=s3_endpoint)
    if woodpecker is None and not source.explicit and resolution is not None and not kept_by_service(resolution):
        wal = resolve_source(dataclasses.replace(wal, config=source.config), resolution)
    if s3_endpoint and not (wal.woodpecker and "://" in wal.woodpecker):
        raise InputError("--s3-endpoint is where an s3:// --woodpecker is read", hint="add --woodpecker s3://...")
    return wal if wal.woodpecker else None


def _streaming_checkpoints(
    reader: MetaReader,
    resolution: Resolution | None,
    source: SourceOptions,
    truncation_lag: float,
    wal: SourceOptions | None,
    json_mode: bool,
    wide: bool,
) -> None:
    import datetime as dt

    from mqctl.cli.common import exit_with
    from mqctl.mq.streaming.state import StreamingReader
    from mqctl.mq.streaming.wal_state import WOODPECKER_FILES, WOODPECKER_META, WalFiles, judge_wal_state

    out = output(json_mode, wide)
    if source.explicit:
        out.warn(
            f"Milvus 2.6+: {', '.join(source.explicit)} not read: on 2.6 mqctl reads etcd and Woodpecker's files "
            "(--woodpecker, or where a --config on Woodpecker puts them; other WALs written by 2.6 are not read yet)"
        )
    files = None
    if wal is not None and wal.woodpecker:
        from mqctl.mq.sources import woodpecker_access

        files = WalFiles(wal.woodpecker, woodpecker_access(wal))
    etcd_values = reader.etcd.read()

    def configured(key: str) -> str | None:
        item = etcd_values.get(key)
        if item is not None and item.value:
            return str(item.value)
        return (resolution.value(key) or None) if resolution is not None else None

    streaming = StreamingReader(reader.etcd, reader.root[len(reader.etcd.root) :].strip("/") or "meta")
    judged = judge_wal_state(
        streaming.read(),
        reader.etcd,
        configured=configured,
        wal_files=files,
        collections={cid: (c.database, c.name) for cid, c in reader.collections().items()},
        truncation_lag=dt.timedelta(hours=truncation_lag),
    )
    for part in (WOODPECKER_FILES, WOODPECKER_META):  # the command answers for every part it was asked to read
        if part in judged.unread:
            raise judged.unread[part]
    report = judged.report
    out.emit(report, _render_streaming)
    exit_with(1 if report.failing else 0)


@app.command()
@takes_source(woodpecker=False)
def checkpoints(
    source: SourceOptions,
    etcd: EtcdOpt = None,
    etcd_root: EtcdRootOpt = None,
    milvus: MilvusOpt = None,
    milvus_token: MilvusTokenOpt = None,
    watch: WatchOpt = 0,
    milvus_version: MilvusVersionOpt = None,
    truncation_lag: TruncationLagOpt = 24.0,
    woodpecker: WoodpeckerOpt = None,
    s3_endpoint: S3EndpointOpt = None,
    json_mode: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """Per vchannel: is what Milvus has not flushed still in the MQ after its channel checkpoint?
    Exit 1 when any vchannel is expired or at-risk (2.6: any error or warning finding), 3 when etcd or the MQ
    cannot be read.

    On Milvus 2.6+ (Streaming Service) it reads etcd: pchannel assignments, WAL checkpoints with the
    AlterWAL stage, vchannel meta, channel checkpoints with their WAL name, the pinned mq.type and Woodpecker's
    log/segment meta; and Woodpecker's files (--woodpecker, or where a --config on Woodpecker puts them) to tell
    whether what each checkpoint needs is still stored. 2.6 support: format from Milvus v2.6.x / Woodpecker v0.1.x
    source; not yet verified on a running 2.6."""
    from mqctl.backends import V2_6
    from mqctl.cli.common import exit_with
    from mqctl.config.known_keys import parse_version
    from mqctl.errors import InputError
    from mqctl.mq.checkpoints import checkpoint_report
    from mqctl.mq.milvus_meta import collections_from_milvus, meta_reader
    from mqctl.mq.retention import ROCKS_TIME_KEY, ConfiguredRetention
    from mqctl.mq.sources import load_config, open_source
    from mqctl.mq.streaming.state import has_streaming_meta

    version = parse_version(milvus_version)
    if milvus_version and version is None:
        raise InputError(f"--milvus-version {milvus_version!r} is not a version", hint="e.g. --milvus-version 2.6.17")
    resolution = load_config(source.config) if source.config else None
    reader = meta_reader(etcd, etcd_root, resolution)
    if version is None and resolution is not None:
        version = resolution.version
    streaming = version >= V2_6 if version is not None else has_streaming_meta(reader.etcd, reader.root)
    if streaming:
        wal = _checkpoint_wal(source, woodpecker, s3_endpoint, resolution)
        _streaming_checkpoints(reader, resolution, source, truncation_lag, wal, json_mode, wide)
        return
    if woodpecker or s3_endpoint:
        raise InputError("--woodpecker is for Milvus 2.6+", hint="give --milvus-version 2.6.x, or leave it out")
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


# --- channels woodpecker ---------------------------------------------------------------------------------------
def _render_woodpecker(report: WoodpeckerReport) -> list[FitTable | str]:
    from mqctl.cli.terminal import ID, KEY, LABEL, NUMBER, TEXT, TIME, Column, Output

    rows = [
        (
            r.log or r.log_id,
            r.segment,
            r.layout,
            r.state if not r.problems else "CORRUPT",
            r.blocks,
            r.entries,
            r.first_entry,
            r.last_entry,
            r.first_time,
            r.last_time,
            r.footer_version,
            r.lac,
        )
        for r in report.segments
    ]
    columns: list[Column | str] = [
        Column("log", KEY),
        Column("segment", ID),
        Column("layout", LABEL, 4),
        Column("state", LABEL, 0),
        Column("blocks", NUMBER, 3),
        Column("entries", NUMBER, 0),
        Column("first entry", ID, 2),
        Column("last entry", ID, 2),
        Column("first time", TIME, 1, wide_header="first time (UTC)"),
        Column("last time", TIME, 1, wide_header="last time (UTC)"),
        Column("footer", NUMBER, 3),
        Column("LAC", ID, 3),
    ]
    parts: list[FitTable | str] = [Output.table(f"Woodpecker segments below {report.path}", columns, rows)]
    if report.entries is not None:
        parts.append(
            Output.table(
                f"log {report.log}: {len(report.entries)} entries",
                [
                    Column("position", KEY),
                    Column("type", LABEL, 0),
                    Column("time", TIME, 1, wide_header="time (UTC)"),
                    Column("vchannel", LABEL, 2),
                    Column("bytes", NUMBER, 3),
                    Column("note", TEXT, 1),
                ],
                [
                    (
                        e.position,
                        e.type,
                        e.time,
                        e.vchannel,
                        e.bytes,
                        ", ".join(
                            note
                            for note, on in (
                                ("encrypted: not decoded", e.encrypted),
                                ("in a transaction", e.in_txn),
                                ("no 2.6 envelope", not e.streaming),
                            )
                            if on
                        ),
                    )
                    for e in report.entries
                ],
            )
        )
    parts += [f"corrupt: {problem}" for r in report.segments for problem in r.problems]
    parts.append(f"note: {report.verification}")
    return parts


@app.command()
def woodpecker(
    path: Annotated[
        str | None,
        typer.Argument(
            help="The local Woodpecker folder (<localStorage.path>/wp), a directory copy of the bucket, or "
            "s3://BUCKET/PREFIX read straight from MinIO/S3 (e.g. s3://a-bucket/files/wp with --s3-endpoint); "
            "segments are found below it. Default: where --config puts it.",
            show_default=False,
        ),
    ] = None,
    config: Annotated[
        list[Path] | None,
        typer.Option(
            "--config",
            help="milvus.yaml/user.yaml/CR/Helm values of a 2.6 on Woodpecker: read the WAL where they put it (its "
            "folder, or its bucket with the endpoint and keys they name) when PATH is not given.",
        ),
    ] = None,
    log: Annotated[
        str | None,
        typer.Option("--log", help="Also list the entries of this log (its pchannel with --etcd, or its id)."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many entries with --log.")] = 20,
    s3_endpoint: S3EndpointOpt = None,
    etcd: EtcdOpt = None,
    etcd_root: EtcdRootOpt = None,
    json_mode: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """Woodpecker segment files of a Milvus 2.6+ WAL, read-only: per segment its state (finalized, active,
    fenced), blocks, entries, time ticks, footer version and LAC, with record and block CRCs checked; with --log
    the entries' 2.6 envelope (type, time tick, vchannel). With --etcd, logs are named after their pchannels.
    Without PATH, --config says where the WAL is (its folder, or its bucket with the endpoint and keys it names).
    An s3:// PATH is read straight from MinIO/S3 (list and get only). Exit 1 when a segment is corrupt, 2 for bad
    input (a missing folder or bucket, a bad URL), 3 when the endpoint is unreachable or refuses the credentials.
    Format from Milvus v2.6.x / Woodpecker v0.1.x source, read back from segments upstream's Woodpecker (v0.1.13,
    v0.1.37) wrote to a folder and to moto's S3 server; not yet verified on a running 2.6, nor against MinIO or AWS."""
    from mqctl.cli.common import exit_with
    from mqctl.errors import InputError
    from mqctl.mq.sources import load_config, resolve_source, woodpecker_access
    from mqctl.mq.streaming.wal_files import woodpecker_report

    wal = SourceOptions(woodpecker=path, s3_endpoint=s3_endpoint, config=list(config or []))
    if path is None:
        if not config:
            raise InputError("give the WAL: PATH, or --config FILE of a 2.6 on Woodpecker to derive it")
        resolution = load_config(wal.config)
        wal = resolve_source(wal, resolution)
        if wal.woodpecker is None:
            raise InputError(
                f"{', '.join(resolution.files)}: the effective MQ is {resolution.effective_mq or 'none'}, not "
                "woodpecker, so the config puts no Woodpecker WAL anywhere",
                hint="see `mqctl config explain` for why, or give the WAL's PATH",
            )
    location = wal.woodpecker or ""
    if s3_endpoint and "://" not in location:
        raise InputError("--s3-endpoint is where an s3:// PATH is read", hint="give s3://BUCKET/PREFIX, or drop it")
    meta = None
    if etcd:
        from mqctl.config.resolve.sources import EtcdConfig
        from mqctl.mq.woodpecker.meta import read_woodpecker_meta

        meta = read_woodpecker_meta(EtcdConfig(etcd, etcd_root or DEFAULT_ETCD_ROOT))
    report = woodpecker_report(location, log=log, limit=limit, access=woodpecker_access(wal), meta=meta)
    output(json_mode, wide).emit(report, _render_woodpecker)
    exit_with(1 if report.corrupt else 0)
