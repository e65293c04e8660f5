"""Decode Milvus 2.3–2.5 MQ messages (one serialized protobuf request per message).

The bytes are parsed as `common_pb2.MsgHeader` to read `base.msg_type`, then again as the
concrete class from `pymilvus.grpc_gen`. Used by `mqctl channels`, migrate and replay.
Nothing here raises on bad bytes: the error is reported on the result instead.
Replay decodes every message of a channel, so modules, classes, type names and per-class field
accessors are looked up once and cached.
"""

from __future__ import annotations

import datetime as dt
import importlib
import struct
import sys
from dataclasses import dataclass, field
from typing import Any

TSO_LOGICAL_BITS = 18  # Milvus TSO: (unix_ms << 18) | logical
INSERT = 400

# msg_type -> (module, class) of the concrete request; everything else is decoded from its header only.
MESSAGE_CLASSES: dict[int, tuple[str, str]] = {
    INSERT: ("msg_pb2", "InsertRequest"),
    401: ("msg_pb2", "DeleteRequest"),
    1200: ("msg_pb2", "TimeTickMsg"),
    1208: ("msg_pb2", "DataNodeTtMsg"),
    100: ("msg_pb2", "CreateCollectionRequest"),
    101: ("msg_pb2", "DropCollectionRequest"),
    200: ("msg_pb2", "CreatePartitionRequest"),
    201: ("msg_pb2", "DropPartitionRequest"),
    1212: ("msg_pb2", "ReplicateMsg"),
    # requests forwarded on the replicate channel (by-dev-replicate-msg)
    402: ("milvus_pb2", "FlushRequest"),
    106: ("milvus_pb2", "LoadCollectionRequest"),
    107: ("milvus_pb2", "ReleaseCollectionRequest"),
    205: ("milvus_pb2", "LoadPartitionsRequest"),
    206: ("milvus_pb2", "ReleasePartitionsRequest"),
    300: ("milvus_pb2", "CreateIndexRequest"),
    302: ("milvus_pb2", "DropIndexRequest"),
    1801: ("milvus_pb2", "CreateDatabaseRequest"),
    1802: ("milvus_pb2", "DropDatabaseRequest"),
}


_MODULES: dict[str, Any] = {}


def pb2(name: str):
    """A pymilvus.grpc_gen protobuf module (common_pb2, msg_pb2, schema_pb2, milvus_pb2).

    Importing `pymilvus` runs its package __init__, which pulls in grpc and pandas (~0.5 s per command).
    When pymilvus is not imported yet, the generated modules are loaded under their real names through
    short-lived stand-ins for the two parent packages; a later `import pymilvus` then finds and reuses the
    very same modules, so message classes stay identical (import them with `from pymilvus.grpc_gen import x`)."""
    module = _MODULES.get(name)
    if module is None:
        module = _MODULES[name] = _import_pb2(name)
    return module


def _import_pb2(name: str):
    full = f"pymilvus.grpc_gen.{name}"
    if full in sys.modules or "pymilvus" in sys.modules:
        return importlib.import_module(full)
    import types
    from importlib.util import find_spec

    root = find_spec("pymilvus").submodule_search_locations[0]
    stand_ins = {"pymilvus": [root], "pymilvus.grpc_gen": [f"{root}/grpc_gen"]}
    for package, path in stand_ins.items():
        module = types.ModuleType(package)
        module.__path__ = path
        sys.modules[package] = module
    try:
        return importlib.import_module(full)
    finally:
        for package in stand_ins:
            sys.modules.pop(package, None)


def tso_to_datetime(tso: int | None) -> dt.datetime | None:
    """The wall-clock time (UTC) of a Milvus TSO, or None for 0/None."""
    if not tso:
        return None
    return dt.datetime.fromtimestamp((tso >> TSO_LOGICAL_BITS) / 1000, tz=dt.timezone.utc)


