"""Replay logic that needs no Spark: option parsing, partition planning, type mapping, checkpoints."""

from __future__ import annotations

import datetime as dt
import itertools
import json

import pytest

from mqctl.errors import InputError
from mqctl.mq.decode.messages import datetime_to_tso
from mqctl.mq.decode.schemas import CollectionSchemaInfo, FieldInfo
from mqctl.replay.options import Bound, parse_bound, parse_options
from mqctl.replay.planning import ChannelSpan, split_spans
from mqctl.replay.resume import ResumeState
from mqctl.replay.schema import rows_ddl, schema_from_json, schema_to_json, spark_ddl
from mqctl.replay.write import spark_error_line


def test_bounds_accept_ids_tsos_and_times():
    assert parse_bound("120", "from", upper=False) == Bound("id", 120)
    assert parse_bound("seq:7", "from", upper=False) == Bound("id", 7)
    assert parse_bound("tso:470633384395407379", "from", upper=False) == Bound("tso", 470633384395407379)
    when = dt.datetime(2024, 5, 1, 12, tzinfo=dt.timezone.utc)
    assert parse_bound("2024-05-01T12:00:00Z", "from", upper=False) == Bound("tso", datetime_to_tso(when))
    # an upper time bound takes in every logical TSO of its millisecond
    assert parse_bound("2024-05-01T12:00:00+00:00", "to", upper=True).value == datetime_to_tso(when) + (1 << 18) - 1


def test_bad_bound_says_what_is_accepted():
    with pytest.raises(InputError) as err:
        parse_bound("yesterday", "from", upper=False)
    assert "tso:N" in err.value.message and "ISO-8601" in err.value.message


def test_options_need_exactly_one_source_and_a_collection_for_rows():
    with pytest.raises(InputError, match="exactly one source"):
        parse_options({})
    with pytest.raises(InputError, match="exactly one source"):
        parse_options({"nats": "nats://x", "rocksmq": "/x"})
    with pytest.raises(InputError, match="needs a collection"):
        parse_options({"nats": "nats://x", "shape": "rows"})
    with pytest.raises(InputError, match="unknown message type"):
        parse_options({"nats": "nats://x", "types": "insert,bogus"})
    with pytest.raises(InputError, match="select no insert or delete message"):
        parse_options({"nats": "nats://x", "collection": "items", "types": "timetick"})
    assert parse_options({"nats": "nats://x", "collection": "items", "types": "delete"}).types == frozenset({401})
    opts = parse_options({"NATS": "nats://x", "Types": "insert, Delete", "channels": "a, b_*", "partitions": "3"})
    assert opts.types == frozenset({400, 401}) and opts.channels == ["a", "b_*"] and opts.partitions == 3


def test_channel_selection_by_name_and_glob():
    opts = parse_options({"nats": "nats://x", "channels": "dml_1,dml_1*,extra_*"})
    known = ["dml_1", "dml_10", "extra_a", "other"]
    assert opts.select_channels(known) == ["dml_1", "dml_10", "extra_a"]
    with pytest.raises(InputError, match="unknown channel 'nope'"):
        parse_options({"nats": "nats://x", "channels": "nope"}).select_channels(known)
    with pytest.raises(InputError, match="no channel matches"):
        parse_options({"nats": "nats://x", "channels": "zz_*"}).select_channels(known)


def test_split_follows_message_counts_and_covers_every_id_once():
    spans = [ChannelSpan("big", 1, 900, 900), ChannelSpan("small", 1000, 1099, 100)]
    pieces = split_spans(spans, 10, 50_000)
    assert len(pieces) == 10
    assert sum(1 for p in pieces if p.channel == "big") == 9
    for span in spans:
        mine = sorted((p.first, p.last) for p in pieces if p.channel == span.channel)
        assert mine[0][0] == span.first and mine[-1][1] == span.last
        assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(mine))  # contiguous, no overlap
    assert sum(p.messages for p in pieces) == 1000


