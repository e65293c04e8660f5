"""`mqctl channels`: list, show and peek into RocksMQ and NATS JetStream channels (parsing and printing only)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated, Optional

import typer

from mqctl.cli.common import JsonOpt, output

app = typer.Typer(help="Inspect channels of RocksMQ (offline, read-only) and NATS JetStream; decode messages.",
                  no_args_is_help=True)

SOURCE = "Source (choose one)"
NATS_AUTH = "NATS authentication and TLS"
RocksOpt = Annotated[Optional[Path], typer.Option("--rocksmq", help="RocksMQ directory (rocksmq.path); read-only, "
                                                                     "also while Milvus runs.", rich_help_panel=SOURCE)]
NatsOpt = Annotated[Optional[str], typer.Option("--nats", help="Live NATS server URL, e.g. nats://127.0.0.1:4222.",
                                                rich_help_panel=SOURCE)]
StoreOpt = Annotated[Optional[Path], typer.Option("--nats-store", help="natsmq storeDir of a stopped Milvus; read "
                                                                        "through a private nats-server.",
                                                  rich_help_panel=SOURCE)]
ConfigOpt = Annotated[Optional[list[Path]], typer.Option("--config", help="milvus.yaml/user.yaml/CR/Helm values: "
                                                                          "derive the source on this host (repeat for "
                                                                          "several files).", rich_help_panel=SOURCE)]
UserOpt = Annotated[Optional[str], typer.Option("--user", help="NATS user.", rich_help_panel=NATS_AUTH)]
PasswordOpt = Annotated[Optional[str], typer.Option("--password", help="NATS password (or env MQCTL_NATS_PASSWORD).",
                                                    envvar="MQCTL_NATS_PASSWORD", rich_help_panel=NATS_AUTH)]
TokenOpt = Annotated[Optional[str], typer.Option("--token", help="NATS token (or env MQCTL_NATS_TOKEN).",
                                                 envvar="MQCTL_NATS_TOKEN", rich_help_panel=NATS_AUTH)]
CredsOpt = Annotated[Optional[str], typer.Option("--creds", help="NATS .creds file (JWT + seed).", rich_help_panel=NATS_AUTH)]
NkeyOpt = Annotated[Optional[str], typer.Option("--nkey", help="NATS nkey seed file.", rich_help_panel=NATS_AUTH)]
TlsCaOpt = Annotated[Optional[str], typer.Option("--tls-ca", help="CA certificate file.", rich_help_panel=NATS_AUTH)]
TlsCertOpt = Annotated[Optional[str], typer.Option("--tls-cert", help="Client certificate file.", rich_help_panel=NATS_AUTH)]
TlsKeyOpt = Annotated[Optional[str], typer.Option("--tls-key", help="Client key file.", rich_help_panel=NATS_AUTH)]
TimeoutOpt = Annotated[float, typer.Option("--timeout", help="Seconds for each NATS request.", rich_help_panel=NATS_AUTH)]
NameArg = Annotated[str, typer.Argument(help="Channel (topic/stream) name, e.g. by-dev-rootcoord-dml_0.",
                                        show_default=False)]


def source_options(rocksmq, nats, nats_store, config, user, password, token, creds, nkey, tls_ca, tls_cert, tls_key,
                   timeout):
    from mqctl.mq.sources import SourceOptions

    return SourceOptions(rocksmq=rocksmq, nats=nats, nats_store=nats_store, config=list(config or []), user=user,
                         password=password, token=token, creds=creds, nkey=nkey, tls_ca=tls_ca, tls_cert=tls_cert,
                         tls_key=tls_key, timeout=timeout)


def format_time(value: dt.datetime | None) -> str:
    """UTC with milliseconds, e.g. 2024-05-01 12:00:00.123Z."""
    if value is None:
        return ""
    return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def format_bytes(count: int | None) -> str:
    if count is None:
        return ""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(count) < 1024 or unit == "GiB":
            return f"{count} B" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return ""


def _render_list(result):
    from mqctl.output import Output

    nats = any(c.consumers is not None for c in result.channels)
    columns = ["channel", "messages", "bytes", "first id", "last id", "first time (UTC)", "last time (UTC)"]
    columns += ["consumers"] if nats else []
    rows = []
    for c in result.channels:
        row = [c.name, c.messages, format_bytes(c.bytes), c.first_id, c.last_id, format_time(c.first_time),
               format_time(c.last_time)]
        rows.append(row + ([c.consumers] if nats else []))
    totals = result.totals
    footer = [f"total ({totals.channels})", totals.messages, format_bytes(totals.bytes)]
    return Output.table(f"channels of {result.source}", columns, rows, footer=footer,
                        right=["messages", "bytes", "first id", "last id", "consumers"])


@app.command("list")
def list_command(rocksmq: RocksOpt = None, nats: NatsOpt = None, nats_store: StoreOpt = None, config: ConfigOpt = None,
                 user: UserOpt = None, password: PasswordOpt = None, token: TokenOpt = None, creds: CredsOpt = None,
                 nkey: NkeyOpt = None, tls_ca: TlsCaOpt = None, tls_cert: TlsCertOpt = None, tls_key: TlsKeyOpt = None,
                 timeout: TimeoutOpt = 5.0,
                 store_times: Annotated[bool, typer.Option("--store-times", help="NATS: first/last time from the "
                                                           "server's store timestamps, not the Milvus TSO (faster: "
                                                           "no message reads).")] = False,
                 json_mode: JsonOpt = False):
    """One row per physical channel: messages, bytes, first/last id and time (from the Milvus TSO)."""
    from mqctl.mq.channels import list_channels
    from mqctl.mq.sources import open_source

    options = source_options(rocksmq, nats, nats_store, config, user, password, token, creds, nkey, tls_ca, tls_cert,
                             tls_key, timeout)
    with open_source(options) as source:
        result = list_channels(source, store_times=store_times)
    emit_with_warnings(output(json_mode), result, _render_list)


def emit_with_warnings(out, result, render) -> None:
    """Print a result; when its data and metadata disagree, warn on stderr and end with exit 1."""
    from mqctl.cli.common import exit_with

    for warning in result.warnings:
        out.warn(warning)
    out.emit(result, render)
    exit_with(1 if result.warnings else 0)


def _render_show(detail):
    from rich.markup import escape
    from rich.table import Table

    from mqctl.output import Output

    c = detail.channel
    summary = Table(title=escape(f"{c.name} ({detail.source})"), show_header=False, title_justify="left")
    facts = [("messages", c.messages), ("bytes", format_bytes(c.bytes)), ("first id", c.first_id), ("last id", c.last_id),
             ("first time", format_time(c.first_time)), ("last time", format_time(c.last_time)),
             ("consumers", c.consumers), ("created", format_time(detail.created_at)),
             ("open page", format_bytes(detail.open_page_size)), ("undecodable", detail.undecodable)]
    for key, value in facts:
        if value not in (None, ""):
            summary.add_row(key, escape(str(value)))
    parts = [summary,
             Output.table("messages by type", ["type", "count"], detail.types.items(), right=["count"]),
             Output.table("collections seen", ["id", "name", "schema in stream"],
                          [(s.id, s.name, "yes" if s.schema_in_stream else "no") for s in detail.collections])]
    if detail.pages is not None:
        parts.append(Output.table("pages (closed)", ["end id", "size", "closed (UTC)", "acked (UTC)"],
                                  [(p.end_id, format_bytes(p.size), format_time(p.closed_at),
                                    format_time(p.acked_at) if p.acked else "not acked") for p in detail.pages],
                                  right=["end id", "size"]))
    if detail.stream is not None:
        parts.append(Output.table("stream config and state", ["setting", "value"], detail.stream.items()))
    return parts


@app.command()
def show(name: NameArg, rocksmq: RocksOpt = None, nats: NatsOpt = None, nats_store: StoreOpt = None,
         config: ConfigOpt = None, user: UserOpt = None, password: PasswordOpt = None, token: TokenOpt = None,
         creds: CredsOpt = None, nkey: NkeyOpt = None, tls_ca: TlsCaOpt = None, tls_cert: TlsCertOpt = None,
         tls_key: TlsKeyOpt = None, timeout: TimeoutOpt = 5.0, json_mode: JsonOpt = False):
    """Everything about one channel: counts by message type, collections, RocksMQ pages or the stream's config."""
    from mqctl.mq.channels import show_channel
    from mqctl.mq.sources import open_source

    options = source_options(rocksmq, nats, nats_store, config, user, password, token, creds, nkey, tls_ca, tls_cert,
                             tls_key, timeout)
    with open_source(options) as source:
        detail = show_channel(source, name)
    emit_with_warnings(output(json_mode), detail, _render_show)


