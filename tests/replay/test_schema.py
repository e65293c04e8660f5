"""Milvus types to Spark types, and schemas as JSON."""

from __future__ import annotations

import pytest

from mqctl.errors import InputError
from mqctl.mq.decode.schemas import CollectionSchemaInfo, FieldInfo
from mqctl.replay.reader.schema import rows_ddl, schema_from_json, schema_to_json, spark_ddl


@pytest.mark.parametrize(
    "milvus_type,element,spark",
    [
        ("Bool", None, "boolean"),
        ("Int8", None, "tinyint"),
        ("Int16", None, "smallint"),
        ("Int32", None, "int"),
        ("Int64", None, "bigint"),
        ("Float", None, "float"),
        ("Double", None, "double"),
        ("VarChar", None, "string"),
        ("String", None, "string"),
        ("JSON", None, "string"),
        ("FLOAT_VECTOR", None, "array<float>"),
        ("Float16Vector", None, "array<float>"),
        ("BFloat16Vector", None, "array<float>"),
        ("BinaryVector", None, "binary"),
        ("SparseFloatVector", None, "map<bigint,float>"),
        ("Int8Vector", None, "array<tinyint>"),
        ("Array", "Int64", "array<bigint>"),
        ("Array", "VarChar", "array<string>"),
    ],
)
def test_every_milvus_type_has_a_spark_type(milvus_type, element, spark):
    assert spark_ddl(FieldInfo("f", milvus_type, element_type=element)) == spark


def test_unknown_type_and_clashing_names_are_clear_errors():
    with pytest.raises(InputError, match="Geometry2") as err:
        spark_ddl(FieldInfo("geo", "Geometry2"))
    assert "--shape messages" in (err.value.hint or "")
    schema = CollectionSchemaInfo("c", [FieldInfo("_op", "Int64", is_primary=True)])
    with pytest.raises(InputError, match="_op"):
        rows_ddl(schema)


def test_schema_round_trips_as_json():
    schema = CollectionSchemaInfo(
        "items",
        [FieldInfo("id", "Int64", field_id=100, is_primary=True), FieldInfo("v", "FloatVector", dim=4)],
        collection_id=42,
    )
    back, origin = schema_from_json(schema_to_json(schema, "inferred"))
    assert back == schema and origin == "inferred"
    assert (
        rows_ddl(back) == "`id` bigint, `v` array<float>, `_op` string, `_ts` bigint, `_channel` string, `_seq` bigint"
    )
