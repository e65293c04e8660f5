"""Decode Milvus MQ messages: 2.3–2.5 (one serialized protobuf request per message) and 2.6 (a body plus the
envelope properties of the streaming service, see envelope.py).

The bytes are parsed as `common_pb2.MsgHeader` to read `base.msg_type`, then again as the
concrete class from `pymilvus.grpc_gen`. Used by `mqctl channels`, migrate and replay.
Nothing here raises on bad bytes: the error is reported on the result instead.
Replay decodes every message of a channel, so modules, classes, type names and per-class field
accessors are looked up once and cached.
"""

from __future__ import annotations

from typing import Any

from mqctl.milvus.protos import pb2
from mqctl.mq.decode.bodies import read_body
from mqctl.mq.decode.body_model import Undecodable
from mqctl.mq.decode.columns import column_values
from mqctl.mq.decode.envelope import (
    BODY_CLASSES,
    LEGACY_TYPE_NAMES,
    UNMAPPED_TYPE_BASE,
    has_envelope,
    insert_segments,
    read_envelope,
)
from mqctl.mq.decode.model import DecodedMessage
from mqctl.mq.decode.schemas import CollectionSchemaInfo, schema_from_create
from mqctl.mq.decode.tso import TSO_LOGICAL_BITS as TSO_LOGICAL_BITS  # re-exported: callers import them from here
from mqctl.mq.decode.tso import datetime_to_tso as datetime_to_tso
from mqctl.mq.decode.tso import tso_out_of_range as tso_out_of_range
from mqctl.mq.decode.tso import tso_to_datetime as tso_to_datetime
from mqctl.sorting import ascii_int

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
    number = ascii_int(name.strip())
    if number is not None:
        return number
    wanted = name.strip().lower().replace("_", "")
    for known, code in pb2("common_pb2").MsgType.items():
        if known.lower() == wanted:
            return int(code)
    return None


def _header_type(headers: dict[str, str] | None) -> int | None:
    """The message type from NATS headers (2.5 adds `msg_type`), when present."""
    if not headers:
        return None
    value = headers.get("msg_type") or headers.get("msgType")
    if value is None:
        return None
    number = ascii_int(str(value))
    return number if number is not None else type_code(str(value))


def decode(
    data: bytes,
    headers: dict[str, str] | None = None,
    *,
    schemas: dict[int, CollectionSchemaInfo] | None = None,
    insert_keys: bool = True,
) -> DecodedMessage:
    """Decode one message. `schemas` (collection id -> schema, e.g. from earlier CreateCollection
    messages) names the primary key of inserts; without it the key field is inferred.
    `insert_keys=False` leaves `pks`/`pk_field` of an insert empty, for callers that read every
    column with `insert_columns` anyway."""
    from google.protobuf.message import DecodeError

    if has_envelope(headers):
        return _decode_streaming(data, headers or {}, schemas or {}, insert_keys)
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
    if code == 0 and (from_headers := _header_type(headers)):
        code = from_headers
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


def _decode_streaming(
    data: bytes, properties: dict[str, str], schemas: dict[int, CollectionSchemaInfo], insert_keys: bool
) -> DecodedMessage:
    """A 2.6 message: its type and time tick from the envelope, its body parsed by that type (never guessed from
    the bytes), an encrypted one (`_ch`) not parsed at all."""
    from google.protobuf.message import DecodeError

    envelope = read_envelope(properties)
    number = envelope.type_number
    code, name = _legacy_type(number, envelope.type)
    msg = DecodedMessage(type=name, type_code=code, payload_size=len(data))
    _set_time(msg, envelope.time_tick or 0)
    msg.shard = envelope.vchannel
    if envelope.time_tick is not None and tso_out_of_range(envelope.time_tick):
        msg.tso = None  # shown as out of range by the error, not as a number no uint64 reader can take
        msg.error = f"{name}: its time tick _tt={properties.get('_tt')!r} is beyond 64 bits: not a Milvus TSO"
        return msg
    if envelope.encrypted:
        msg.error = f"{name} payload is encrypted (cipher header _ch): not decoded"
        return msg
    body = BODY_CLASSES.get(number) if number is not None else None
    if body is None:
        if number is not None:
            _read_declared(msg, number, envelope.type, data, properties.get("_h"), schemas)
        return msg
    proto = getattr(pb2("msg_pb2"), body)()
    try:
        proto.ParseFromString(data)
    except DecodeError as err:
        msg.error = f"{name} body does not parse as {body}: {err or 'protobuf decode error'}"
        return msg
    msg._proto = proto
    stamp_with_envelope(proto, number, envelope.time_tick, envelope.vchannel)
    if number == 2 and not proto.segmentID:
        proto.segmentID = insert_segments(properties).get(proto.partitionID, 0)
    _fill(msg, proto, schemas, insert_keys)
    return msg


