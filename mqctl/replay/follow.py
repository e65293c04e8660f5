"""`mqctl replay --to-spark --follow`: keep an output in step with a live Milvus, on Spark Structured Streaming.

The query reads `spark.readStream.format("milvus_mq")` (see stream.py) and writes with Spark's file or
table sink. Spark's checkpoint (`--checkpoint-location DIR`) holds the offsets, and the file sink's
`_spark_metadata` log records which files each batch committed, so a batch that is retried after a crash
or a kill rewrites nothing twice: each message lands in the output exactly once (as Spark reads it back).

Beside Spark's own files, the checkpoint holds `mqctl-follow.json`: the source, target and selection the
query was started for (another is refused) and how it started (`--from`), so that a restart keeps the
same filters and ignores a new `--from`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqctl.errors import InputError, PreconditionError
from mqctl.files import local_file_option, replace_atomically, write_target
from mqctl.replay.job import check_no_overlap, source_options, table_folders
from mqctl.replay.model import FORMATS, ReplayRequest
from mqctl.replay.reader.options import FROM_CHECKPOINT, parse_bound, parse_options
from mqctl.replay.reader.positions import ChannelLag

STATE_FILE = "mqctl-follow.json"
STATE_FORMAT = "mqctl-follow/1"
DEFAULT_TRIGGER_SECONDS = 5.0
POLL_SECONDS = 0.5
STARTS = ("earliest", "latest")


@dataclass
class FollowRequest:
    replay: ReplayRequest  # source, selection, target and Spark settings, as a batch replay takes them
    checkpoint_location: str
    trigger_seconds: float = DEFAULT_TRIGGER_SECONDS
    available_now: bool = False
    allow_data_loss: bool = False
    max_messages_per_trigger: int | None = None


@dataclass
class BatchProgress:
    """One committed micro-batch, as the progress line shows it."""

    batch: int
    rows: int
    messages: int
    seconds: float  # the batch's duration
    behind: int  # messages stored after the query's positions, all channels
    lag_seconds: float | None  # the largest channel lag: now minus the newest message read
    channels: list[ChannelLag] = field(default_factory=list)


@dataclass
class FollowResult:
    source: str
    target: str
    format: str
    shape: str
    collection: str | None
    checkpoint_location: str
    resumed: bool
    started_from: str  # earliest | latest | checkpoint | tso:N | an ISO time | an id
    batches: int
    rows: int
    messages: int
    seconds: float
    stopped: str  # caught up (available now) | SIGINT | SIGTERM | ...
    spark_startup_seconds: float | None
    positions: dict[str, int] = field(default_factory=dict)


BatchCallback = Callable[[BatchProgress], None]


# ---------------------------------------------------------------------------------- checks
def check_request(request: FollowRequest) -> FollowRequest:
    """Everything that needs no I/O; the replay part with its defaults filled in."""
    replay = request.replay
    if bool(replay.output) == bool(replay.table):
        raise InputError("give exactly one target: --output PATH (with --format) or --table NAME")
    if replay.format not in FORMATS:
        raise InputError(f"--format {replay.format!r} is not one of {', '.join(FORMATS)}")
    if replay.resume_file:
        raise InputError(
            "--resume-file FILE is the resume file of batch replays; a follow query keeps its offsets in Spark's "
            "checkpoint folder",
            hint="use --checkpoint-location DIR with --follow",
        )
    if replay.mode:
        raise InputError("--mode does not apply to --follow: a follow query only appends", hint="drop --mode")
    if replay.end:
        raise InputError("--follow reads without an end: --to is for batch replays", hint="drop --to")
    if not request.checkpoint_location:
        raise InputError("--follow needs --checkpoint-location DIR: where Spark keeps the query's offsets")
    local_file_option(request.checkpoint_location, "--checkpoint-location")  # a file: URL is a folder here
    if request.trigger_seconds <= 0:
        raise InputError(f"--trigger {request.trigger_seconds:g} is not a positive number of seconds")
    if request.max_messages_per_trigger is not None and request.max_messages_per_trigger < 1:
        raise InputError("--max-messages-per-trigger must be a positive whole number")
    from mqctl.replay.session import check_master, check_remote

    check_master(replay.master)
    if replay.remote:
        check_remote(replay.remote)
    start = replay.start
    if (replay.etcd or replay.etcd_root) and start != FROM_CHECKPOINT and not replay.source.woodpecker:
        raise InputError(
            "--etcd/--etcd-root are read only with --from checkpoint (or --woodpecker, to name its logs)",
            hint="add --from checkpoint, or drop --etcd",
        )
    if start and start not in (*STARTS, FROM_CHECKPOINT):
        parse_bound(start, "--from", upper=False)
    shape = replay.shape or ("rows" if replay.collection else "messages")
    return dataclasses.replace(request, replay=dataclasses.replace(replay, shape=shape))


# ---------------------------------------------------------------------------------- the checkpoint's own file
@dataclass
class FollowState:
    """What `mqctl-follow.json` in the checkpoint folder records."""

    source: str
    target: str
    selection: dict[str, str]
    started_from: str
    stream_options: dict[str, str]  # startingOffsets, from, after: fixed when the query first started
    created: str

    def check_belongs_to(self, source: str, target: str, selection: dict[str, str], path: Path) -> None:
        if (self.source, self.target) != (source, target):
            raise InputError(
                f"this checkpoint belongs to a follow query of {self.source} into {self.target}, "
                f"not of {source} into {target}",
                location=str(path),
                hint="pass another --checkpoint-location for this source and output",
            )
        if self.selection != selection:
            differs = sorted(
                key for key in set(self.selection) | set(selection) if self.selection.get(key) != selection.get(key)
            )
            was = ", ".join(f"{key} {self.selection.get(key) or '(all)'}" for key in differs)
            now = ", ".join(f"{key} {selection.get(key) or '(all)'}" for key in differs)
            raise InputError(
                f"this checkpoint belongs to a follow query of {was}, not of {now}",
                location=str(path),
                hint="pass the same options as when the query started, or another --checkpoint-location",
            )


def has_offsets(checkpoint: Path) -> bool:
    """Spark wrote at least one batch's offsets there: a restart, not a new query."""
    offsets = checkpoint / "offsets"
    return offsets.is_dir() and any(entry.name.isdigit() for entry in offsets.iterdir())


