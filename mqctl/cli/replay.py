"""`mqctl replay --to-spark`: replay Milvus MQ channels into Apache Spark (parsing and printing only)."""

from __future__ import annotations

from typing import Annotated, List, Optional

import typer

from mqctl.cli.common import JsonOpt, output

app = typer.Typer(help="Replay MQ topics into Apache Spark (local or cluster) for backfill.")


def _render(result):
    from mqctl.output import Output

    def count(value):
        return "?" if value is None else f"{value:,}"

    rows = [(c.name, c.first_id, c.last_id, count(c.planned), count(c.messages), count(c.rows), count(c.bytes))
            for c in result.channels]
    table = Output.table(f"replay {result.source} → {result.target}",
                         ["channel", "from id", "to id", "planned", "messages", "rows", "bytes"], rows,
                         footer=["total", "", "", count(sum(c.planned for c in result.channels)), count(result.messages),
                                 count(result.rows), count(result.bytes)],
                         right=["from id", "to id", "planned", "messages", "rows", "bytes"])
    if not result.written:
        note = "nothing new to replay" + (f" (checkpoint {result.checkpoint} is up to date)" if result.checkpoint else "")
        return [table, note]
    what = f"{result.shape}" + (f" of {result.collection} (schema from {result.schema_origin})" if result.collection else "")
    lines = [f"wrote {what} as {result.format} ({result.mode}) in {result.partitions} partition(s)"
             + (f", run {result.run}" if result.run else "")]
    if result.rows is not None:
        lines.append(f"{count(result.messages)} messages, {count(result.rows)} rows, {count(result.bytes)} bytes in "
                     f"{result.seconds:.2f} s: {result.rows_per_second:,.0f} rows/s, "
                     f"{result.messages_per_second:,.0f} messages/s")
    else:
        lines.append(f"done in {result.seconds:.2f} s (executors could not report their counts to the driver)")
    if result.spark_startup_seconds is not None:
        lines.append(f"Spark start-up {result.spark_startup_seconds:.2f} s (not counted above)")
    if result.checkpoint:
        lines.append(f"checkpoint {result.checkpoint} moved to run {result.run}")
    return [table, *lines]


class _ChannelProgress:
    """One progress bar per channel: messages read of the planned total."""

    def __init__(self, progress):
        self.progress = progress
        self.tasks: dict[str, int] = {}

    def __call__(self, channels) -> None:
        for channel in channels:
            if channel.name not in self.tasks:
                self.tasks[channel.name] = self.progress.add_task(channel.name, total=max(channel.planned, 1))
            done = channel.messages or 0
            self.progress.update(self.tasks[channel.name], completed=done,
                                 total=max(channel.planned, done, 1))


