"""Spark schemas of the two replay shapes, and how each Milvus DataType becomes a Spark type.

Schemas are produced as DDL strings: a Python data source may return one from `schema()`, and
building them needs neither pyspark nor a running JVM (the data source's planner process has none).
A collection schema travels between processes as JSON (`schema_to_json` / `schema_from_json`).
"""

from __future__ import annotations

import dataclasses
import json

from mqctl.errors import InputError
from mqctl.mq.decode.schemas import CollectionSchemaInfo, FieldInfo

SHAPES = ("messages", "rows")

# (column, Spark DDL type) of the `messages` shape: one row per MQ message.
MESSAGE_COLUMNS: list[tuple[str, str]] = [
    ("channel", "string"),
    ("id", "bigint"),  # RocksMQ message id or JetStream sequence
    ("type", "string"),
    ("type_code", "int"),
    ("tso", "bigint"),
    ("time", "timestamp"),
    ("collection_id", "bigint"),
    ("collection", "string"),
    ("partition_id", "bigint"),
    ("partition", "string"),
    ("segment_id", "bigint"),
    ("shard", "string"),
    ("rows", "bigint"),
    ("payload_size", "bigint"),
    ("error", "string"),
    ("detail", "string"),  # 2.6 version-2 messages: what `channels peek` shows as detail; else null
]

# Bookkeeping columns of the `rows` shape, after the collection's own fields.
ROW_META_COLUMNS: list[tuple[str, str]] = [
    ("_op", "string"),  # insert | delete
    ("_ts", "bigint"),  # the row's Milvus TSO
    ("_channel", "string"),
    ("_seq", "bigint"),  # id / sequence of the message the row came from
]


def type_key(type_name: str | None) -> str:
    """One spelling for Milvus type names: `FloatVector`, `FLOAT_VECTOR` and `floatvector` match."""
    return (type_name or "").replace("_", "").upper()


# Milvus DataType -> Spark DDL type. JSON stays a string; float vectors (also float16/bfloat16)
# become arrays of float, binary vectors binary, sparse vectors a map of index to value.
SCALAR_TYPES: dict[str, str] = {
    "BOOL": "boolean",
    "INT8": "tinyint",
    "INT16": "smallint",
    "INT32": "int",
    "INT64": "bigint",
    "FLOAT": "float",
    "DOUBLE": "double",
    "STRING": "string",
    "VARCHAR": "string",
    "TEXT": "string",
    "JSON": "string",
}
VECTOR_TYPES: dict[str, str] = {
    "FLOATVECTOR": "array<float>",
    "FLOAT16VECTOR": "array<float>",
    "BFLOAT16VECTOR": "array<float>",
    "INT8VECTOR": "array<tinyint>",
    "BINARYVECTOR": "binary",
    "SPARSEFLOATVECTOR": "map<bigint,float>",
}


def spark_ddl(field: FieldInfo) -> str:
    """The Spark type of one Milvus field; a clear error for a type replay cannot represent."""
    key = type_key(field.type)
    if key == "ARRAY":
        element = type_key(field.element_type)
        if element not in SCALAR_TYPES:
            raise InputError(
                f"field {field.name!r}: an array of {field.element_type or 'unknown elements'} cannot be "
                "replayed as rows",
                hint="replay it with --shape messages instead",
            )
        return f"array<{SCALAR_TYPES[element]}>"
    if key in SCALAR_TYPES:
        return SCALAR_TYPES[key]
    if key in VECTOR_TYPES:
        return VECTOR_TYPES[key]
    raise InputError(
        f"field {field.name!r} has Milvus type {field.type}, which replay cannot represent as rows",
        hint="replay it with --shape messages instead",
    )


def messages_ddl() -> str:
    return _ddl(MESSAGE_COLUMNS)


def rows_ddl(schema: CollectionSchemaInfo) -> str:
    taken = {f.name for f in schema.fields} & {name for name, _ in ROW_META_COLUMNS}
    if taken:
        raise InputError(
            f"collection {schema.name!r} has fields named like replay's own columns: {', '.join(sorted(taken))}",
            hint="replay it with --shape messages instead",
        )
    return _ddl([(f.name, spark_ddl(f)) for f in schema.fields] + ROW_META_COLUMNS)


def _ddl(columns: list[tuple[str, str]]) -> str:
    return ", ".join(f"`{name}` {ddl}" for name, ddl in columns)


def schema_to_json(schema: CollectionSchemaInfo, origin: str) -> str:
    """`origin` says where the schema was found: stream, milvus or inferred (from inserts)."""
    return json.dumps({"origin": origin, "schema": dataclasses.asdict(schema)}, separators=(",", ":"))


def schema_from_json(text: str) -> tuple[CollectionSchemaInfo, str]:
    data = json.loads(text)
    schema = dict(data["schema"])
    schema["fields"] = [FieldInfo(**f) for f in schema["fields"]]
    return CollectionSchemaInfo(**schema), data["origin"]