def committed_positions(checkpoint: Path) -> dict[str, int]:
    """The positions after the newest committed batch: its entry in Spark's offsets log (whose last line holds
    this source's offset); a batch planned but not committed does not count."""
    offsets, commits = checkpoint / "offsets", checkpoint / "commits"
    if not commits.is_dir():
        return {}
    batches = sorted((int(entry.name) for entry in commits.iterdir() if entry.name.isdigit()), reverse=True)
    for batch in batches:
        try:
            lines = (offsets / str(batch)).read_text().splitlines()
            return {str(k): int(v) for k, v in json.loads(lines[-1]).items()}
        except (OSError, ValueError, TypeError, AttributeError, IndexError):
            continue
    return {}


def load_state(checkpoint: Path) -> FollowState | None:
    path = checkpoint / STATE_FILE
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        raise InputError(f"cannot read the follow checkpoint's {STATE_FILE}: {err}", location=str(path)) from None
    if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
        raise InputError(f'not a follow checkpoint (expected "format": "{STATE_FORMAT}")', location=str(path))
    return FollowState(
        str(data["source"]),
        str(data["target"]),
        {str(k): str(v) for k, v in data["selection"].items()},
        str(data["started_from"]),
        {str(k): str(v) for k, v in data["stream_options"].items()},
        str(data.get("created", "")),
    )


def save_state(checkpoint: Path, state: FollowState) -> None:
    checkpoint.mkdir(parents=True, exist_ok=True)
    data = {"format": STATE_FORMAT, **dataclasses.asdict(state)}
    replace_atomically(checkpoint / STATE_FILE, (json.dumps(data, indent=2) + "\n").encode("utf-8"))


def _selection(replay: ReplayRequest) -> dict[str, str]:
    return {
        "channels": ",".join(replay.channels),
        "shape": replay.shape or "",
        "collection": replay.collection or "",
        "types": replay.types or "",
    }


def _start_options(request: FollowRequest) -> dict[str, str]:
    """The stream options a new query starts with, from --from."""
    start = request.replay.start or "earliest"
    if start in STARTS:
        return {"startingOffsets": start}
    if start == FROM_CHECKPOINT:
        from mqctl.replay.job import _milvus_checkpoints
        from mqctl.replay.reader.options import after_option

        return {"startingOffsets": "earliest", "after": after_option(_milvus_checkpoints(request.replay))}
    bound = parse_bound(start, "--from", upper=False)
    if bound.kind == "id":
        return {"startingOffsets": "earliest", "from": str(bound.value)}
    return {"startingOffsets": "earliest", "from": f"tso:{bound.value}"}


