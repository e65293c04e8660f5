"""The two row shapes, built on an executor from decoded messages into Arrow record batches.

`messages`: one row per MQ message. `rows`: one row per entity of one collection, the
collection's typed columns plus `_op`, `_ts`, `_channel`, `_seq`; a delete carries only its
primary key. Arrow batches go to Spark without a per-value Python conversion step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from mqctl.mq.decode.columns import SCALAR_DATA, column_values
from mqctl.mq.decode.model import DecodedMessage
from mqctl.mq.decode.schemas import CollectionSchemaInfo
from mqctl.mq.model import RawMessage
from mqctl.replay.model import ChannelSpan
from mqctl.replay.reader.options import ReplayOptions
from mqctl.replay.reader.progress import ProgressReporter
from mqctl.replay.reader.schema import type_key
from mqctl.sorting import ascii_int

if TYPE_CHECKING:
    import pyarrow as pa  # untyped: its classes are Any to mypy

FieldData = Any  # a schema_pb2.FieldData message (generated protobuf code is untyped)

BATCH_ROWS = 8192
INSERT, TIME_TICK = 400, 1200


class MessageBatch:
    """Rows of the `messages` shape, kept as tuples and turned into columns once per batch."""

    def __init__(self, arrow_schema: pa.Schema):
        self.arrow_schema = arrow_schema
        self.rows: list[tuple[object, ...]] = []
        self.size = 0

    def add(self, raw: RawMessage, msg: DecodedMessage) -> int:
        self.rows.append(
            (
                raw.channel,
                raw.id,
                msg.type,
                msg.type_code,
                msg.tso,
                msg.time,
                msg.collection_id,
                msg.collection,
                msg.partition_id,
                msg.partition,
                msg.segment_id,
                msg.shard,
                msg.rows,
                msg.payload_size,
                msg.error,
                msg.detail,
            )
        )
        self.size += 1
        return 1

    def flush(self) -> pa.RecordBatch:
        import pyarrow as pa

        columns = zip(*self.rows)
        arrays = [pa.array(column, type=field.type) for column, field in zip(columns, self.arrow_schema)]
        self.rows = []
        self.size = 0
        return pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)


class ValueColumn:
    """A column held as Python values, converted by pyarrow once per batch."""

    def __init__(self, arrow_type: pa.DataType, convert: Callable[[Any], Any] | None):
        self.arrow_type = arrow_type
        self.convert = convert
        self.values: list[Any] = []

    def add_field(self, fd: FieldData) -> int:
        """Append an insert's FieldData; returns its row count."""
        if self.convert is None and fd.WhichOneof("field") == "scalars":
            member = SCALAR_DATA.get(fd.type)
            if member is not None:  # the protobuf container as it is: no intermediate list
                data = getattr(fd.scalars, member).data
                self.values.extend(data)
                return len(data)
        values = column_values(fd)
        self.add_values(values)
        return len(values)

    def add_values(self, values: list[Any]) -> None:
        convert = self.convert
        self.values.extend(values if convert is None else [None if v is None else convert(v) for v in values])

    def add_nulls(self, count: int) -> None:
        self.values.extend([None] * count)

    def take(self) -> pa.Array:
        import pyarrow as pa

        array = pa.array(self.values, type=self.arrow_type)
        self.values = []
        return array