def _read_declared(
    msg: DecodedMessage,
    number: int,
    name: str,
    data: bytes,
    header: str | None,
    schemas: dict[int, CollectionSchemaInfo],
) -> None:
    """A version-2 message (or Import): its `messagespb` header and body, declared in bodies.py, onto `msg`; one that
    does not parse as declared gets an error instead, and nothing else."""
    try:
        facts = read_body(number, name, data, header)
    except Undecodable as err:
        msg.error = str(err)
        return
    if facts is None:
        return
    msg.collection, msg.collection_id = facts.collection, facts.collection_id
    msg.partition_id, msg.segment_id, msg.detail = facts.partition_id, facts.segment_id, facts.detail
    known = schemas.get(facts.collection_id) if facts.collection_id else None
    if msg.collection is None and known is not None:
        msg.collection = known.name


def stamp_with_envelope(proto: Any, number: int | None, time_tick: int | None, vchannel: str | None) -> None:
    """What Milvus's msgstream adaptor does to a 2.6 insert or delete body before its consumers see it
    (adaptor/message.go `recoverInsertMsgFromHeader`, `recoverDeleteMsgFromHeader`, stored commit 1f94be66a79d):
    every row's timestamp and the base timestamp become the envelope's time tick, the shard its vchannel."""
    if number not in (2, 3):
        return
    if time_tick:
        rows = (proto.num_rows or len(proto.rowIDs)) if number == 2 else (len(proto.timestamps) or proto.num_rows)
        proto.timestamps[:] = [time_tick] * rows
        proto.base.timestamp = time_tick
    if vchannel:
        proto.shardName = vchannel


def _legacy_type(number: int | None, name: str) -> tuple[int, str]:
    """(commonpb.MsgType code, name) of a 2.6 MessageType; one Milvus maps to no MsgType keeps its own name and
    UNMAPPED_TYPE_BASE + its number."""
    legacy = LEGACY_TYPE_NAMES.get(number) if number is not None else None
    if legacy is not None:
        code = type_code(legacy)
        if code is not None:
            return code, type_name(code)
    return UNMAPPED_TYPE_BASE + (number if number is not None else 0), name


def parse_insert(data: bytes, properties: dict[str, str] | None = None) -> Any:
    """`data` as an InsertRequest when it is one (type Insert in its header, or in its 2.6 envelope, and it
    parses), else None. A shortcut for readers that need only an insert's own fields and columns (replay's rows
    shape): one parse, no DecodedMessage; `decode` tells what anything else is. InsertRequest starts with the
    header's `base` field, so the type is read from the same parse. An encrypted 2.6 payload is never parsed.
    Called once per message of a replay: the class and the error type are looked up once."""
    insert_class, decode_error = _INSERT_PARSING or _insert_parsing()
    if has_envelope(properties):
        assert properties is not None
        if properties["_t"] != "2" or "_ch" in properties:
            return None
        proto = insert_class()
        try:
            proto.ParseFromString(data)
        except decode_error:
            return None
        envelope = read_envelope(properties)
        stamp_with_envelope(proto, 2, envelope.time_tick, envelope.vchannel)
        return proto

    proto = insert_class()
    try:
        proto.ParseFromString(data)
    except decode_error:
        return None
    return proto if proto.base.msg_type == INSERT else None


_INSERT_PARSING: tuple[Any, type[Exception]] | None = None


def _insert_parsing() -> tuple[Any, type[Exception]]:
    """(InsertRequest's class, protobuf's DecodeError), imported on first use."""
    global _INSERT_PARSING
    from google.protobuf.message import DecodeError

    _INSERT_PARSING = (_message_class(INSERT), DecodeError)
    return _INSERT_PARSING


_CLASSES: dict[int, Any] = {}


def _message_class(code: int) -> Any:
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


def _accessors(descriptor: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
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


def _delete_pks(proto: Any) -> list[int | str]:
    ids = proto.primary_keys
    if ids.HasField("int_id"):
        return list(ids.int_id.data)
    if ids.HasField("str_id"):
        return list(ids.str_id.data)
    return list(proto.int64_primary_keys)


def _insert_pks(proto: Any, schema: CollectionSchemaInfo | None) -> tuple[str | None, list[int | str]]:
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