# ---------------------------------------------------------------------------------- the run
def run_follow(
    request: FollowRequest,
    *,
    spark=None,
    on_batch: BatchCallback | None = None,
    on_start: Callable[[FollowResult], None] | None = None,
) -> FollowResult:
    """Start (or resume) the follow query and run it until it caught up (--available-now) or a stopping signal
    asks it to stop; a signal lets the running batch commit first."""
    request = check_request(request)
    replay = request.replay
    target = f"table:{replay.table}" if replay.table else write_target(replay.output or "", "--output").spark
    if not replay.table:
        replay = dataclasses.replace(replay, output=target)
    checkpoint = local_file_option(request.checkpoint_location, "--checkpoint-location")
    check_no_overlap(
        replay.source,
        {"--output": replay.output, "--checkpoint-location": str(checkpoint), **table_folders(replay)},
    )
    if checkpoint.exists() and not checkpoint.is_dir():
        raise InputError(f"--checkpoint-location {checkpoint} is a file, not a folder")
    with source_options(replay.source) as (options, label):
        from mqctl.replay.job import _read_options

        read = _read_options(dataclasses.replace(replay, start=None))
        options.update(read)
        selection = _selection(replay)
        state = load_state(checkpoint)
        resumed = has_offsets(checkpoint)
        if resumed and state is None:
            raise InputError(
                f"{checkpoint} holds a streaming query's offsets but no {STATE_FILE}: it is not a follow checkpoint "
                "of mqctl",
                hint="pass another --checkpoint-location",
            )
        if resumed and state is not None:
            state.check_belongs_to(label, target, selection, checkpoint / STATE_FILE)
        else:
            now = dt.datetime.now(dt.timezone.utc).isoformat().replace("+00:00", "Z")
            state = FollowState(label, target, selection, replay.start or "earliest", _start_options(request), now)
        options.update(state.stream_options)
        options["failOnDataLoss"] = "false" if request.allow_data_loss else "true"
        if request.max_messages_per_trigger:
            options["maxMessagesPerTrigger"] = str(request.max_messages_per_trigger)
        opts = parse_options(options)
        columns = _plan_schema(opts, options)
        unknown = [column for column in replay.partition_by if column not in columns]
        if unknown:
            raise InputError(
                f"--partition-by {unknown[0]!r} is not a column of the {opts.shape} shape",
                hint=f"columns: {', '.join(columns)}",
            )
        if not resumed:
            save_state(checkpoint, state)
        result = FollowResult(
            source=label,
            target=target,
            format=replay.format,
            shape=opts.shape,
            collection=opts.collection,
            checkpoint_location=str(checkpoint),
            resumed=resumed,
            started_from=state.started_from,
            batches=0,
            rows=0,
            messages=0,
            seconds=0.0,
            stopped="",
            spark_startup_seconds=None,
        )
        if on_start is not None:
            on_start(result)
        own_session = spark is None
        if own_session:
            from mqctl.replay.session import start_session

            started = time.monotonic()
            conf = dict(replay.spark_conf)
            if replay.table and not replay.remote:
                conf.setdefault("spark.sql.catalogImplementation", "hive")
            spark = start_session(replay.master, conf, ship=replay.ship, remote=replay.remote, app_name="mqctl follow")
            result.spark_startup_seconds = round(time.monotonic() - started, 3)
        try:
            _run_query(spark, request, options, str(checkpoint), result, on_batch)
        finally:
            if own_session:
                spark.stop()
        if not result.positions and has_offsets(checkpoint):
            result.positions = committed_positions(checkpoint)
        return result


def _plan_schema(opts, options: dict[str, str]) -> list[str]:
    """Find the collection's schema now (rows shape), so the stream's columns are fixed; the shape's columns."""
    from mqctl.replay.reader.collection import find_schema
    from mqctl.replay.reader.schema import MESSAGE_COLUMNS, ROW_META_COLUMNS, rows_ddl, schema_to_json

    if opts.shape != "rows":
        return [name for name, _ in MESSAGE_COLUMNS]
    source = opts.open_source()
    try:
        schema, origin = find_schema(source, opts)
    finally:
        source.close()
    rows_ddl(schema)
    options["collection_schema"] = schema_to_json(schema, origin)
    return [f.name for f in schema.fields] + [name for name, _ in ROW_META_COLUMNS]