def datetime_to_tso(when: dt.datetime) -> int:
    """The smallest TSO at or after a wall-clock time (for --from TIME)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return int(when.timestamp() * 1000) << TSO_LOGICAL_BITS


_TYPE_NAMES: dict[int, str] = {}


def type_name(code: int) -> str:
    """Milvus MsgType name, or the number as text for types this pymilvus does not know."""
    name = _TYPE_NAMES.get(code)
    if name is None:
        try:
            name = pb2("common_pb2").MsgType.Name(code)
        except ValueError:
            name = str(code)
        _TYPE_NAMES[code] = name
    return name


def type_code(name: str) -> int | None:
    """MsgType number for a case-insensitive name ("insert", "TimeTick") or a number as text."""
    if name.strip().isdigit():
        return int(name)
    wanted = name.strip().lower().replace("_", "")
    for known, code in pb2("common_pb2").MsgType.items():
        if known.lower() == wanted:
            return code
    return None


@dataclass
class DecodedMessage:
    """What mqctl knows about one message; `proto` holds the parsed request (not in JSON)."""

    type: str
    type_code: int
    tso: int | None = None
    time: dt.datetime | None = None
    collection: str | None = None
    collection_id: int | None = None
    partition: str | None = None
    partition_id: int | None = None
    segment_id: int | None = None
    shard: str | None = None
    rows: int = 0
    pks: list = field(default_factory=list)
    pk_field: str | None = None
    payload_size: int = 0
    error: str | None = None
    _proto: Any = field(default=None, repr=False, compare=False)

    @property
    def proto(self) -> Any:
        return self._proto


@dataclass
class FieldInfo:
    name: str
    type: str  # Milvus DataType name: Int64, VarChar, FloatVector, JSON...
    field_id: int | None = None
    is_primary: bool = False
    auto_id: bool = False
    is_dynamic: bool = False
    dim: int | None = None
    max_length: int | None = None
    element_type: str | None = None  # Array fields


@dataclass
class CollectionSchemaInfo:
    name: str
    fields: list[FieldInfo]
    collection_id: int | None = None
    description: str = ""
    enable_dynamic_field: bool = False

    @property
    def primary(self) -> FieldInfo | None:
        return next((f for f in self.fields if f.is_primary), None)


def _header_type(headers: dict | None) -> int | None:
    """The message type from NATS headers (2.5 adds `msg_type`), when present."""
    if not headers:
        return None
    value = headers.get("msg_type") or headers.get("msgType")
    if value is None:
        return None
    return int(value) if str(value).isdigit() else type_code(str(value))


def decode(
    data: bytes,
    headers: dict | None = None,
    *,
    schemas: dict[int, CollectionSchemaInfo] | None = None,
    insert_keys: bool = True,
) -> DecodedMessage:
    """Decode one message. `schemas` (collection id -> schema, e.g. from earlier CreateCollection
    messages) names the primary key of inserts; without it the key field is inferred.
    `insert_keys=False` leaves `pks`/`pk_field` of an insert empty, for callers that read every
    column with `insert_columns` anyway."""
    from google.protobuf.message import DecodeError

    header = pb2("common_pb2").MsgHeader()
    try:
        header.ParseFromString(data)
    except DecodeError as err:
        code = _header_type(headers)
        return DecodedMessage(
            type=type_name(code) if code is not None else "unparsable",
            type_code=code or -1,
            payload_size=len(data),
            error=f"not a Milvus message: {err or 'protobuf decode error'}",
        )
    code = header.base.msg_type
    if code == 0 and _header_type(headers):
        code = _header_type(headers)
    msg = DecodedMessage(type=type_name(code), type_code=code, payload_size=len(data))
    _set_time(msg, header.base.timestamp)
    if code not in MESSAGE_CLASSES:
        msg._proto = header
        return msg
    proto = _message_class(code)()
    try:
        proto.ParseFromString(data)
    except DecodeError as err:
        msg.error = f"{msg.type} message does not parse as {MESSAGE_CLASSES[code][1]}: {err or 'protobuf decode error'}"
        msg._proto = header
        return msg
    msg._proto = proto
    _fill(msg, proto, schemas or {}, insert_keys)
    return msg


def parse_insert(data: bytes):
    """`data` as an InsertRequest when it is one (type Insert in its header, and it parses), else None.
    A shortcut for readers that need only an insert's own fields and columns (replay's rows shape):
    one parse, no DecodedMessage; `decode` tells what anything else is. InsertRequest starts with the
    header's `base` field, so the type is read from the same parse."""
    from google.protobuf.message import DecodeError

    proto = _message_class(INSERT)()
    try:
        proto.ParseFromString(data)
    except DecodeError:
        return None
    return proto if proto.base.msg_type == INSERT else None


_CLASSES: dict[int, Any] = {}


def _message_class(code: int):
    """The concrete protobuf class of a type in MESSAGE_CLASSES."""
    cls = _CLASSES.get(code)
    if cls is None:
        module_name, class_name = MESSAGE_CLASSES[code]
        cls = _CLASSES[code] = getattr(pb2(module_name), class_name)
    return cls


