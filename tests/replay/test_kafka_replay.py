"""`mqctl replay --to-spark --kafka` (batch) on a real Kafka broker holding the RocksMQ fixture's real Milvus 2.3.5
messages: the rows shape gives what the fixture script inserted and deleted, the messages shape every record once,
with its offset. One replay starts Spark (a subprocess, as a user runs it); the messages shape goes through the data
source in the test's own session."""

from __future__ import annotations

import pytest

from tests.helpers.cli import run_cli_subprocess
from tests.helpers.replay import expected_deletes, expected_inserts, replayed

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def test_rows_replayed_from_kafka_are_what_was_inserted_and_deleted(spark, kafka_bootstrap, kafka_fixture, tmp_path):
    out = tmp_path / "items"
    result = run_cli_subprocess(
        "replay",
        "--to-spark",
        "--kafka",
        kafka_bootstrap,
        "--topic-prefix",
        "by-dev-",  # the fixture's 2.3 topics, not their 2.6 copies
        "--collection",
        "items",
        "--shape",
        "rows",
        "--output",
        str(out),
        "--format",
        "parquet",
        "--master",
        "local[2]",
        "--json",
    )
    assert result.code == 0, result.stderr
    summary = result.json()
    assert summary["source"] == f"kafka://{kafka_bootstrap}" and summary["written"]
    inserts, deletes = replayed(spark.read.parquet(str(out)).collect(), "items")
    assert inserts == expected_inserts("rocksmq", "items") and deletes == expected_deletes("rocksmq", "items")


def test_the_messages_shape_reads_every_record_once_with_its_offset(spark, kafka_bootstrap, kafka_fixture):
    """Through the data source in this process's Spark session (no second JVM start): several partitions per topic."""
    df = (
        spark.read.format("milvus_mq")
        .option("kafka", kafka_bootstrap)
        .option("topic_prefix", "by-dev-")
        .option("messages_per_partition", "40")
        .load()
    )
    rows = df.select("channel", "id", "type").collect()
    by_topic = {name: count for name, count in kafka_fixture.items() if name.startswith("by-dev-")}
    assert len(rows) == sum(by_topic.values())
    for name, count in by_topic.items():
        assert sorted(r["id"] for r in rows if r["channel"] == name) == list(range(count)), name
    assert {r["type"] for r in rows} >= {"Insert", "Delete", "TimeTick", "CreateCollection"}
