"""`milvus_mq`: a Spark Python data source (pyspark.sql.datasource, Spark 4) over Milvus's MQs.

    from mqctl.replay.datasource import register
    register(spark)
    df = (spark.read.format("milvus_mq").option("nats", "nats://127.0.0.1:4222")
          .option("channels", "by-dev-rootcoord-dml_*").load())

Options are plain strings (see options.py); the data source, its reader and its partitions are
pickled to Python workers, and each partition opens its own source inside `read()`.

This module is pickled by value (see `register`): a Python worker on a cluster can unpickle it
without mqctl installed, and its first step, `_load_runtime`, puts mqctl's shipped runtime (see
shipping.py) on the path or says in one line what the worker lacks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

    from mqctl.replay.options import ReplayOptions

FORMAT = "milvus_mq"
RUNTIME_DIR = "mqctl_runtime"  # where Spark unpacks the shipped runtime, in the worker's working directory
RUNTIME_MANIFEST = "mqctl-runtime.json"
# What the reader imports on a worker: checked up front, so a missing one is one clear line.
EXECUTOR_MODULES = (
    "mqctl.replay.rows",
    "mqctl.mq.rocksmq.reader",
    "mqctl.mq.nats.client",
    "mqctl.mq.nats.reads",
    "google.protobuf",
    "rocksdict",
    "nats",
    "pyarrow",
)


class ExecutorSetupError(RuntimeError):
    """A Python worker cannot run mqctl's reader (no runtime, another Python version)."""


class ChannelRangePartition(InputPartition):
    """Messages first <= id <= last of one channel; `store`: the planned RocksMQ store's marker."""

    def __init__(self, channel: str, first: int, last: int, messages: int, store: str | None = None):
        super().__init__((channel, first, last))
        self.channel, self.first, self.last, self.messages, self.store = channel, first, last, messages, store


def _load_runtime() -> None:
    """Make mqctl importable here: the shipped runtime in the working directory wins over an
    installed mqctl; without either, or on another Python minor version, one clear error."""
    import json
    import os
    import socket
    import sys

    host = socket.gethostname()
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    runtime = os.path.abspath(RUNTIME_DIR)
    manifest = os.path.join(runtime, RUNTIME_MANIFEST)
    if os.path.isfile(manifest):
        with open(manifest) as handle:
            built_for = json.load(handle)
        if built_for["python"] != python:
            raise ExecutorSetupError(
                f"Python worker on {host} runs Python {python} ({sys.executable}), but mqctl's runtime was shipped for "
                f"Python {built_for['python']}, the driver's: run executors with Python {built_for['python']} "
                "(spark.pyspark.python / PYSPARK_PYTHON), or install mqctl on them and replay with --no-ship"
            )
        if runtime not in sys.path:
            sys.path.insert(0, runtime)
    import importlib

    try:
        for module in EXECUTOR_MODULES:
            importlib.import_module(module)
    except ImportError as err:
        shipped = "with mqctl's shipped runtime" if os.path.isfile(manifest) else "no runtime shipped"
        raise ExecutorSetupError(
            f"Python worker on {host} (Python {python}, {sys.executable}, {shipped}) cannot import {err.name}: "
            "pip install mqctl into that Python, point PYSPARK_PYTHON (spark.pyspark.python) at one "
            "that has it, or on a cluster replay without --no-ship so mqctl ships its runtime"
        ) from None


class MilvusMQDataSource(DataSource):
    """Reads Milvus MQ channels (RocksMQ or NATS JetStream) as `messages` or `rows`."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        _load_runtime()
        from mqctl.replay.options import parse_options
        from mqctl.replay.schema import messages_ddl, rows_ddl, schema_from_json

        opts = parse_options(self.options)
        if opts.shape == "messages":
            return messages_ddl()
        self.collection_schema = opts.collection_schema or _find_schema_json(opts)
        return rows_ddl(schema_from_json(self.collection_schema)[0])

    def reader(self, schema: StructType) -> MilvusMQReader:
        _load_runtime()
        from mqctl.replay.options import parse_options

        options = dict(self.options)
        opts = parse_options(options)
        if opts.shape == "rows":
            # schema() is skipped when the caller gave a schema itself: find the collection here then.
            options["collection_schema"] = (
                getattr(self, "collection_schema", None) or opts.collection_schema or _find_schema_json(opts)
            )
        return MilvusMQReader(options, schema)


class MilvusMQReader(DataSourceReader):
    def __init__(self, options: dict[str, str], schema: StructType):
        self.options = options
        self.schema = schema

    def partitions(self) -> list[ChannelRangePartition]:
        _load_runtime()
        from mqctl.replay.options import parse_options
        from mqctl.replay.planning import plan_partitions

        opts = parse_options(self.options)
        source = opts.open_source()
        try:
            pieces = plan_partitions(source, opts)
            store = source.store_identity()
        finally:
            source.close()
        return [ChannelRangePartition(p.channel, p.first, p.last, p.messages, store) for p in pieces]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, ChannelRangePartition):  # Spark's stand-in (None) when there is nothing to read
            return iter(())
        _load_runtime()
        from mqctl.replay.executor import checked_read
        from mqctl.replay.options import parse_options
        from mqctl.replay.planning import ChannelSpan
        from mqctl.replay.progress import ProgressReporter
        from mqctl.replay.rows import read_span
        from mqctl.replay.schema import schema_from_json

        opts = parse_options(self.options)
        schema_json = opts.collection_schema if opts.shape == "rows" else None  # reader() sets it for rows
        collection = schema_from_json(schema_json)[0] if schema_json else None
        span = ChannelSpan(partition.channel, partition.first, partition.last, partition.messages)
        reporter = ProgressReporter(opts.progress, f"{span.channel}/{span.first}", span.channel)
        return checked_read(
            opts, partition.store, read_span(opts, span, _arrow_schema(self.schema), collection, reporter)
        )


def _arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema of the batches read() yields; timestamps in UTC (the replay's session time zone)."""
    from pyspark.sql.pandas import types

    to_arrow_schema: Any = types.to_arrow_schema  # its keywords differ between pyspark releases
    try:
        return to_arrow_schema(schema, timezone="UTC")  # pyspark >= 4.1
    except TypeError:
        return to_arrow_schema(schema)  # pyspark 4.0: timestamp_utc=True by default


def _find_schema_json(opts: ReplayOptions) -> str:
    _load_runtime()
    from mqctl.replay.collection import find_schema
    from mqctl.replay.schema import schema_to_json

    source = opts.open_source()
    try:
        return schema_to_json(*find_schema(source, opts))
    finally:
        source.close()


def register(spark: Any) -> None:
    """Make `spark.read.format("milvus_mq")` available in this Spark session (classic or Connect)."""
    import sys

    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]  # vendored, untyped
    spark.dataSource.register(MilvusMQDataSource)