# DecodedMessage attribute -> the request fields that may carry it (the first non-empty one wins).
COMMON_FIELDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("collection", ("collection_name", "collectionName")),
    ("collection_id", ("collectionID",)),
    ("partition", ("partition_name", "partitionName")),
    ("partition_id", ("partitionID",)),
    ("segment_id", ("segmentID", "segment_id")),
    ("shard", ("shardName", "channel_name")),
)
_ACCESSORS: dict[Any, tuple[tuple[str, tuple[str, ...]], ...]] = {}


def _accessors(descriptor) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """COMMON_FIELDS narrowed to the fields one request class has."""
    found = _ACCESSORS.get(descriptor)
    if found is None:
        names = {f.name for f in descriptor.fields}
        found = _ACCESSORS[descriptor] = tuple(
            (attr, tuple(name for name in candidates if name in names)) for attr, candidates in COMMON_FIELDS
        )
    return found


def _set_time(msg: DecodedMessage, tso: int) -> None:
    msg.tso = tso or None
    msg.time = tso_to_datetime(tso)


def _fill(msg: DecodedMessage, proto: Any, schemas: dict[int, CollectionSchemaInfo], insert_keys: bool) -> None:
    """Copy the common fields of the concrete request onto the result."""
    for attr, candidates in _accessors(proto.DESCRIPTOR):
        for name in candidates:
            value = getattr(proto, name)
            if value not in ("", 0):
                setattr(msg, attr, value)
                break
    if msg.type_code == INSERT:
        msg.rows = proto.num_rows or len(proto.rowIDs)
        if not msg.tso and proto.timestamps:
            _set_time(msg, max(proto.timestamps))
        if insert_keys:
            msg.pk_field, msg.pks = _insert_pks(proto, schemas.get(proto.collectionID))
    elif msg.type_code == 401:
        msg.pks = _delete_pks(proto)
        msg.rows = proto.num_rows or len(msg.pks)
        if not msg.tso and proto.timestamps:
            _set_time(msg, max(proto.timestamps))
    elif msg.type_code == 100:
        schema = schema_from_create(msg)
        if schema is not None and not msg.collection:
            msg.collection = schema.name
    elif msg.type_code == 1208 and not msg.tso:
        _set_time(msg, proto.timestamp)
    elif msg.type_code == 402:
        msg.collection = ",".join(proto.collection_names) or None


def _delete_pks(proto) -> list:
    ids = proto.primary_keys
    if ids.HasField("int_id"):
        return list(ids.int_id.data)
    if ids.HasField("str_id"):
        return list(ids.str_id.data)
    return list(proto.int64_primary_keys)


def _insert_pks(proto, schema: CollectionSchemaInfo | None) -> tuple[str | None, list]:
    """Primary keys of an insert: the schema's key field, else the Int64/VarChar field with the
    lowest field id (Milvus gives the first declared field id 100; the key is nearly always it)."""
    columns = {fd.field_name: fd for fd in proto.fields_data}
    if schema is not None and schema.primary is not None and schema.primary.name in columns:
        name = schema.primary.name
    else:
        candidates = [fd for fd in proto.fields_data if fd.type in (5, 21) and not fd.is_dynamic]
        if not candidates:
            return None, []
        name = min(candidates, key=lambda fd: fd.field_id or 1 << 62).field_name
    return name, column_values(columns[name])


def field_types(decoded: DecodedMessage) -> dict[str, str]:
    """Field name -> Milvus DataType name for an insert."""
    if decoded.type_code != 400 or decoded.proto is None or decoded.error:
        return {}
    data_type = pb2("schema_pb2").DataType
    return {fd.field_name: data_type.Name(fd.type) for fd in decoded.proto.fields_data}


def insert_columns(decoded: DecodedMessage) -> dict[str, list]:
    """Field name -> Python values of an insert: vectors as list[float], binary vectors as bytes,
    JSON as str, varchar as str, sparse vectors as {index: value}."""
    if decoded.type_code != 400 or decoded.proto is None or decoded.error:
        return {}
    return {fd.field_name: column_values(fd) for fd in decoded.proto.fields_data}


def _chunks(seq, size: int) -> list:
    return [seq[i : i + size] for i in range(0, len(seq), size)] if size else []


