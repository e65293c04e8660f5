"""A collection's schema as an MQ channel tells it: from a CreateCollection message, or inferred from the
field names and types an insert carries (after a switch to NATS the streams hold no CreateCollection)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mqctl.milvus.protos import pb2
from mqctl.sorting import ascii_int

if TYPE_CHECKING:
    from mqctl.mq.decode.model import DecodedMessage


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
                dim=ascii_int(params.get("dim", "")),
                max_length=ascii_int(params.get("max_length", "")),
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
