"""Replay into a real local Spark from the real Milvus 2.3.5 fixtures (RocksMQ and a live nats-server).

Expected values come from tests/fixtures/expected.json (what the fixture script inserted and deleted).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.natsmq import publish
from tests.helpers.paths import FIXTURES
from tests.helpers.replay import EXPECTED, expected_deletes, expected_inserts, replayed

pytestmark = pytest.mark.spark

ROCKSMQ = FIXTURES / "rocksmq" / "rdb_data"
NATS_STORE = FIXTURES / "natsmq" / "store"
if EXPECTED is None:
    pytest.skip("tests/fixtures not written yet (python tests/helpers/make_fixtures.py)", allow_module_level=True)


@pytest.fixture
def live_nats(tmp_path):
    """A live nats-server over a temporary copy of the natsmq fixture (tests may publish to it)."""
    from mqctl.mq.nats.server import private_nats_server

    store = tmp_path / "store"
    shutil.copytree(NATS_STORE, store)
    with private_nats_server(store, writable=True) as url:
        yield url


# ---------------------------------------------------------------------------- expectations


def rows_frame(spark, source: dict, collection: str, partitions: int = 3):
    reader = spark.read.format("milvus_mq").option("collection", collection).option("partitions", str(partitions))
    for key, value in source.items():
        reader = reader.option(key, value)
    return reader.load()


# ---------------------------------------------------------------------------- the data source
@pytest.mark.parametrize("collection", ["items", "skus"])
def test_rows_from_rocksmq_equal_what_was_inserted_and_deleted(spark, collection):
    df = rows_frame(spark, {"rocksmq": str(ROCKSMQ), "shape": "rows"}, collection)
    inserts, deletes = replayed(df.collect(), collection)
    assert inserts == expected_inserts("rocksmq", collection)
    assert deletes == expected_deletes("rocksmq", collection)


@pytest.mark.parametrize("collection", ["items", "skus"])
def test_rows_from_live_nats_equal_what_was_inserted_after_the_switch(spark, live_nats, collection):
    df = rows_frame(spark, {"nats": live_nats}, collection)
    inserts, deletes = replayed(df.collect(), collection)
    assert inserts == expected_inserts("natsmq", collection)
    assert deletes == expected_deletes("natsmq", collection)
    # No CreateCollection on NATS after the switch: the schema inferred from inserts has the same types.
    assert df.schema == rows_frame(spark, {"rocksmq": str(ROCKSMQ)}, collection).schema


def test_same_rows_from_rocksmq_and_from_nats_for_the_same_messages(spark, tmp_path):
    """The RocksMQ fixture's messages published unchanged into a live NATS stream replay identically."""
    from mqctl.mq.nats.server import private_nats_server
    from mqctl.mq.rocksmq.reader import RocksMQSource

    (tmp_path / "store" / "jetstream").mkdir(parents=True)
    with private_nats_server(tmp_path / "store", writable=True) as url, RocksMQSource(ROCKSMQ) as rocks:
        for channel in rocks.list_channels():
            publish(url, channel.name, [m.data for m in rocks.iter_messages(channel.name)], create=True)
        for collection in ("items", "skus"):
            columns = [c for c in rows_frame(spark, {"rocksmq": str(ROCKSMQ)}, collection).columns if c != "_seq"]
            from_rocksmq = rows_frame(spark, {"rocksmq": str(ROCKSMQ)}, collection).select(*columns)
            from_nats = rows_frame(spark, {"nats": url}, collection, partitions=2).select(*columns)
            assert from_nats.schema == from_rocksmq.schema
            assert sorted(map(tuple, from_nats.collect()), key=repr) == sorted(
                map(tuple, from_rocksmq.collect()), key=repr
            )
            assert from_nats.count() == len(expected_inserts("rocksmq", collection)) + len(
                expected_deletes("rocksmq", collection)
            )


def test_one_channel_read_by_several_partitions_reads_each_message_once(spark):
    from pyspark.sql import functions as F

    from mqctl.mq.rocksmq.reader import RocksMQSource

    channel = "by-dev-rootcoord-dml_0"
    with RocksMQSource(ROCKSMQ) as rocks:
        stored = [m.id for m in rocks.iter_messages(channel)]
    df = (
        spark.read.format("milvus_mq")
        .option("rocksmq", str(ROCKSMQ))
        .option("channels", channel)
        .option("partitions", "3")
        .load()
    )
    assert df.rdd.getNumPartitions() == 3
    per_partition = df.groupBy(F.spark_partition_id().alias("p")).count().collect()
    assert len(per_partition) == 3 and all(row["count"] > 0 for row in per_partition)
    ids = [row.id for row in df.select("id").collect()]
    assert sorted(ids) == stored
    inserted = df.where("type = 'Insert' AND collection = 'items'").agg(F.sum("rows")).first()[0]
    assert 0 < inserted < len(expected_inserts("rocksmq", "items"))  # items has two shards; this is one


