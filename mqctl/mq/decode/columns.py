"""The columns of an insert message as Python values: one FieldData column per field (vectors as lists of
floats, binary vectors as bytes, JSON as text, sparse vectors as {index: value})."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mqctl.mq.decode.model import DecodedMessage


def insert_columns(decoded: DecodedMessage) -> dict[str, list[Any]]:
    """Field name -> Python values of an insert: vectors as list[float], binary vectors as bytes,
    JSON as str, varchar as str, sparse vectors as {index: value}."""
    if decoded.type_code != 400 or decoded.proto is None or decoded.error:
        return {}
    return {fd.field_name: column_values(fd) for fd in decoded.proto.fields_data}


def _chunks(seq: Sequence[Any], size: int) -> list[Any]:
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


def _scalar_values(scalars: Any, data_type: int) -> list[Any]:
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


def column_values(fd: Any) -> list[Any]:
    """One FieldData column (a protobuf, typed Any) as Python values (the conversions of `insert_columns`)."""
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
