"""`milvus_mq`: a Spark Python data source (pyspark.sql.datasource, Spark 4) over Milvus's MQs.

    from mqctl.replay.datasource import register
    register(spark)
    df = (spark.read.format("milvus_mq").option("nats", "nats://127.0.0.1:4222")
          .option("channels", "by-dev-rootcoord-dml_*").load())

Options are plain strings (see options.py); the data source, its reader and its partitions are
pickled to Python workers, and each partition opens its own source inside `read()`.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

FORMAT = "milvus_mq"


class ChannelRangePartition(InputPartition):
    """Messages first <= id <= last of one channel."""

    def __init__(self, channel: str, first: int, last: int, messages: int):
        super().__init__((channel, first, last))
        self.channel, self.first, self.last, self.messages = channel, first, last, messages


class MilvusMQDataSource(DataSource):
    """Reads Milvus MQ channels (RocksMQ or NATS JetStream) as `messages` or `rows`."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        from mqctl.replay.options import parse_options
        from mqctl.replay.schema import messages_ddl, rows_ddl, schema_from_json

        opts = parse_options(self.options)
        if opts.shape == "messages":
            return messages_ddl()
        self.collection_schema = opts.collection_schema or _find_schema_json(opts)
        return rows_ddl(schema_from_json(self.collection_schema)[0])

    def reader(self, schema) -> "MilvusMQReader":
        from mqctl.replay.options import parse_options

        options = dict(self.options)
        opts = parse_options(options)
        if opts.shape == "rows":
            # schema() is skipped when the caller gave a schema itself: find the collection here then.
            options["collection_schema"] = getattr(self, "collection_schema", None) or opts.collection_schema \
                or _find_schema_json(opts)
        return MilvusMQReader(options, schema)


class MilvusMQReader(DataSourceReader):
    def __init__(self, options: dict[str, str], schema):
        self.options = options
        self.schema = schema

    def partitions(self) -> list[ChannelRangePartition]:
        from mqctl.replay.options import parse_options
        from mqctl.replay.planning import plan_partitions

        opts = parse_options(self.options)
        source = opts.open_source()
        try:
            pieces = plan_partitions(source, opts)
        finally:
            source.close()
        return [ChannelRangePartition(p.channel, p.first, p.last, p.messages) for p in pieces]

    def read(self, partition: ChannelRangePartition | None):
        if partition is None:  # Spark's stand-in when there is nothing to read
            return iter(())
        from pyspark.sql.pandas.types import to_arrow_schema

        from mqctl.replay.options import parse_options
        from mqctl.replay.planning import ChannelSpan
        from mqctl.replay.progress import ProgressReporter
        from mqctl.replay.rows import read_span
        from mqctl.replay.schema import schema_from_json

        opts = parse_options(self.options)
        collection = schema_from_json(opts.collection_schema)[0] if opts.shape == "rows" else None
        span = ChannelSpan(partition.channel, partition.first, partition.last, partition.messages)
        reporter = ProgressReporter(opts.progress, f"{span.channel}/{span.first}", span.channel)
        return read_span(opts, span, to_arrow_schema(self.schema), collection, reporter)


def _find_schema_json(opts) -> str:
    from mqctl.replay.collection import find_schema
    from mqctl.replay.schema import schema_to_json

    source = opts.open_source()
    try:
        return schema_to_json(*find_schema(source, opts))
    finally:
        source.close()


def register(spark) -> None:
    """Make `spark.read.format("milvus_mq")` available in this Spark session."""
    spark.dataSource.register(MilvusMQDataSource)
