"""The rows shape: every vector and array type becomes its Spark value."""

from __future__ import annotations

import pytest

from mqctl.mq.decode.schemas import CollectionSchemaInfo, FieldInfo
from mqctl.replay.reader.schema import rows_ddl


@pytest.mark.extra  # pyspark
def test_rows_of_every_vector_and_array_type_become_their_spark_values():
    """A real-format insert (as Milvus 2.4+ writes half-float, sparse and array fields) through the
    shared decoder into the rows shape's Arrow batch."""
    import struct

    import numpy as np
    from pymilvus.grpc_gen import common_pb2, msg_pb2, schema_pb2
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import ArrayType, FloatType, LongType, MapType, StringType, StructField, StructType

    from mqctl.mq.decode.messages import decode
    from mqctl.mq.model import RawMessage
    from mqctl.replay.reader.rows import EntityBatch

    halves, bfloats = [1.5, -2.0, 0.25, 8.0], [3.0, -0.5, 1.0, 2.0]
    msg = msg_pb2.InsertRequest(
        base=common_pb2.MsgBase(msg_type=common_pb2.Insert, timestamp=7 << 18),
        collection_name="c",
        collectionID=9,
        timestamps=[7 << 18, 8 << 18],
        rowIDs=[1, 2],
        num_rows=2,
        version=msg_pb2.ColumnBased,
    )
    msg.fields_data.add(type=schema_pb2.Int64, field_name="pk", field_id=100).scalars.long_data.data.extend([1, 2])
    f16 = msg.fields_data.add(type=schema_pb2.Float16Vector, field_name="f16", field_id=101)
    f16.vectors.dim, f16.vectors.float16_vector = 2, np.array(halves, dtype="<f2").tobytes()
    bf16 = msg.fields_data.add(type=schema_pb2.BFloat16Vector, field_name="bf16", field_id=102)
    bf16.vectors.dim = 2
    bf16.vectors.bfloat16_vector = (np.array(bfloats, dtype="<f4").view("<u4") >> 16).astype("<u2").tobytes()
    sparse = msg.fields_data.add(type=schema_pb2.SparseFloatVector, field_name="sp", field_id=103)
    sparse.vectors.sparse_float_vector.contents.extend(
        [struct.pack("<IfIf", 3, 0.5, 9, 1.0), struct.pack("<If", 1, 2.0)]
    )
    arrays = msg.fields_data.add(type=schema_pb2.Array, field_name="arr", field_id=104)
    arrays.scalars.array_data.element_type = schema_pb2.Int64
    for values in ([1, 2], [3]):
        arrays.scalars.array_data.data.add().long_data.data.extend(values)
    decoded = decode(msg.SerializeToString())
    schema = CollectionSchemaInfo(
        "c",
        [
            FieldInfo("pk", "Int64", is_primary=True),
            FieldInfo("f16", "Float16Vector"),
            FieldInfo("bf16", "BFloat16Vector"),
            FieldInfo("sp", "SparseFloatVector"),
            FieldInfo("arr", "Array", element_type="Int64"),
        ],
        collection_id=9,
    )
    assert rows_ddl(schema).startswith(
        "`pk` bigint, `f16` array<float>, `bf16` array<float>, `sp` map<bigint,float>, `arr` array<bigint>"
    )
    columns = [
        ("pk", LongType()),
        ("f16", ArrayType(FloatType())),
        ("bf16", ArrayType(FloatType())),
        ("sp", MapType(LongType(), FloatType())),
        ("arr", ArrayType(LongType())),
        ("_op", StringType()),
        ("_ts", LongType()),
        ("_channel", StringType()),
        ("_seq", LongType()),
    ]
    arrow = to_arrow_schema(StructType([StructField(name, kind) for name, kind in columns]))
    batch = EntityBatch(arrow, schema)
    assert batch.add(RawMessage("ch", 42, b""), decoded) == 2
    rows = batch.flush().to_pylist()
    assert [r["f16"] for r in rows] == [halves[:2], halves[2:]]
    assert [r["bf16"] for r in rows] == [bfloats[:2], bfloats[2:]]
    assert [dict(r["sp"]) for r in rows] == [{3: 0.5, 9: 1.0}, {1: 2.0}]
    assert [r["arr"] for r in rows] == [[1, 2], [3]]
    assert [(r["_op"], r["_ts"], r["_channel"], r["_seq"]) for r in rows] == [
        ("insert", 7 << 18, "ch", 42),
        ("insert", 8 << 18, "ch", 42),
    ]
