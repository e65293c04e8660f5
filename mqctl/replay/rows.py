"""The two row shapes, built on an executor from decoded messages into Arrow record batches.

`messages`: one row per MQ message. `rows`: one row per entity of one collection, the
collection's typed columns plus `_op`, `_ts`, `_channel`, `_seq`; a delete carries only its
primary key. Arrow batches go to Spark without a per-value Python conversion step.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from mqctl.mq.messages import CollectionSchemaInfo, DecodedMessage, insert_columns
from mqctl.mq.model import RawMessage
from mqctl.replay.options import ReplayOptions
from mqctl.replay.planning import ChannelSpan
from mqctl.replay.progress import ProgressReporter
from mqctl.replay.schema import MESSAGE_COLUMNS, ROW_META_COLUMNS, type_key

BATCH_ROWS = 8192
INSERT, DELETE, TIME_TICK = 400, 401, 1200


class MessageBatch:
    """Columns of the `messages` shape."""

    def __init__(self, arrow_schema):
        self.arrow_schema = arrow_schema
        self.columns: list[list] = [[] for _ in MESSAGE_COLUMNS]
        self.size = 0

    def add(self, raw: RawMessage, msg: DecodedMessage) -> int:
        values = (raw.channel, raw.id, msg.type, msg.type_code, msg.tso, msg.time, msg.collection_id, msg.collection,
                  msg.partition_id, msg.partition, msg.segment_id, msg.shard, msg.rows, msg.payload_size, msg.error)
        for column, value in zip(self.columns, values):
            column.append(value)
        self.size += 1
        return 1

    def flush(self):
        batch = _record_batch(self.columns, self.arrow_schema)
        self.columns = [[] for _ in MESSAGE_COLUMNS]
        self.size = 0
        return batch


class EntityBatch:
    """Columns of the `rows` shape for one collection."""

    def __init__(self, arrow_schema, schema: CollectionSchemaInfo):
        self.arrow_schema = arrow_schema
        self.fields = [f.name for f in schema.fields]
        self.primary_key = schema.primary.name if schema.primary else None
        self.converters = {f.name: _converter(f.type) for f in schema.fields}
        self.columns: list[list] = []
        self.size = 0
        self._reset()

    def _reset(self) -> None:
        self.columns = [[] for _ in range(len(self.fields) + len(ROW_META_COLUMNS))]
        self.size = 0

    def add(self, raw: RawMessage, msg: DecodedMessage) -> int:
        if msg.type_code == INSERT:
            values = insert_columns(msg)
            count = len(next(iter(values.values()), []))
        else:
            values = {self.primary_key: msg.pks} if self.primary_key else {}
            count = len(msg.pks)
        if not count:
            return 0
        for column, name in zip(self.columns, self.fields):
            data = values.get(name)
            if data is None:
                column.extend([None] * count)
            else:
                convert = self.converters[name]
                column.extend(data if convert is None else [None if v is None else convert(v) for v in data])
        timestamps = list(msg.proto.timestamps) if msg.proto is not None else []
        if len(timestamps) != count:
            timestamps = [msg.tso] * count
        op, ts, channel, seq = self.columns[len(self.fields):]
        op.extend(["insert" if msg.type_code == INSERT else "delete"] * count)
        ts.extend(timestamps)
        channel.extend([raw.channel] * count)
        seq.extend([raw.id] * count)
        self.size += count
        return count

    def flush(self):
        batch = _record_batch(self.columns, self.arrow_schema)
        self._reset()
        return batch


def _record_batch(columns: list[list], arrow_schema):
    import pyarrow as pa

    arrays = [pa.array(column, type=field.type) for column, field in zip(columns, arrow_schema)]
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)


def _converter(milvus_type: str) -> Callable[[Any], Any] | None:
    """How a decoded value becomes what its Spark column holds (None: as decoded)."""
    key = type_key(milvus_type)
    if key in ("FLOAT16VECTOR", "BFLOAT16VECTOR"):
        return _half_floats if key == "FLOAT16VECTOR" else _bfloat16s
    if key == "SPARSEFLOATVECTOR":
        return lambda sparse: list(sparse.items())
    if key == "JSON":
        return lambda value: value if isinstance(value, str) else bytes(value).decode("utf-8", errors="replace")
    return None


def _half_floats(raw: bytes) -> list[float]:
    import numpy as np

    return np.frombuffer(raw, dtype="<f2").astype("float32").tolist()


def _bfloat16s(raw: bytes) -> list[float]:
    import numpy as np

    return (np.frombuffer(raw, dtype="<u2").astype("uint32") << 16).view("float32").tolist()


def entity_matches(msg: DecodedMessage, schema: CollectionSchemaInfo) -> bool:
    if schema.collection_id is not None and msg.collection_id is not None:
        return msg.collection_id == schema.collection_id
    return msg.collection == schema.name


def collection_matches(msg: DecodedMessage, wanted: str) -> bool:
    """True when a message belongs to the collection named by `wanted` (a name or a decimal id)."""
    if wanted.isdigit() and msg.collection_id is not None and int(wanted) == msg.collection_id:
        return True
    return msg.collection == wanted


def read_span(opts: ReplayOptions, span: ChannelSpan, arrow_schema, schema: CollectionSchemaInfo | None,
              reporter: ProgressReporter) -> Iterator:
    """Arrow record batches of one channel span; counts go to `reporter` as messages are read."""
    from mqctl.mq.messages import decode

    batch = EntityBatch(arrow_schema, schema) if schema is not None else MessageBatch(arrow_schema)
    start_tso = opts.start.value if opts.start is not None and opts.start.kind == "tso" else None
    end_tso = opts.end.value if opts.end is not None and opts.end.kind == "tso" else None
    schemas = {schema.collection_id: schema} if schema is not None and schema.collection_id else None
    source = opts.open_source()
    try:
        for raw in source.iter_messages(span.channel, span.first, span.last):
            msg = decode(raw.data, raw.headers, schemas=schemas)
            if end_tso is not None and msg.type_code == TIME_TICK and (msg.tso or 0) > end_tso:
                # After a time tick T no message with a TSO below T follows on this channel.
                reporter.add(1, 0, len(raw.data))
                break
            added = 0
            if _selected(opts, msg, schema, start_tso, end_tso):
                added = batch.add(raw, msg)
            reporter.add(1, added, len(raw.data))
            if batch.size >= BATCH_ROWS:
                yield batch.flush()
        if batch.size:
            yield batch.flush()
    finally:
        source.close()
    reporter.finish()


def _selected(opts: ReplayOptions, msg: DecodedMessage, schema: CollectionSchemaInfo | None,
              start_tso: int | None, end_tso: int | None) -> bool:
    if not opts.wants(msg.type_code):
        return False
    if (start_tso is not None or end_tso is not None) and msg.tso is None:
        return False
    if start_tso is not None and msg.tso < start_tso:
        return False
    if end_tso is not None and msg.tso > end_tso:
        return False
    if schema is not None:
        return entity_matches(msg, schema)
    return opts.collection is None or collection_matches(msg, opts.collection)