class FloatVectorColumn:
    """Float vectors held flat (all floats, plus where each row starts): no Python list per row."""

    def __init__(self, arrow_type: pa.DataType):
        self.arrow_type = arrow_type
        self._reset()

    def _reset(self) -> None:
        self.floats: list[float] = []
        self.offsets: list[int] = [0]
        self.nulls: list[bool] = []
        self.has_nulls = False

    def add_field(self, fd: FieldData) -> int:
        vectors = fd.vectors
        if fd.WhichOneof("field") != "vectors" or vectors.WhichOneof("data") != "float_vector":
            values = column_values(fd)
            self.add_values(values)
            return len(values)
        data, dim = vectors.float_vector.data, vectors.dim
        size = len(data)
        rows = -(-size // dim) if dim else 0  # a short last vector still makes a row, as column_values does
        if not rows:
            return 0
        end = self.offsets[-1]
        self.floats.extend(data)
        if rows == 1:
            self.offsets.append(end + size)
        else:
            self.offsets.extend(end + min(k * dim, size) for k in range(1, rows + 1))
        self.nulls.extend([False] * rows)
        return rows

    def add_values(self, values: list[Any]) -> None:
        for vector in values:
            if vector is None:
                self.add_nulls(1)
            else:
                self.floats.extend(vector)
                self.offsets.append(len(self.floats))
                self.nulls.append(False)

    def add_nulls(self, count: int) -> None:
        self.offsets.extend([self.offsets[-1]] * count)
        self.nulls.extend([True] * count)
        self.has_nulls = self.has_nulls or count > 0

    def take(self) -> pa.Array:
        import pyarrow as pa

        floats = pa.array(self.floats, type=self.arrow_type.value_type)
        mask = pa.array(self.nulls, type=pa.bool_()) if self.has_nulls else None
        array = pa.ListArray.from_arrays(
            pa.array(self.offsets, type=pa.int32()), floats, type=self.arrow_type, mask=mask
        )
        self._reset()
        return array


class Layout(NamedTuple):
    """Where an insert's fields go, worked out once per distinct list of field names: the field
    whose values give the row count, the other fields that are columns (by position; the last of
    a repeated name wins), and the columns the insert lacks (nulls)."""

    first: int
    first_column: ValueColumn | FloatVectorColumn | None
    others: list[tuple[int, ValueColumn | FloatVectorColumn]]
    missing: list[ValueColumn | FloatVectorColumn]


class EntityBatch:
    """Columns of the `rows` shape for one collection."""

    def __init__(self, arrow_schema: pa.Schema, schema: CollectionSchemaInfo):
        self.arrow_schema = arrow_schema
        self.primary_key = schema.primary.name if schema.primary else None
        self.columns = {
            f.name: _column(f.type, arrow_field.type) for f, arrow_field in zip(schema.fields, arrow_schema)
        }
        self.layouts: dict[tuple[str, ...], Layout] = {}
        self.not_in_delete = [column for name, column in self.columns.items() if name != self.primary_key]
        self._reset_meta()

    def _reset_meta(self) -> None:
        self.ops: list[str] = []
        self.timestamps: list[int | None] = []
        self.channels: list[str] = []
        self.seqs: list[int] = []
        self.size = 0

    def add(self, raw: RawMessage, msg: DecodedMessage) -> int:
        if msg.type_code == INSERT:
            return self.add_insert(raw, msg.proto, msg.tso)
        count = len(msg.pks)
        if not count:
            return 0
        if self.primary_key:
            self.columns[self.primary_key].add_values(msg.pks)
        return self._add_meta(raw, "delete", msg.proto.timestamps, msg.tso, count, self.not_in_delete)

    def add_insert(self, raw: RawMessage, proto: Any, tso: int | None) -> int:
        """Rows of an InsertRequest (`tso`: the message's, for rows without their own timestamp)."""
        fields = proto.fields_data
        if not fields:
            return 0
        names = tuple([fd.field_name for fd in fields])
        layout = self.layouts.get(names) or self._layout(names)
        first = fields[layout.first]
        count = layout.first_column.add_field(first) if layout.first_column is not None else len(column_values(first))
        if not count:
            return 0
        for position, column in layout.others:
            column.add_field(fields[position])
        return self._add_meta(raw, "insert", proto.timestamps, tso, count, layout.missing)

    def _layout(self, names: tuple[str, ...]) -> Layout:
        last = {name: position for position, name in enumerate(names)}
        first_name = names[0]
        layout = Layout(
            last[first_name],
            self.columns.get(first_name),
            [
                (position, self.columns[name])
                for name, position in last.items()
                if name != first_name and name in self.columns
            ],
            [column for name, column in self.columns.items() if name not in last],
        )
        self.layouts[names] = layout
        return layout

    def _add_meta(
        self,
        raw: RawMessage,
        op: str,
        timestamps: Sequence[int],
        tso: int | None,
        count: int,
        missing: list[ValueColumn | FloatVectorColumn],
    ) -> int:
        """Nulls for the columns a message lacks, then the bookkeeping columns."""
        for column in missing:
            column.add_nulls(count)
        self.timestamps.extend(timestamps if len(timestamps) == count else [tso] * count)
        if count == 1:
            self.ops.append(op)
            self.channels.append(raw.channel)
            self.seqs.append(raw.id)
        else:
            self.ops.extend([op] * count)
            self.channels.extend([raw.channel] * count)
            self.seqs.extend([raw.id] * count)
        self.size += count
        return count

    def flush(self) -> pa.RecordBatch:
        import pyarrow as pa

        arrays = [column.take() for column in self.columns.values()]
        meta = (self.ops, self.timestamps, self.channels, self.seqs)
        arrays += [
            pa.array(values, type=self.arrow_schema.field(len(arrays) + n).type) for n, values in enumerate(meta)
        ]
        self._reset_meta()
        return pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)


def _column(milvus_type: str, arrow_type: pa.DataType) -> ValueColumn | FloatVectorColumn:
    if type_key(milvus_type) == "FLOATVECTOR":
        return FloatVectorColumn(arrow_type)
    return ValueColumn(arrow_type, _converter(milvus_type))


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

    return cast("list[float]", np.frombuffer(raw, dtype="<f2").astype("float32").tolist())


def _bfloat16s(raw: bytes) -> list[float]:
    import numpy as np

    return cast("list[float]", (np.frombuffer(raw, dtype="<u2").astype("uint32") << 16).view("float32").tolist())