@app.command(no_args_is_help=True)
def replay(
    to_spark: Annotated[bool, typer.Option("--to-spark", help="Replay into Apache Spark (the only target today).")] = False,
    nats: Annotated[Optional[str], typer.Option("--nats", help="A live NATS JetStream server URL.")] = None,
    rocksmq: Annotated[Optional[str], typer.Option("--rocksmq", help="A RocksMQ directory (rocksmq.path), read-only.")] = None,
    nats_store: Annotated[Optional[str], typer.Option("--nats-store", help="A stopped Milvus's natsmq storeDir.")] = None,
    config: Annotated[Optional[List[str]], typer.Option("--config", help="Milvus config file(s): replay the MQ they select.")] = None,
    user: Annotated[Optional[str], typer.Option("--user", help="NATS user.")] = None,
    password: Annotated[Optional[str], typer.Option("--password", help="NATS password.")] = None,
    token: Annotated[Optional[str], typer.Option("--token", help="NATS token.")] = None,
    creds: Annotated[Optional[str], typer.Option("--creds", help="NATS credentials file.")] = None,
    nkey: Annotated[Optional[str], typer.Option("--nkey", help="NATS nkey seed file.")] = None,
    tls_ca: Annotated[Optional[str], typer.Option("--tls-ca", help="CA file for NATS TLS.")] = None,
    tls_cert: Annotated[Optional[str], typer.Option("--tls-cert", help="Client certificate for NATS TLS.")] = None,
    tls_key: Annotated[Optional[str], typer.Option("--tls-key", help="Client key for NATS TLS.")] = None,
    channels: Annotated[Optional[List[str]], typer.Option("--channels", help="Channel names or globs (comma-separated or repeated); default all.")] = None,
    collection: Annotated[Optional[str], typer.Option("--collection", help="Collection name or id.")] = None,
    shape: Annotated[Optional[str], typer.Option("--shape", help="rows (entities; default with --collection) or messages.")] = None,
    start: Annotated[Optional[str], typer.Option("--from", help="First message: id/sequence, tso:N or ISO time.")] = None,
    end: Annotated[Optional[str], typer.Option("--to", help="Last message: id/sequence, tso:N or ISO time.")] = None,
    types: Annotated[Optional[str], typer.Option("--types", help="Message types, e.g. insert,delete.")] = None,
    out_path: Annotated[Optional[str], typer.Option("--output", help="Output path (a folder Spark writes into).")] = None,
    out_format: Annotated[str, typer.Option("--format", help="parquet, json, orc or csv.")] = "parquet",
    table: Annotated[Optional[str], typer.Option("--table", help="Write into this Spark table instead of a path.")] = None,
    mode: Annotated[Optional[str], typer.Option("--mode", help="append, overwrite or error (default error; append with --checkpoint).")] = None,
    partition_by: Annotated[Optional[str], typer.Option("--partition-by", help="Output columns to partition by, comma-separated.")] = None,
    partitions: Annotated[Optional[int], typer.Option("--partitions", min=1, help="Spark partitions to read with (default: one per 50,000 messages, at least one per channel).")] = None,
    master: Annotated[str, typer.Option("--master", help="Spark master: local[*], local[N], spark://..., yarn, k8s://...")] = "local[*]",
    spark_conf: Annotated[Optional[List[str]], typer.Option("--spark-conf", help="Spark setting KEY=VALUE (repeatable).")] = None,
    checkpoint: Annotated[Optional[str], typer.Option("--checkpoint", help="Resume file: replay only what earlier runs did not.")] = None,
    milvus: Annotated[Optional[str], typer.Option("--milvus", help="Milvus URI to take the collection schema from.")] = None,
    milvus_token: Annotated[Optional[str], typer.Option("--milvus-token", help="Milvus token (user:password).")] = None,
    json_mode: JsonOpt = False,
):
    """Replay Milvus MQ channels into Spark: messages, or the rows of one collection, written as files or a table."""
    from mqctl.errors import InputError
    from mqctl.replay.job import ReplayRequest, SourceChoice, run_replay
    from mqctl.replay.session import parse_spark_conf

    if not to_spark:
        raise InputError("choose where to replay to: --to-spark", hint="e.g. mqctl replay --to-spark --rocksmq DIR --output out")
    auth = {"user": user, "password": password, "token": token, "creds": creds, "nkey": nkey,
            "tls_ca": tls_ca, "tls_cert": tls_cert, "tls_key": tls_key}
    request = ReplayRequest(
        source=SourceChoice(rocksmq=rocksmq, nats=nats, nats_store=nats_store, config=list(config or []),
                            nats_auth={k: v for k, v in auth.items() if v}),
        output=out_path, format=out_format.lower(), table=table, mode=mode.lower() if mode else None,
        channels=[part.strip() for item in channels or [] for part in item.split(",") if part.strip()],
        collection=collection, shape=shape.lower() if shape else None, start=start, end=end, types=types,
        partition_by=[part.strip() for part in (partition_by or "").split(",") if part.strip()],
        partitions=partitions, master=master, spark_conf=parse_spark_conf(spark_conf or []),
        checkpoint=checkpoint, milvus=milvus, milvus_token=milvus_token)
    out = output(json_mode)
    out.info("planning the replay ...")
    with out.progress(transient=True) as progress:
        result = run_replay(request, on_progress=_ChannelProgress(progress))
    out.emit(result, _render)