def test_messages_shape_carries_every_insert_and_delete(spark):
    from pyspark.sql import functions as F

    df = spark.read.format("milvus_mq").option("rocksmq", str(ROCKSMQ)).option("types", "insert,delete").load()
    totals = {
        (r.type, r.collection): r.n for r in df.groupBy("type", "collection").agg(F.sum("rows").alias("n")).collect()
    }
    for collection in ("items", "skus"):
        assert totals[("Insert", collection)] == len(expected_inserts("rocksmq", collection))
        assert totals[("Delete", collection)] == len(expected_deletes("rocksmq", collection))
    assert df.where("time IS NULL OR tso IS NULL OR payload_size <= 0").count() == 0
    partitions = {
        r.partition for r in df.where("type = 'Insert' AND collection = 'items'").select("partition").collect()
    }
    assert partitions == {
        b["partition"] for b in (EXPECTED or {})["inserts"] if b["phase"] == "rocksmq" and b["collection"] == "items"
    }


def test_collection_by_id_replays_the_same_rows_as_by_name(spark):
    messages = spark.read.format("milvus_mq").option("rocksmq", str(ROCKSMQ)).option("types", "insert").load()
    collection_id = messages.where("collection = 'skus'").select("collection_id").first()[0]
    by_id = rows_frame(spark, {"rocksmq": str(ROCKSMQ)}, str(collection_id))
    assert replayed(by_id.collect(), "skus") == (
        expected_inserts("rocksmq", "skus"),
        expected_deletes("rocksmq", "skus"),
    )


