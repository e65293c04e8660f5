"""Protobuf classes for messages pymilvus does not ship, declared from the field numbers of their `.proto`.

A declared class is wire-compatible with the original for the fields it lists: unknown fields are skipped on
parse, enums are read as their integer (an enum is a varint on the wire), a `map<K, V>` is a repeated entry
message with key 1 and value 2, and a field typed `common.X` (a pymilvus message) is kept as bytes and parsed
with pymilvus's own class by the caller. Each module that declares messages cites the `.proto` it read.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

# field name -> (number, kind, repeated); kind: a scalar type name (int64, uint64, int32, uint32, bool, string,
# bytes, fixed64) or "msg:Name" for another message of the same declaration
Fields = Mapping[str, tuple[int, str, bool]]


@functools.cache
def _pool(package: str, declaration: tuple[tuple[str, tuple[tuple[str, tuple[int, str, bool]], ...]], ...]) -> Any:
    from google.protobuf import descriptor_pb2, descriptor_pool

    proto = descriptor_pb2.FileDescriptorProto(name=f"{package}.proto", package=package, syntax="proto3")
    kinds = descriptor_pb2.FieldDescriptorProto
    for message_name, fields in declaration:
        message = proto.message_type.add(name=message_name)
        for field_name, (number, kind, repeated) in fields:
            field = message.field.add(
                name=field_name, number=number, label=kinds.LABEL_REPEATED if repeated else kinds.LABEL_OPTIONAL
            )
            if kind.startswith("msg:"):
                field.type = kinds.TYPE_MESSAGE
                field.type_name = f".{package}.{kind[4:]}"
            else:
                field.type = getattr(kinds, f"TYPE_{kind.upper()}")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return pool


def declare(package: str, messages: Mapping[str, Fields]) -> Callable[[str], Any]:
    """A function `name -> protobuf class` for the declared `messages` (built once, on first use)."""
    frozen = tuple((name, tuple(fields.items())) for name, fields in messages.items())

    def message_class(name: str) -> Any:
        from google.protobuf import message_factory

        return message_factory.GetMessageClass(_pool(package, frozen).FindMessageTypeByName(f"{package}.{name}"))

    return message_class


def parse(message_class: Any, data: bytes | memoryview) -> Any:
    """`data` parsed as `message_class`, or None when the bytes are not that message."""
    from google.protobuf.message import DecodeError

    message = message_class()
    try:
        message.ParseFromString(data)
    except DecodeError:
        return None
    return message


def misread_fields(message: Any) -> list[str]:
    """Declared fields the bytes held with another wire type (protobuf skips those as unknown fields instead of
    failing): `Message.field` of each, nested declared messages included. Not empty means the bytes are not the
    declared message, whatever parsed."""
    from google.protobuf import unknown_fields

    found = []
    descriptor = message.DESCRIPTOR
    declared = {field.number: field.name for field in descriptor.fields}
    for unknown in unknown_fields.UnknownFieldSet(message):
        if unknown.field_number in declared:
            found.append(f"{descriptor.name}.{declared[unknown.field_number]}")
    for field in descriptor.fields:
        if field.message_type is None:
            continue
        value = getattr(message, field.name)
        if field.is_repeated:
            for item in value:
                found += misread_fields(item)
        elif message.HasField(field.name):
            found += misread_fields(value)
    return found


def unknown_field_numbers(message: Any) -> list[int]:
    """The field numbers at the top of `message` that its declaration does not list."""
    from google.protobuf import unknown_fields

    return sorted({unknown.field_number for unknown in unknown_fields.UnknownFieldSet(message)})