def collection_matches(msg: DecodedMessage, wanted: str) -> bool:
    """True when a message belongs to the collection named by `wanted` (a name or a decimal id)."""
    return _names_collection(msg.collection_id, msg.collection, wanted)


def _names_collection(collection_id: int | None, collection: str | None, wanted: str) -> bool:
    wanted_id = ascii_int(wanted)
    if wanted_id is not None and wanted_id == collection_id:
        return True
    return collection == wanted


def _is_entity_of(collection_id: int | None, collection: str | None, schema: CollectionSchemaInfo) -> bool:
    if schema.collection_id is not None and collection_id is not None:
        return collection_id == schema.collection_id
    return collection == schema.name


def read_span(
    opts: ReplayOptions,
    span: ChannelSpan,
    arrow_schema: pa.Schema,
    schema: CollectionSchemaInfo | None,
    reporter: ProgressReporter,
) -> Iterator[pa.RecordBatch]:
    """Arrow record batches of one channel span; counts go to `reporter` as messages are read.
    In the rows shape an insert is parsed once, straight into its columns (the hot path of a replay);
    every other message goes through `decode`."""
    from mqctl.mq.decode.messages import decode, parse_insert
    from mqctl.mq.decode.transactions import committed_only

    batch: EntityBatch | MessageBatch = (
        EntityBatch(arrow_schema, schema) if schema is not None else MessageBatch(arrow_schema)
    )
    start_tso = opts.start.value if opts.start is not None and opts.start.kind == "tso" else None
    end_tso = opts.end.value if opts.end is not None and opts.end.kind == "tso" else None
    inserts = schema is not None and opts.wants(INSERT)
    keep = _rule(opts, schema, start_tso, end_tso)  # worked out once per span: the hot path's checks
    add_insert = batch.add_insert if isinstance(batch, EntityBatch) else None
    report = reporter.add
    source = opts.open_source()
    try:
        # 2.6: a transaction's messages count once committed (read on past the span for the commit, if need be);
        # natsmq, which 2.6 no longer offers, holds none, so a NATS read keeps to its span
        until = span.last if source.mq == "natsmq" else None
        for raw in committed_only(source.iter_messages(span.channel, span.first, until), span.last):
            insert = parse_insert(raw.data, raw.headers) if inserts else None
            if insert is not None:
                tso = insert.base.timestamp or (max(insert.timestamps) if insert.timestamps else 0) or None
                added = 0
                if (
                    keep(tso, insert.collectionID or None, insert.collection_name or None, insert.shardName, raw.id)
                ) and add_insert is not None:
                    added = add_insert(raw, insert, tso)
                report(1, added, len(raw.data))
                if batch.size >= BATCH_ROWS:
                    yield batch.flush()
                continue
            msg = decode(raw.data, raw.headers, insert_keys=False)  # neither shape has an insert's key list
            if end_tso is not None and msg.type_code == TIME_TICK and (msg.tso or 0) > end_tso:
                # After a time tick T no message with a TSO below T follows on this channel.
                reporter.add(1, 0, len(raw.data))
                break
            added = 0
            if opts.wants(msg.type_code) and keep(msg.tso, msg.collection_id, msg.collection, msg.shard, raw.id):
                added = batch.add(raw, msg)
            reporter.add(1, added, len(raw.data))
            if batch.size >= BATCH_ROWS:
                yield batch.flush()
        if batch.size:
            yield batch.flush()
    finally:
        source.close()
    reporter.finish()


def _rule(
    opts: ReplayOptions, schema: CollectionSchemaInfo | None, start_tso: int | None, end_tso: int | None
) -> Callable[[int | None, int | None, str | None, str | None, int], bool]:
    """The one rule that keeps a message of a wanted type: `keep(tso, collection_id, collection, shard,
    message_id)` is True when Milvus has not persisted it already (after its vchannel's --from checkpoint), its
    TSO is within [start_tso, end_tso] (a message without a TSO is kept only when there is no bound), and it is
    the collection's (the schema's, else --collection's, else any). Worked out once per span, so with no TSO
    bound and no checkpoint the hot path checks the collection alone."""

    def of_collection(collection_id: int | None, collection: str | None) -> bool:
        if schema is not None:
            return _is_entity_of(collection_id, collection, schema)
        return opts.collection is None or _names_collection(collection_id, collection, opts.collection)

    if start_tso is None and end_tso is None and opts.after is None:
        if schema is not None:
            return lambda _tso, collection_id, collection, _shard, _id: _is_entity_of(collection_id, collection, schema)
        return lambda _tso, collection_id, collection, _shard, _id: of_collection(collection_id, collection)

    def keep(tso: int | None, collection_id: int | None, collection: str | None, shard: str | None, id_: int) -> bool:
        if opts.persisted(shard, id_):
            return False
        if tso is None:
            if start_tso is not None or end_tso is not None:
                return False
        elif (start_tso is not None and tso < start_tso) or (end_tso is not None and tso > end_tso):
            return False
        return of_collection(collection_id, collection)

    return keep
