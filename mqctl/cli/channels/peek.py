"""`mqctl channels peek`: decoded messages of one channel."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from mqctl.cli.channels.group import (
    NameArg,
    WoodpeckerEtcdOpt,
    app,
    emit_with_warnings,
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
    from mqctl.mq.channel_detail import PeekResult
    from mqctl.mq.sources import SourceOptions


PK_PREVIEW = 5


def _pk_preview(pks: list[int | str]) -> str:
    shown = ", ".join(str(pk) for pk in pks[:PK_PREVIEW])
    return shown + (f" … (+{len(pks) - PK_PREVIEW})" if len(pks) > PK_PREVIEW else "")


def _short_shard(shard: str | None, channel: str, collection_id: int | None) -> str:
    """The virtual channel without its repeated `<channel>_<collection id>` prefix (e.g. v0)."""
    prefix = f"{channel}_{collection_id}"
    return shard[len(prefix) :] if shard and shard.startswith(prefix) else (shard or "")


def render_peek(result: PeekResult) -> FitTable:
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
) -> None:
    """Decoded messages: type, time, collection, partition, segment, shard, rows, primary keys. Milvus 2.6
    messages (Woodpecker) are read through their envelope: type and time tick from it, a version-2 body's facts as
    its detail, an encrypted payload (`_ch`) is said to be so and not decoded."""
    from mqctl.mq.channel_detail import peek as peek_messages
    from mqctl.mq.sources import open_source

    with open_source(with_etcd(source, etcd, etcd_root)) as opened:
        result = peek_messages(opened, name, start=start, limit=limit, types=types, collection=collection)
    emit_with_warnings(output(), result, render_peek)