def test_from_a_tso_keeps_only_later_rows(spark):
    from pyspark.sql import functions as F

    messages = spark.read.format("milvus_mq").option("rocksmq", str(ROCKSMQ)).option("types", "insert").load()
    tsos = sorted(r.tso for r in messages.where("collection = 'items'").select("tso").distinct().collect())
    cut = tsos[len(tsos) // 2]
    later = rows_frame(spark, {"rocksmq": str(ROCKSMQ), "from": f"tso:{cut}"}, "items")
    everything = rows_frame(spark, {"rocksmq": str(ROCKSMQ)}, "items")
    assert later.count() == everything.where(F.col("_ts") >= cut).count() > 0
    assert later.agg(F.min("_ts")).first()[0] >= cut


def test_csv_holds_vectors_as_json_and_binary_as_base64(spark, tmp_path):
    import base64

    from mqctl.mq.sources import SourceOptions
    from mqctl.replay.job import run_replay
    from mqctl.replay.model import ReplayRequest

    def replay_csv(collection: str) -> list:
        out = tmp_path / f"{collection}.csv"
        run_replay(
            ReplayRequest(
                SourceOptions(rocksmq=ROCKSMQ), output=str(out), format="csv", collection=collection, types="insert"
            ),
            spark=spark,
        )
        return spark.read.option("header", "false").csv(str(out)).collect()

    skus, items = replay_csv("skus"), replay_csv("items")
    expected = expected_inserts("rocksmq", "skus")
    assert {r[0]: base64.b64decode(r[2]) for r in skus} == {pk: row["fingerprint"] for pk, row in expected.items()}
    assert {r[0]: json.loads(r[3]) for r in skus} == {pk: row["$meta"] for pk, row in expected.items()}
    vectors = {int(r[0]): json.loads(r[9]) for r in items}
    assert vectors == {pk: row["embedding"] for pk, row in expected_inserts("rocksmq", "items").items()}


# ---------------------------------------------------------------------------- checkpoints
def _new_inserts(url: str, first_pk: int, count: int) -> tuple[str, bytes, dict]:
    """A real-format insert for `items`: a stored one re-serialized with new keys, titles and later
    timestamps, as Milvus's proxy would write it. Returns (channel, payload, pk -> title)."""
    from mqctl.mq.decode.messages import decode
    from mqctl.mq.nats.client import JetStreamSource

    with JetStreamSource(url) as nats_source:
        channel, proto = next(
            (ch.name, decode(m.data).proto)
            for ch in nats_source.list_channels()
            for m in nats_source.iter_messages(ch.name)
            if decode(m.data).type_code == 400 and decode(m.data).collection == "items"
        )
    rows = len(proto.rowIDs)
    pks = list(range(first_pk, first_pk + rows))[:count]
    later = proto.base.timestamp + (60_000 << 18)  # one minute later
    proto.base.timestamp = later
    proto.timestamps[:] = [later] * rows
    proto.rowIDs[:] = [pk + 10_000 for pk in pks]
    for column in proto.fields_data:
        if column.field_name == "id":
            column.scalars.long_data.data[:] = pks
        elif column.field_name == "title":
            column.scalars.string_data.data[:] = [f"new-{pk}" for pk in pks]
    return channel, proto.SerializeToString(), {pk: f"new-{pk}" for pk in pks}


def test_checkpoint_second_run_adds_nothing_and_a_later_run_adds_exactly_the_new_messages(spark, live_nats, tmp_path):
    from mqctl.mq.sources import SourceOptions
    from mqctl.replay.job import run_replay
    from mqctl.replay.model import ReplayRequest

    out, ckpt = tmp_path / "out", tmp_path / "ckpt.json"

    def replay():
        request = ReplayRequest(
            SourceOptions(nats=live_nats), output=str(out), collection="items", resume_file=str(ckpt), partitions=3
        )
        return run_replay(request, spark=spark)

    first = replay()
    assert first.written and first.run == 1
    assert first.rows == len(expected_inserts("natsmq", "items")) + len(expected_deletes("natsmq", "items"))
    saved = json.loads(ckpt.read_text())
    assert saved["runs"] == 1 and saved["positions"] == {c.name: c.last_id for c in first.channels}

    second = replay()
    assert not second.written and second.rows == 0 and json.loads(ckpt.read_text()) == saved

    channel, payload, titles = _new_inserts(live_nats, 900, 3)
    publish(live_nats, channel, [payload])
    third = replay()
    assert third.written and third.run == 2 and third.rows == len(titles)
    data = spark.read.parquet(str(out))
    added = data.where("replay_run = 2").collect()
    assert {row.id: row.title for row in added} == titles and {row._channel for row in added} == {channel}
    assert data.count() == first.rows + len(titles)


def test_rerun_after_a_crash_before_the_checkpoint_moved_adds_no_duplicates(spark, tmp_path):
    """A run that wrote its part but died before saving the checkpoint is run N again: it overwrites
    replay_run=N instead of adding a second copy."""
    from mqctl.mq.sources import SourceOptions
    from mqctl.replay.job import run_replay
    from mqctl.replay.model import ReplayRequest

    out, ckpt = tmp_path / "out", tmp_path / "ckpt.json"
    request = ReplayRequest(SourceOptions(rocksmq=ROCKSMQ), output=str(out), collection="skus", resume_file=str(ckpt))
    run_replay(request, spark=spark)
    ckpt.unlink()  # as if the process died after the write, before the checkpoint was saved
    again = run_replay(request, spark=spark)
    assert again.run == 1
    inserts, deletes = replayed(spark.read.parquet(str(out)).collect(), "skus")
    assert inserts == expected_inserts("rocksmq", "skus") and deletes == expected_deletes("rocksmq", "skus")


def test_table_target_with_checkpoint_reruns_without_duplicates(spark, tmp_path):
    from mqctl.errors import PreconditionError
    from mqctl.mq.sources import SourceOptions
    from mqctl.replay.job import run_replay
    from mqctl.replay.model import ReplayRequest

    ckpt = tmp_path / "ckpt.json"
    request = ReplayRequest(
        SourceOptions(rocksmq=ROCKSMQ), table="replayed_items", collection="items", resume_file=str(ckpt)
    )
    first = run_replay(request, spark=spark)
    ckpt.unlink()  # a crash after the write: the rerun is run 1 again and replaces its partition
    again = run_replay(request, spark=spark)
    assert first.target == again.target == "table:replayed_items" and again.run == 1
    inserts, deletes = replayed(spark.table("replayed_items").collect(), "items")
    assert inserts == expected_inserts("rocksmq", "items") and deletes == expected_deletes("rocksmq", "items")
    with pytest.raises(PreconditionError, match="already exists"):
        run_replay(
            ReplayRequest(SourceOptions(rocksmq=ROCKSMQ), table="replayed_items", collection="items"), spark=spark
        )


@pytest.mark.milvus
def test_schema_from_milvus_for_a_live_rocksmq_found_through_its_config(spark, tmp_path):
    """A real Milvus 2.3.5 on RocksMQ: --config finds its rocksmq.path, --milvus describes the collection."""
    from pymilvus import DataType, MilvusClient

    from mqctl.mq.sources import SourceOptions
    from mqctl.replay.job import run_replay
    from mqctl.replay.model import ReplayRequest
    from mqctl.sandbox import server as sandbox

    box = tmp_path / "milvus"
    info = sandbox.up(str(box), mq="rocksmq")
    try:
        client = MilvusClient(uri=info.uri)
        schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("doc", DataType.INT64, is_primary=True)
        schema.add_field("tag", DataType.VARCHAR, max_length=16)
        schema.add_field("vec", DataType.FLOAT_VECTOR, dim=4)
        client.create_collection("docs", schema=schema, num_shards=1)
        rows = [{"doc": i, "tag": f"t{i}", "vec": [i / 2, 0.0, 1.0, -i / 4]} for i in range(6)]
        client.insert("docs", rows)
        client.delete("docs", ids=[5])
        client.close()
        result = run_replay(
            ReplayRequest(
                SourceOptions(config=[Path(info.config)]),
                output=str(tmp_path / "out"),
                collection="docs",
                milvus=info.uri,
            ),
            spark=spark,
        )
    finally:
        sandbox.down(str(box), timeout=30)
    assert result.schema_origin == "milvus" and result.source.startswith("rocksmq:")
    replayed_rows = spark.read.parquet(str(tmp_path / "out")).collect()
    assert sorted((r.doc, r.tag, r.vec) for r in replayed_rows if r._op == "insert") == [
        (r["doc"], r["tag"], r["vec"]) for r in rows
    ]
    assert [r.doc for r in replayed_rows if r._op == "delete"] == [5]
