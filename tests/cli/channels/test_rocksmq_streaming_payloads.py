"""RocksMQ values written by the Milvus 2.6 streaming service (magic prefix + RMQMessageLayout, built by
tests/helpers/rocksmq26.py from the cited source) read through the CLI like the 2.3.5 values they wrap: the same
decoded messages, times and replayable inserts; 2.5 values in the same store still decoded as before."""

from __future__ import annotations

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.rocksmq26 import streaming_copy
from tests.helpers.woodpecker_wal import ROCKSMQ

if not ROCKSMQ.exists():
    pytest.skip("tests/fixtures not written yet (python tests/helpers/make_fixtures.py)", allow_module_level=True)

KEYS = ("id", "type", "time", "tso", "collection", "collection_id", "partition_id", "shard", "rows", "pks", "error")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path, rewritten = streaming_copy(tmp_path_factory.mktemp("rmq26"), {"by-dev-rootcoord-dml_0"})
    assert rewritten == 116
    return path


def _peek(path, channel):
    result = run_cli("channels", "peek", channel, "--rocksmq", str(path), "--limit", "500", "--json")
    assert result.code == 0, result.stderr
    return [{k: m[k] for k in KEYS} for m in result.json()["messages"]]


def test_26_values_decode_like_the_messages_they_wrap(store):
    assert _peek(store, "by-dev-rootcoord-dml_0") == _peek(ROCKSMQ, "by-dev-rootcoord-dml_0")
    inserts = [m for m in _peek(store, "by-dev-rootcoord-dml_0") if m["type"] == "Insert"]
    assert inserts and all(m["pks"] and m["error"] is None for m in inserts)


def test_25_values_beside_them_are_unchanged(store):
    assert _peek(store, "by-dev-rootcoord-dml_1") == _peek(ROCKSMQ, "by-dev-rootcoord-dml_1")


def test_list_times_come_from_the_envelope(store):
    mine = run_cli("channels", "list", "--rocksmq", str(store), "--json").json()["channels"]
    theirs = run_cli("channels", "list", "--rocksmq", str(ROCKSMQ), "--json").json()["channels"]
    row = next(c for c in mine if c["name"] == "by-dev-rootcoord-dml_0")
    want = next(c for c in theirs if c["name"] == "by-dev-rootcoord-dml_0")
    assert (row["first_time"], row["last_time"], row["messages"]) == (
        want["first_time"],
        want["last_time"],
        want["messages"],
    )