def test_default_partitions_follow_the_data():
    spans = [ChannelSpan("a", 1, 120_000, 120_000), ChannelSpan("b", 1, 10, 10)]
    pieces = split_spans(spans, None, 50_000)  # ceil(120010 / 50000) = 3, and b gets its own
    assert [(p.channel, p.messages) for p in pieces] == [("a", 60_000), ("a", 60_000), ("b", 10)]
    assert len(split_spans([ChannelSpan("tiny", 5, 6, 2)], 8, 50_000)) == 2  # never more pieces than ids


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
    assert "--shape messages" in err.value.hint
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


def test_checkpoint_is_written_atomically_and_resumes_after_the_last_id(tmp_path):
    path = tmp_path / "state" / "ckpt.json"
    fresh = ResumeState.load(path)
    assert fresh.runs == 0 and fresh.start_after("ch", 10) == 10
    fresh.advanced("rocksmq:/d", "/out", {"ch": 20}).save()
    loaded = ResumeState.load(path)
    assert (loaded.runs, loaded.positions, loaded.next_run) == (1, {"ch": 20}, 2)
    assert loaded.start_after("ch", 10) == 21 and loaded.start_after("other", 5) == 5
    assert [p.name for p in path.parent.iterdir()] == ["ckpt.json"]  # no temp file left behind
    with pytest.raises(InputError, match="belongs to a replay of rocksmq:/d"):
        loaded.check_belongs_to("nats://h:4222", "/out")


def test_checkpoint_refuses_another_collection_shape_or_type_selection(tmp_path):
    path = tmp_path / "ckpt.json"
    items = {"channels": "", "shape": "rows", "collection": "items", "types": ""}
    ResumeState.load(path).advanced("rocksmq:/d", "/out", {"ch": 20}, items).save()
    loaded = ResumeState.load(path)
    loaded.check_belongs_to("rocksmq:/d", "/out", dict(items))  # the same selection resumes
    with pytest.raises(InputError) as caught:
        loaded.check_belongs_to("rocksmq:/d", "/out", {**items, "collection": "skus", "types": "insert"})
    assert (
        "belongs to a replay of collection items, types (all), not of collection skus, types insert"
        in caught.value.one_line()
    )
    legacy = json.loads(path.read_text())
    del legacy["selection"]  # a checkpoint written before selections were recorded still resumes
    path.write_text(json.dumps(legacy))
    ResumeState.load(path).check_belongs_to("rocksmq:/d", "/out", {**items, "collection": "skus"})


def test_broken_checkpoint_names_file_and_line(tmp_path):
    path = tmp_path / "ckpt.json"
    path.write_text('{"format": "mqctl-replay-checkpoint/1",\n "positions": {')
    with pytest.raises(InputError) as err:
        ResumeState.load(path)
    assert err.value.location.startswith(f"{path}:2:")
    path.write_text(json.dumps({"something": "else"}))
    with pytest.raises(InputError, match="not a replay checkpoint"):
        ResumeState.load(path)


def test_spark_error_line_prefers_the_mqctl_error_raised_in_a_worker():
    text = (
        "An exception was thrown from the Python worker.\nTraceback (most recent call last):\n  File x\n"
        "mqctl.errors.PreconditionError: cannot connect to NATS at nats://127.0.0.1:1: refused\n"
    )
    assert spark_error_line(Exception(text)) == "cannot connect to NATS at nats://127.0.0.1:1: refused"
    assert spark_error_line(Exception("plain\nmore")) == "plain"
    worker = "[PYTHON_DATA_SOURCE_ERROR] Failed: Traceback\n  File x\nModuleNotFoundError: No module named 'mqctl'\n"
    assert spark_error_line(Exception(worker)) == "ModuleNotFoundError: No module named 'mqctl'"


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
    from mqctl.replay.rows import EntityBatch

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


def test_natural_key_takes_only_ascii_digits_as_numbers():
    from mqctl.sorting import ascii_int, natural_key

    assert sorted(["dml_10", "dml_2", "dml_1²", "dml_1"], key=natural_key) == ["dml_1", "dml_1²", "dml_2", "dml_10"]
    assert natural_key("1²") == ["", 1, "²"]
    assert [ascii_int(t) for t in ("42", "²", "①", "", "4 2", "-1")] == [42, None, None, None, None, None]
