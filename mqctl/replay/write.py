"""The write half of a replay: run the Spark job that reads with `milvus_mq` and writes files or a table,
while executors report their counts to the driver; a Spark failure becomes one line."""

from __future__ import annotations

import re
import threading
import time
from typing import TYPE_CHECKING, Any

from mqctl.errors import InputError, PreconditionError
from mqctl.replay.reader.progress import PartitionCounts, ProgressCollector
from mqctl.replay.resume import RUN_COLUMN, ResumeState

if TYPE_CHECKING:
    from mqctl.replay.model import ProgressCallback, ReplayRequest, ReplayResult

PROGRESS_INTERVAL = 0.3
PYTHON_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception): ")


def write_with_progress(
    spark: Any,
    request: ReplayRequest,
    options: dict[str, str],
    result: ReplayResult,
    resume: ResumeState | None,
    on_progress: ProgressCallback | None,
) -> None:
    """Write, showing per-channel progress as executors report it; `spark`: a classic or a Connect session."""
    from mqctl.replay.session import progress_host

    host = progress_host(spark)
    try:
        collector = ProgressCollector(host)
    except OSError:  # the driver's advertised address is not bindable here: executors cannot report
        collector = ProgressCollector("127.0.0.1")
    options["progress"] = collector.address
    stop = threading.Event()

    def report() -> None:
        while not stop.wait(PROGRESS_INTERVAL):
            _apply_counts(result, collector.per_channel())
            if on_progress is not None:
                on_progress(result.channels)

    watcher = threading.Thread(target=report, name="replay-progress-display", daemon=True)
    watcher.start()
    started = time.monotonic()
    try:
        _write(spark, request, options, resume)
    finally:
        stop.set()
        watcher.join()
        result.seconds = round(time.monotonic() - started, 3)
        final = collector.per_channel()
        collector.close()
    result.written = True
    complete = collector.finished() == result.partitions
    _apply_counts(result, final, complete=complete)
    if on_progress is not None:
        on_progress(result.channels)
    if complete and result.seconds > 0 and result.rows is not None and result.messages is not None:
        result.rows_per_second = round(result.rows / result.seconds, 1)
        result.messages_per_second = round(result.messages / result.seconds, 1)


def _apply_counts(result: ReplayResult, counts: dict[str, PartitionCounts], *, complete: bool = True) -> None:
    if not complete:
        # Some executors could not reach the driver: the counts would be too low, so say nothing.
        for channel in result.channels:
            channel.messages = channel.rows = channel.bytes = None
        result.messages = result.rows = result.bytes = None
        return
    found = [counts.get(channel.name) or PartitionCounts(channel.name) for channel in result.channels]
    for channel, count in zip(result.channels, found):
        channel.messages, channel.rows, channel.bytes = count.messages, count.rows, count.bytes
    result.messages = sum(count.messages for count in found)
    result.rows = sum(count.rows for count in found)
    result.bytes = sum(count.bytes for count in found)


def _write(spark: Any, request: ReplayRequest, options: dict[str, str], resume: ResumeState | None) -> None:
    """Read with `milvus_mq` and write; a Spark failure becomes one line (and a fix when known)."""
    try:
        _read_and_write(spark, request, options, resume)
    except (InputError, PreconditionError):
        raise
    except Exception as err:
        line = spark_error_line(err)
        says_fix = line.startswith(("executor on ", "Python worker on "))
        hint = None if says_fix else "run with --debug for Spark's full error"
        raise PreconditionError(f"the Spark job failed: {line}", hint=hint) from err


def _read_and_write(spark: Any, request: ReplayRequest, options: dict[str, str], resume: ResumeState | None) -> None:
    from pyspark.sql import functions as F

    from mqctl.replay.datasource import FORMAT

    df = spark.read.format(FORMAT).options(**options).load()
    partition_by = list(request.partition_by)
    mode = request.mode or "error"
    if resume is not None:
        # Each run owns the part directory replay_run=N and overwrites only that one (see resume.py).
        df = df.withColumn(RUN_COLUMN, F.lit(resume.next_run))
        partition_by = [RUN_COLUMN, *partition_by]
        spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
        mode = "overwrite"
    if request.format == "csv":
        df = _flat_for_csv(df)
    if request.table:
        _write_table(spark, df, request.table, request, mode, partition_by, resume is not None)
        return
    writer = df.write.format(request.format).mode(mode)
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.save(request.output)


def _write_table(
    spark: Any, df: Any, table: str, request: ReplayRequest, mode: str, partition_by: list[str], resumable: bool
) -> None:
    exists = spark.catalog.tableExists(table)
    if exists and request.mode == "error":
        raise PreconditionError(
            f"table {table} already exists and --mode is error",
            hint="use --mode append or --mode overwrite, or another --table",
        )
    if exists and resumable:
        df.select(*spark.table(table).columns).write.insertInto(table, overwrite=True)
        return
    writer = df.write.format(request.format).mode(mode)
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.saveAsTable(table)


def _flat_for_csv(df: Any) -> Any:
    """CSV holds no arrays, maps or binary: vectors and maps become JSON text, binary base64."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, BinaryType, MapType

    columns = []
    for column in df.schema.fields:
        ref = F.col(f"`{column.name}`")
        if isinstance(column.dataType, (ArrayType, MapType)):
            ref = F.to_json(ref)
        elif isinstance(column.dataType, BinaryType):
            ref = F.base64(ref)
        columns.append(ref.alias(column.name))
    return df.select(*columns)


def spark_error_line(err: Exception) -> str:
    """The one line of a Spark error that says what went wrong: an mqctl error raised in a Python
    worker, else the last Python exception line of the worker's traceback, else the first line."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    for line in lines:
        for marker in ("mqctl.errors.InputError: ", "mqctl.errors.PreconditionError: ", "ExecutorSetupError: "):
            if marker in line:
                return line.split(marker, 1)[1]
    python_errors = [line for line in lines if PYTHON_ERROR_LINE.match(line)]
    if python_errors:
        return python_errors[-1]
    return lines[0] if lines else type(err).__name__