# DataType -> the ScalarField member whose `data` holds the values as they are (Bool, Int8/16/32,
# Int64, Float, Double, String, VarChar, Text).
SCALAR_DATA: dict[int, str] = {
    1: "bool_data",
    2: "int_data",
    3: "int_data",
    4: "int_data",
    5: "long_data",
    10: "float_data",
    11: "double_data",
    20: "string_data",
    21: "string_data",
    25: "string_data",
}


def _scalar_values(scalars, data_type: int) -> list:
    member = SCALAR_DATA.get(data_type)
    if member is not None:
        return list(getattr(scalars, member).data)
    if data_type == 23:
        return [raw.decode("utf-8", errors="replace") for raw in scalars.json_data.data]
    if data_type == 22:
        element = scalars.array_data.element_type
        return [_scalar_values(item, element) for item in scalars.array_data.data]
    raise ValueError(f"unsupported scalar type {data_type}")


def _sparse_row(raw: bytes) -> dict[int, float]:
    pairs = struct.iter_unpack("<If", raw)
    return {index: value for index, value in pairs}


def column_values(fd) -> list:
    """One FieldData column as Python values (the conversions of `insert_columns`)."""
    kind = fd.WhichOneof("field")
    if kind == "scalars":
        return _scalar_values(fd.scalars, fd.type)
    if kind != "vectors":
        return []
    vectors, dim = fd.vectors, fd.vectors.dim
    which = vectors.WhichOneof("data")
    if which == "float_vector":
        return [list(v) for v in _chunks(list(vectors.float_vector.data), dim)]
    if which == "binary_vector":
        return _chunks(bytes(vectors.binary_vector), dim // 8)
    if which in ("float16_vector", "bfloat16_vector"):
        return _chunks(bytes(getattr(vectors, which)), dim * 2)
    if which == "int8_vector":
        return [list(struct.unpack(f"{dim}b", chunk)) for chunk in _chunks(bytes(vectors.int8_vector), dim)]
    if which == "sparse_float_vector":
        return [_sparse_row(raw) for raw in vectors.sparse_float_vector.contents]
    return []


def schema_from_create(decoded: DecodedMessage) -> CollectionSchemaInfo | None:
    """The collection schema embedded in a CreateCollection message (name taken from the schema
    when the request's collectionName is empty)."""
    from google.protobuf.message import DecodeError

    schema_pb2 = pb2("schema_pb2")
    proto = decoded.proto
    if decoded.type_code != 100 or proto is None or decoded.error:
        return None
    schema = schema_pb2.CollectionSchema()
    if proto.HasField("collection_schema"):
        schema.CopyFrom(proto.collection_schema)
    else:
        try:
            schema.ParseFromString(proto.schema)
        except DecodeError:
            return None
    fields = []
    for f in schema.fields:
        params = {p.key: p.value for p in f.type_params}
        fields.append(
            FieldInfo(
                name=f.name,
                type=schema_pb2.DataType.Name(f.data_type),
                field_id=f.fieldID,
                is_primary=f.is_primary_key,
                auto_id=f.autoID,
                is_dynamic=f.is_dynamic,
                dim=int(params["dim"]) if params.get("dim", "").isdigit() else None,
                max_length=int(params["max_length"]) if params.get("max_length", "").isdigit() else None,
                element_type=schema_pb2.DataType.Name(f.element_type) if f.element_type else None,
            )
        )
    return CollectionSchemaInfo(
        name=schema.name or proto.collectionName,
        fields=fields,
        collection_id=proto.collectionID or None,
        description=schema.description,
        enable_dynamic_field=schema.enable_dynamic_field,
    )


def schema_from_insert(decoded: DecodedMessage) -> CollectionSchemaInfo | None:
    """A best-effort schema from the field names and types an insert carries (after a switch to
    NATS the streams hold no CreateCollection message)."""
    if decoded.type_code != 400 or decoded.proto is None or decoded.error:
        return None
    schema_pb2 = pb2("schema_pb2")
    fields = []
    for fd in decoded.proto.fields_data:
        dim = fd.vectors.dim if fd.WhichOneof("field") == "vectors" else None
        fields.append(
            FieldInfo(
                name=fd.field_name,
                type=schema_pb2.DataType.Name(fd.type),
                field_id=fd.field_id or None,
                is_primary=fd.field_name == decoded.pk_field,
                is_dynamic=fd.is_dynamic,
                dim=dim,
            )
        )
    return CollectionSchemaInfo(
        name=decoded.collection or "",
        fields=fields,
        collection_id=decoded.collection_id,
        enable_dynamic_field=any(f.is_dynamic for f in fields),
    )
