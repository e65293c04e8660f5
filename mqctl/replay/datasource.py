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
    from pyspark.sql.types import StructType

    from mqctl.replay.reader.options import ReplayOptions
    from mqctl.replay.reader.stream import MilvusMQStreamReader

from mqctl.replay.reader.worker import (  # noqa: F401  (RUNTIME_*, ExecutorSetupError: part of this module's interface)
    EXECUTOR_MODULES,
    RUNTIME_DIR,
    RUNTIME_MANIFEST,
    ChannelRangePartition,
    ExecutorSetupError,
    _arrow_schema,
    _load_runtime,
)

FORMAT = "milvus_mq"


class MilvusMQDataSource(DataSource):
    """Reads Milvus MQ channels (RocksMQ or NATS JetStream) as `messages` or `rows`."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        _load_runtime()
        from mqctl.replay.reader.options import parse_options
        from mqctl.replay.reader.schema import messages_ddl, rows_ddl, schema_from_json

        opts = parse_options(self.options)
        if opts.shape == "messages":
            return messages_ddl()
        self.collection_schema = opts.collection_schema or _find_schema_json(opts)
        return rows_ddl(schema_from_json(self.collection_schema)[0])

    def reader(self, schema: StructType) -> MilvusMQReader:
        return MilvusMQReader(self._reader_options(), schema)

    def streamReader(self, schema: StructType) -> MilvusMQStreamReader:
        """`spark.readStream.format("milvus_mq")`: follow the channels (see stream.py)."""
        from mqctl.replay.reader.stream import MilvusMQStreamReader

        return MilvusMQStreamReader(self._reader_options(), schema)

    def _reader_options(self) -> dict[str, str]:
        """The options a batch or stream reader gets: the `rows` shape with its collection's schema found here,
        since schema() is skipped when the caller gave a schema itself."""
        _load_runtime()
        from mqctl.replay.reader.options import parse_options

        options = dict(self.options)
        opts = parse_options(options)
        if opts.shape == "rows":
            options["collection_schema"] = (
                getattr(self, "collection_schema", None) or opts.collection_schema or _find_schema_json(opts)
            )
        return options


class MilvusMQReader(DataSourceReader):
    def __init__(self, options: dict[str, str], schema: StructType):
        self.options = options
        self.schema = schema

    def partitions(self) -> list[ChannelRangePartition]:
        _load_runtime()
        from mqctl.replay.reader.options import parse_options
        from mqctl.replay.reader.planning import plan_partitions

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
        from mqctl.replay.model import ChannelSpan
        from mqctl.replay.reader.executor import checked_read
        from mqctl.replay.reader.options import parse_options
        from mqctl.replay.reader.progress import ProgressReporter
        from mqctl.replay.reader.rows import read_span
        from mqctl.replay.reader.schema import schema_from_json

        opts = parse_options(self.options)
        schema_json = opts.collection_schema if opts.shape == "rows" else None  # reader() sets it for rows
        collection = schema_from_json(schema_json)[0] if schema_json else None
        span = ChannelSpan(partition.channel, partition.first, partition.last, partition.messages)
        reporter = ProgressReporter(opts.progress, f"{span.channel}/{span.first}", span.channel)
        return checked_read(
            opts, partition.store, read_span(opts, span, _arrow_schema(self.schema), collection, reporter)
        )


def _find_schema_json(opts: ReplayOptions) -> str:
    _load_runtime()
    from mqctl.replay.reader.collection import find_schema
    from mqctl.replay.reader.schema import schema_to_json

    source = opts.open_source()
    try:
        return schema_to_json(*find_schema(source, opts))
    finally:
        source.close()


def register(spark: Any) -> None:
    """Make `spark.read.format("milvus_mq")` available in this Spark session (classic or Connect)."""
    import sys

    from pyspark import cloudpickle

    from mqctl.replay.reader import positions, stream, worker

    for module in (sys.modules[__name__], worker, stream, positions):
        cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]  # vendored, untyped
    spark.dataSource.register(MilvusMQDataSource)
