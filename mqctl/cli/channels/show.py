"""`mqctl channels show`: everything about one channel."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mqctl.cli.channels.group import (
    NameArg,
    WoodpeckerEtcdOpt,
    app,
    emit_with_warnings,
    format_bytes,
    with_etcd,
)
from mqctl.cli.common import (
    EtcdRootOpt,
    output,
    takes_source,
)
from mqctl.mq.sources import SourceOptions

if TYPE_CHECKING:
    from mqctl.cli.terminal import FitTable
    from mqctl.mq.channel_detail import ChannelDetail
    from mqctl.mq.sources import SourceOptions


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
) -> None:
    """Everything about one channel: counts by message type, collections, RocksMQ pages, the stream's config, or
    a Woodpecker log's segments."""
    from mqctl.mq.channel_detail import show_channel
    from mqctl.mq.sources import open_source

    with open_source(with_etcd(source, etcd, etcd_root)) as opened:
        detail = show_channel(opened, name)
    emit_with_warnings(output(), detail, _render_show)