PK_PREVIEW = 5


def _pk_preview(pks: list) -> str:
    shown = ", ".join(str(pk) for pk in pks[:PK_PREVIEW])
    return shown + (f" … (+{len(pks) - PK_PREVIEW})" if len(pks) > PK_PREVIEW else "")


def _short_shard(shard: str | None, channel: str, collection_id: int | None) -> str:
    """The virtual channel without its repeated `<channel>_<collection id>` prefix (e.g. v0)."""
    prefix = f"{channel}_{collection_id}"
    return shard[len(prefix):] if shard and shard.startswith(prefix) else (shard or "")


def _render_peek(result):
    from mqctl.output import Output

    rows = [(m.id, m.type, format_time(m.time), m.collection or m.collection_id, m.partition_id, m.segment_id,
             _short_shard(m.shard, result.channel, m.collection_id), m.rows or "",
             f"error: {m.error}" if m.error else _pk_preview(m.pks)) for m in result.messages]
    table = Output.table(f"{result.channel}: {len(result.messages)} messages", ["id", "type", "time (UTC)", "collection",
                         "partition", "segment", "shard", "rows", "primary keys"], rows, right=["id", "rows"])
    for column in table.columns[:3]:
        column.no_wrap = True
    return table


@app.command()
def peek(name: NameArg,
         start: Annotated[Optional[str], typer.Option("--from", help="Start at this message id / sequence, or at this "
                                                                     "time (ISO-8601, UTC if no offset).")] = None,
         limit: Annotated[int, typer.Option("--limit", help="At most this many messages.")] = 20,
         types: Annotated[Optional[str], typer.Option("--type", help="Only these types, e.g. insert,delete "
                                                                     "(names or numbers).")] = None,
         collection: Annotated[Optional[str], typer.Option("--collection", help="Only this collection.")] = None,
         rocksmq: RocksOpt = None, nats: NatsOpt = None, nats_store: StoreOpt = None, config: ConfigOpt = None,
         user: UserOpt = None, password: PasswordOpt = None, token: TokenOpt = None, creds: CredsOpt = None,
         nkey: NkeyOpt = None, tls_ca: TlsCaOpt = None, tls_cert: TlsCertOpt = None, tls_key: TlsKeyOpt = None,
         timeout: TimeoutOpt = 5.0, json_mode: JsonOpt = False):
    """Decoded messages: type, time, collection, partition, segment, shard, rows, primary keys."""
    from mqctl.mq.channels import peek as peek_messages
    from mqctl.mq.sources import open_source

    options = source_options(rocksmq, nats, nats_store, config, user, password, token, creds, nkey, tls_ca, tls_cert,
                             tls_key, timeout)
    with open_source(options) as source:
        result = peek_messages(source, name, start=start, limit=limit, types=types, collection=collection)
        output(json_mode).emit(result, _render_peek)
