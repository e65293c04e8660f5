"""`mqctl channels list`: one row per physical channel."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from mqctl.cli.channels.group import (
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
    from mqctl.mq.channels import ChannelList
    from mqctl.mq.sources import SourceOptions


READS = {
    "footers": "read: footers and indexes of finalized segments (entries and ids exact; bytes need --verify; "
    "damage inside a data block is not seen: --verify reads and CRC-checks every object)",
    "verified": "read: verified (every object read, every record and block CRC checked)",
}


def _render_list(result: ChannelList) -> list[FitTable | str]:
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
    parts: list[FitTable | str] = [Output.table(f"channels of {result.source}", columns, rows, footer=footer)]
    read = getattr(result, "read", None)  # a Woodpecker WAL: how it was read
    if read is not None:
        parts.append(READS[read])
    return parts


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
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Woodpecker: read every object and check every CRC (else finalized segments are summarized from "
            "their footer and index, and only the blocks holding each log's first and last entry are read).",
        ),
    ] = False,
    etcd: WoodpeckerEtcdOpt = None,
    etcd_root: EtcdRootOpt = None,
) -> None:
    """One row per physical channel: messages, bytes, first/last id and time (from the Milvus TSO; Woodpecker:
    one row per log, ids are segment * 10**10 + entry, times from the `_tt` time ticks; finalized segments are
    read from their footer and index, bytes (the payloads' sum) and damage inside data blocks only with --verify;
    the output says which read it was)."""
    from mqctl.mq.channels import list_channels
    from mqctl.mq.sources import open_source

    with open_source(with_etcd(source, etcd, etcd_root)) as opened:
        result = list_channels(opened, store_times=store_times, verify=verify)
    emit_with_warnings(output(), result, _render_list)
