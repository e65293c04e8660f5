"""Replay into a real local Spark from Woodpecker WALs upstream's own code wrote (tests/fixtures/upstream: Woodpecker
v0.1.13 through Milvus 2.6's wp adapter and v0.1.37, messages from Milvus's pkg/v2 builders): every insert and
delete row as the manifest says, a transaction's rows once its CommitTxn follows and with the commit's time
tick."""

from __future__ import annotations

import pytest

from tests.helpers import upstream_writer as upstream

FOLDERS = [f for f in upstream.fixture_folders() if upstream.manifest(f)["variant"] == "normal"]
if not FOLDERS:
    pytest.skip("tests/fixtures/upstream is empty (python -m tests.helpers.upstream_writer)", allow_module_level=True)


@pytest.mark.spark
@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_rows_are_the_inserts_and_deletes_the_writer_appended(spark, folder):
    manifest = upstream.manifest(folder)
    frame = (
        spark.read.format("milvus_mq")
        .option("woodpecker", str(upstream.wal_path(folder)))
        .option("collection", "upstream_fixture")
        .load()
    )
    rows = [r.asDict() for r in frame.collect()]
    assert sorted((r["pk"], r["_op"], r["_ts"], r["_seq"]) for r in rows) == upstream.replayed_rows(manifest)
    assert {r["_channel"] for r in rows} == {str(manifest["logs"][0]["log_id"])}
    assert all((r["vec"] is None) == (r["_op"] == "delete") for r in rows)