def _run_query(
    spark: Any,
    request: FollowRequest,
    options: dict[str, str],
    checkpoint: str,
    result: FollowResult,
    on_batch: BatchCallback | None,
) -> None:
    from mqctl.interrupts import requested_stop
    from mqctl.replay.datasource import FORMAT
    from mqctl.replay.write import _flat_for_csv, spark_error_line

    replay = request.replay
    started = time.monotonic()
    try:
        df = spark.readStream.format(FORMAT).options(**options).load()
        if replay.format == "csv":
            df = _flat_for_csv(df)
        writer = df.writeStream.format(replay.format).outputMode("append").option("checkpointLocation", checkpoint)
        if replay.partition_by:
            writer = writer.partitionBy(*replay.partition_by)
        if request.available_now:
            writer = writer.trigger(availableNow=True)
        else:
            writer = writer.trigger(processingTime=f"{request.trigger_seconds:g} seconds")
        query = writer.toTable(replay.table) if replay.table else writer.start(replay.output)
    except (InputError, PreconditionError):
        raise
    except Exception as err:
        raise PreconditionError(
            f"the follow query did not start: {spark_error_line(err)}", hint="run with --debug for Spark's full error"
        ) from err
    reported = -1
    opts = parse_options(options)
    try:
        with requested_stop() as stop:
            while True:
                finished = query.awaitTermination(POLL_SECONDS)
                reported = _report(query, opts, result, reported, on_batch)
                if finished:
                    result.stopped = "caught up (available now)"
                    break
                if stop and not query.status.get("isTriggerActive"):
                    query.stop()  # between batches: the last one has committed
                    reported = _report(query, opts, result, reported, on_batch)
                    result.stopped = stop.signal_name
                    break
    except (InputError, PreconditionError):
        raise
    except BaseException as err:
        if query.isActive:
            query.stop()
        if not isinstance(err, Exception):  # a second stopping signal: stop at once
            raise
        raise PreconditionError(f"the follow query failed: {spark_error_line(err)}", hint=_hint(err)) from err
    finally:
        result.seconds = round(time.monotonic() - started, 3)
    failure = query.exception()
    if failure is not None:
        raise PreconditionError(f"the follow query failed: {spark_error_line(failure)}", hint=_hint(failure))


def _hint(err: Exception) -> str | None:
    from mqctl.replay.write import spark_error_line

    line = spark_error_line(err)
    return (
        None
        if line.startswith(("data loss", "executor on ", "Python worker on "))
        else "run with --debug for Spark's full error"
    )


def _report(query: Any, opts, result: FollowResult, reported: int, on_batch: BatchCallback | None) -> int:
    """Progress lines for the batches that ran since the last call; the batch id reported last."""
    for progress in query.recentProgress:
        data = json.loads(progress.json)
        batch = int(data.get("batchId", -1))
        sources = data.get("sources") or []
        if batch <= reported or not sources:
            continue
        if "addBatch" not in (data.get("durationMs") or {}):
            continue  # an idle trigger's report (every noDataProgressEventInterval): nothing ran, its offsets may be unset
        start = _offsets(sources[0].get("startOffset"))
        end = _offsets(sources[0].get("endOffset"))
        if start == end and batch > 0 and not data.get("numInputRows"):
            continue  # an idle trigger's report
        reported = batch
        batch_progress = _batch_progress(opts, batch, data, start, end)
        result.batches += 1
        result.rows += batch_progress.rows
        result.messages += batch_progress.messages
        result.positions = end
        if on_batch is not None:
            on_batch(batch_progress)
    return reported


def _offsets(text: Any) -> dict[str, int]:
    if not text:
        return {}
    data = json.loads(text) if isinstance(text, str) else text
    return {str(k): int(v) for k, v in data.items()}


def _batch_progress(opts, batch: int, data: dict, start: dict[str, int], end: dict[str, int]) -> BatchProgress:
    from mqctl.replay.reader.positions import channel_lags, count_messages, is_time_ticked

    source = opts.open_source()
    try:
        messages = sum(count_messages(source, name, start.get(name, 0), position) for name, position in end.items())
        lags = channel_lags(source, end, int(time.time() * 1000))
    finally:
        source.close()
    # Channels without time ticks (the replicate channel) may be idle for days: they say nothing about lag.
    seconds = [lag.seconds for lag in lags if lag.seconds is not None and is_time_ticked(lag.channel)] or [
        lag.seconds for lag in lags if lag.seconds is not None
    ]
    return BatchProgress(
        batch=batch,
        rows=int(data.get("numInputRows") or 0),
        messages=messages,
        seconds=round(int((data.get("durationMs") or {}).get("triggerExecution", 0)) / 1000, 3),
        behind=sum(lag.behind for lag in lags),
        lag_seconds=round(max(seconds), 3) if seconds else None,
        channels=lags,
    )
