"""`mqctl replay --to-spark`: replay Milvus MQ channels into Apache Spark (parsing and printing only)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from mqctl.cli.common import EtcdOpt, EtcdRootOpt, MilvusOpt, output, takes_source
from mqctl.cli.terminal import shown
from mqctl.mq.sources import SourceOptions

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from mqctl.cli.terminal import FitTable
    from mqctl.replay.model import ChannelResult, ReplayResult

app = typer.Typer(help="Replay MQ topics into Apache Spark (local or cluster) for backfill.", add_completion=False)


def _render(result: ReplayResult) -> list[FitTable | str]:
    from mqctl.cli.terminal import ID, KEY, NUMBER, Column, Output

    def count(value: int | None) -> str:
        return "?" if value is None else f"{value:,}"

    rows = [
        (c.name, c.first_id, c.last_id, count(c.planned), count(c.messages), count(c.rows), count(c.bytes))
        for c in result.channels
    ]
    columns: list[Column | str] = [
        Column("channel", KEY),
        Column("from id", ID, 5),
        Column("to id", ID, 5),
        Column("planned", NUMBER, 2),
        Column("messages", NUMBER, 0),
        Column("rows", NUMBER, 1),
        Column("bytes", NUMBER, 3),
    ]
    table = Output.table(
        f"replay {result.source} → {result.target}",
        columns,
        rows,
        footer=[
            "total",
            "",
            "",
            count(sum(c.planned for c in result.channels)),
            count(result.messages),
            count(result.rows),
            count(result.bytes),
        ],
    )
    if not result.written:
        note = "nothing new to replay" + (
            f" (resume file {result.resume_file} is up to date)" if result.resume_file else ""
        )
        return [table, note]
    what = f"{result.shape}" + (
        f" of {result.collection} (schema from {result.schema_origin})" if result.collection else ""
    )
    lines = [
        f"wrote {what} as {result.format} (mode {result.mode}) in {result.partitions} partition(s)"
        + (f", run {result.run}" if result.run else "")
    ]
    if result.rows is not None:
        lines.append(
            f"{count(result.messages)} messages, {count(result.rows)} rows, {count(result.bytes)} bytes in "
            f"{result.seconds:.2f} s: {result.rows_per_second or 0:,.0f} rows/s, "
            f"{result.messages_per_second or 0:,.0f} messages/s"
        )
    else:
        lines.append(f"done in {result.seconds:.2f} s (executors could not report their counts to the driver)")
    if result.spark_startup_seconds is not None:
        lines.append(f"Spark start-up {result.spark_startup_seconds:.2f} s (not counted above)")
    if result.resume_file:
        lines.append(f"resume file {result.resume_file} moved to run {result.run}")
    return [table, *lines]


def _resume_file(new: str | None, old: str | None) -> str | None:
    """--resume-file, or the deprecated --checkpoint it was called before (one name for Milvus's channel
    checkpoints, another for Spark's checkpoint folder, a third for this file was one too many)."""
    from mqctl.errors import InputError

    if old is None:
        return new
    if new is not None:
        raise InputError("--checkpoint is the old name of --resume-file; give one of them", hint="drop --checkpoint")
    print("mqctl: --checkpoint FILE is now --resume-file FILE; the old name goes in a later release", file=sys.stderr)
    return old


class _ChannelProgress:
    """One progress bar per channel: messages read of the planned total."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.tasks: dict[str, TaskID] = {}

    def __call__(self, channels: list[ChannelResult]) -> None:
        for channel in channels:
            if channel.name not in self.tasks:
                self.tasks[channel.name] = self.progress.add_task(shown(channel.name), total=max(channel.planned, 1))
            done = channel.messages or 0
            self.progress.update(self.tasks[channel.name], completed=done, total=max(channel.planned, done, 1))


WHAT = "What to replay"
FOLLOW = "Follow (Spark Structured Streaming)"
WHERE = "Where to write"
SPARK = "Spark"
ToSparkOpt = Annotated[bool, typer.Option("--to-spark", help="Replay into Apache Spark (the only target today).")]
ChannelsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--channels", help="Channel names or globs, comma-separated or repeated (default: all).", rich_help_panel=WHAT
    ),
]
CollectionOpt = Annotated[str | None, typer.Option("--collection", help="Collection name or id.", rich_help_panel=WHAT)]
ShapeOpt = Annotated[
    str | None,
    typer.Option(
        "--shape", help="rows (the collection's entities; default with --collection) or messages.", rich_help_panel=WHAT
    ),
]
FromOpt = Annotated[
    str | None,
    typer.Option(
        "--from",
        help="First message: id/sequence, tso:N, ISO-8601 time (UTC), or checkpoint (only what Milvus has not "
        "persisted: after each vchannel's channel checkpoint in etcd, on 2.6 a Woodpecker position); with --follow also earliest (default) or "
        "latest, and only when the query starts (a restart resumes from its checkpoint).",
        rich_help_panel=WHAT,
    ),
]
ToOpt = Annotated[
    str | None,
    typer.Option("--to", help="Last message: id/sequence, tso:N or ISO-8601 time (UTC).", rich_help_panel=WHAT),
]
TypesOpt = Annotated[
    str | None, typer.Option("--types", help="Message types, e.g. insert,delete.", rich_help_panel=WHAT)
]
MilvusTokenOpt = Annotated[
    str | None,
    typer.Option(
        "--milvus-token",
        help="Milvus token, user:password (or env MQCTL_MILVUS_TOKEN).",
        envvar="MQCTL_MILVUS_TOKEN",
        rich_help_panel=WHAT,
    ),
]
OutputOpt = Annotated[str | None, typer.Option("--output", help="Output folder.", rich_help_panel=WHERE)]
FormatOpt = Annotated[str, typer.Option("--format", help="parquet, json, orc or csv.", rich_help_panel=WHERE)]
TableOpt = Annotated[
    str | None, typer.Option("--table", help="A Spark table instead of --output.", rich_help_panel=WHERE)
]
ModeOpt = Annotated[
    str | None,
    typer.Option(
        "--mode", help="append, overwrite or error (default: error; append with --resume-file).", rich_help_panel=WHERE
    ),
]
PartitionByOpt = Annotated[
    str | None,
    typer.Option("--partition-by", help="Output columns to partition by, comma-separated.", rich_help_panel=WHERE),
]
ResumeFileOpt = Annotated[
    str | None,
    typer.Option(
        "--resume-file",
        help="What earlier runs replayed: each run replays only what they did not (a local path or file: URL).",
        rich_help_panel=WHERE,
    ),
]
OldResumeFileOpt = Annotated[
    str | None,
    typer.Option("--checkpoint", hidden=True, help="Deprecated name of --resume-file."),
]
FollowOpt = Annotated[
    bool,
    typer.Option(
        "--follow",
        help="Keep following the channels with Spark Structured Streaming (needs --checkpoint-location).",
        rich_help_panel=FOLLOW,
    ),
]
CheckpointLocationOpt = Annotated[
    str | None,
    typer.Option(
        "--checkpoint-location",
        help="With --follow: Spark's checkpoint folder (the query's offsets); the same folder resumes the query.",
        rich_help_panel=FOLLOW,
    ),
]
TriggerOpt = Annotated[
    float,
    typer.Option("--trigger", help="With --follow: seconds between micro-batches.", rich_help_panel=FOLLOW),
]
AvailableNowOpt = Annotated[
    bool,
    typer.Option(
        "--available-now", help="With --follow: catch up with what is there now, then stop.", rich_help_panel=FOLLOW
    ),
]
AllowDataLossOpt = Annotated[
    bool,
    typer.Option(
        "--allow-data-loss",
        help="With --follow: when retention removed messages the query had not read, warn and go on instead of failing.",
        rich_help_panel=FOLLOW,
    ),
]
MaxMessagesOpt = Annotated[
    int | None,
    typer.Option(
        "--max-messages-per-trigger",
        min=1,
        help="With --follow: at most this many messages per micro-batch, shared among the channels.",
        rich_help_panel=FOLLOW,
    ),
]
PartitionsOpt = Annotated[
    int | None,
    typer.Option(
        "--partitions",
        min=1,
        help="Read partitions (default: one per 50,000 messages, at least one per channel).",
        rich_help_panel=SPARK,
    ),
]
MasterOpt = Annotated[
    str,
    typer.Option("--master", help="local[*], local[N], spark://HOST:PORT, yarn or k8s://...", rich_help_panel=SPARK),
]
RemoteOpt = Annotated[
    str | None,
    typer.Option(
        "--remote", help="A Spark Connect server, sc://HOST:PORT, instead of --master.", rich_help_panel=SPARK
    ),
]
NoShipOpt = Annotated[
    bool,
    typer.Option(
        "--no-ship",
        help="Do not send mqctl's runtime to the executors: the cluster has mqctl installed.",
        rich_help_panel=SPARK,
    ),
]
SparkConfOpt = Annotated[
    list[str] | None, typer.Option("--spark-conf", help="Spark setting KEY=VALUE (repeatable).", rich_help_panel=SPARK)
]


def _split(values: list[str] | str | None) -> list[str]:
    items = [values] if isinstance(values, str) else values or []
    return [part.strip() for item in items for part in item.split(",") if part.strip()]


@app.command(no_args_is_help=True)
@takes_source()
def replay(
    *,
    to_spark: ToSparkOpt = False,
    source: SourceOptions,
    channels: ChannelsOpt = None,
    collection: CollectionOpt = None,
    shape: ShapeOpt = None,
    start: FromOpt = None,
    end: ToOpt = None,
    types: TypesOpt = None,
    milvus: MilvusOpt = None,
    milvus_token: MilvusTokenOpt = None,
    etcd: EtcdOpt = None,
    etcd_root: EtcdRootOpt = None,
    out_path: OutputOpt = None,
    out_format: FormatOpt = "parquet",
    table: TableOpt = None,
    mode: ModeOpt = None,
    partition_by: PartitionByOpt = None,
    resume_file: ResumeFileOpt = None,
    old_resume_file: OldResumeFileOpt = None,
    partitions: PartitionsOpt = None,
    follow: FollowOpt = False,
    checkpoint_location: CheckpointLocationOpt = None,
    trigger: TriggerOpt = 5.0,
    available_now: AvailableNowOpt = False,
    allow_data_loss: AllowDataLossOpt = False,
    max_messages_per_trigger: MaxMessagesOpt = None,
    master: MasterOpt = "local[*]",
    remote: RemoteOpt = None,
    no_ship: NoShipOpt = False,
    spark_conf: SparkConfOpt = None,
) -> None:
    """Replay Milvus MQ channels into Spark: messages, or the rows of one collection, written as files or a table.

    --woodpecker (or --config of a 2.6 on Woodpecker, which says where the WAL is) reads a Milvus 2.6+ Woodpecker
    WAL, in batch or with --follow (a corrupt segment stops the replay, exit 3), from a folder or s3://BUCKET/PREFIX
    (--s3-endpoint; executors get the keys from their environment, never from an option); with --etcd its logs are
    named after their pchannels and --from checkpoint starts after the 2.6 channel checkpoints: format from Woodpecker
    v0.1.x / Milvus v2.6.x source; not yet verified on a running 2.6; s3:// reads tested against moto's S3 server, not
    yet against MinIO or AWS."""
    from mqctl.errors import InputError
    from mqctl.replay.job import run_replay
    from mqctl.replay.model import ReplayRequest
    from mqctl.replay.session import parse_spark_conf

    if not to_spark:
        raise InputError(
            "choose where to replay to: --to-spark",
            hint="e.g. mqctl replay --to-spark --rocksmq DIR --collection NAME --output OUT",
        )
    from mqctl.mq.sources import resolve_source

    source = resolve_source(source)  # a WAL --config derives is read as --woodpecker is, from here on
    if source.woodpecker:
        import dataclasses

        source = dataclasses.replace(source, etcd=etcd, etcd_root=etcd_root)  # its logs named after their pchannels
    request = ReplayRequest(
        source=source,
        output=out_path,
        format=out_format.lower(),
        table=table,
        mode=mode.lower() if mode else None,
        channels=_split(channels),
        collection=collection,
        shape=shape.lower() if shape else None,
        start=start,
        end=end,
        types=types,
        partition_by=_split(partition_by),
        partitions=partitions,
        master=master,
        remote=remote,
        ship=not no_ship,
        spark_conf=parse_spark_conf(spark_conf or []),
        resume_file=_resume_file(resume_file, old_resume_file),
        milvus=milvus,
        milvus_token=milvus_token,
        etcd=etcd,
        etcd_root=etcd_root,
    )
    out = output()
    follow_only = {
        "--checkpoint-location": checkpoint_location,
        "--available-now": available_now,
        "--allow-data-loss": allow_data_loss,
        "--max-messages-per-trigger": max_messages_per_trigger,
        "--trigger": trigger != 5.0,
    }
    if follow:
        from mqctl.replay.follow import FollowRequest

        follow_request = FollowRequest(
            replay=request,
            checkpoint_location=checkpoint_location or "",
            trigger_seconds=trigger,
            available_now=available_now,
            allow_data_loss=allow_data_loss,
            max_messages_per_trigger=max_messages_per_trigger,
        )
        _follow(follow_request, out)
        return
    given = [name for name, value in follow_only.items() if value]
    if given:
        raise InputError(f"{given[0]} goes with --follow", hint="add --follow, or drop it")
    out.info("planning the replay ...")
    with out.progress(transient=True) as progress:
        result = run_replay(request, on_progress=_ChannelProgress(progress))
    if partitions and result.partitions > partitions:
        out.info(
            f"--partitions {partitions} raised to {result.partitions}: every channel is read in at least one "
            "partition of its own"
        )
    out.emit(result, _render)


def _follow(request, out) -> None:
    """Run a follow query: a line when it starts, one per micro-batch, a summary when it stops."""
    from mqctl.replay.follow import run_follow

    def started(result) -> None:
        how = (
            f"resuming from {result.checkpoint_location} (--from ignored)"
            if result.resumed
            else f"new query from {result.started_from}, checkpoint {result.checkpoint_location}"
        )
        out.info(f"following {result.source} → {result.target}: {how}")

    def batch(progress) -> None:
        lag = "?" if progress.lag_seconds is None else f"{progress.lag_seconds:,.1f} s"
        out.info(
            f"batch {progress.batch}: {progress.rows:,} rows from {progress.messages:,} messages in "
            f"{progress.seconds:.2f} s; behind {progress.behind:,} messages, {lag}"
        )
        if out.wide:
            for channel in progress.channels:
                seconds = "?" if channel.seconds is None else f"{channel.seconds:,.1f} s"
                out.info(f"  {channel.channel} at {channel.position}: behind {channel.behind:,} messages, {seconds}")

    result = run_follow(request, on_batch=batch, on_start=started)
    out.emit(result, _render_follow)


def _render_follow(result):
    what = f"{result.shape}" + (f" of {result.collection}" if result.collection else "")
    lines = [
        f"followed {result.source} → {result.target} ({what} as {result.format}): {result.batches} batch(es), "
        f"{result.rows:,} rows from {result.messages:,} messages in {result.seconds:.2f} s",
        f"stopped: {result.stopped}; checkpoint {result.checkpoint_location}",
    ]
    if result.spark_startup_seconds is not None:
        lines.append(f"Spark start-up {result.spark_startup_seconds:.2f} s (not counted above)")
    return lines
