"""`channels peek/show` on Milvus 2.6 messages of version-2 types, end to end: headers and bodies written from
messages.proto field numbers (tests/helpers/messagespb.py) into Woodpecker segments (tests/helpers/woodpecker_segments.py)
and into a copy of the RocksMQ fixture in the 2.6 RocksMQ form (tests/helpers/rocksmq26.py), read through the CLI."""

from __future__ import annotations

import pytest

from tests.helpers import messagespb as pb
from tests.helpers import woodpecker_segments as w
from tests.helpers.cli import run_cli
from tests.helpers.protowire import field_bytes
from tests.helpers.streaming_meta import base36, tso

T0 = 1_763_000_000
VCHANNEL = "by-dev-rootcoord-dml_0_5v0"


def _props(kind: int, seconds: int, header: bytes | None = None, **extra: str) -> dict[str, str]:
    properties = {"_v": "2", "_t": str(kind), "_tt": base36(tso(T0 + seconds)), "_vc": VCHANNEL, **extra}
    if header is not None:
        properties["_h"] = pb.b64(header)
    return properties


def _stored() -> list[tuple[bytes, dict[str, str]]]:
    """One message of each kind an operator looks for, then one whose header is not the declared message."""
    return [
        (b"", _props(10, 0, pb.create_segment_header(5, 7, 4001, 2, 1 << 30, 100_000, 2))),
        (b"", _props(4, 1, pb.flush_header(5, 7, 4001))),
        (b"", _props(9, 2, pb.manual_flush_header(5, tso(T0 + 2), [4001, 4002]))),
        (b"", _props(34, 3, pb.create_index_header(5, 101, 9001, "vec_idx"))),
        (b"", _props(38, 4, pb.truncate_header(5, [4001, 4002]))),
        (b"", _props(700, 5, pb.alter_wal_header(4, {"stage": "switching"}))),
        (b"", _props(900, 6, pb.begin_txn_header(3000), _tx=pb.b64(b"\x08\x2a"))),
        (b"", _props(4, 7, field_bytes(1, "not an id"))),
    ]


EXPECTED = [  # type, collection_id, partition_id, segment_id, detail
    ("CreateSegment", 5, 7, 4001, f"segment 4001; storage version 2; level L1; max {1 << 30} bytes; max 100000 rows"),
    ("FlushSegment", 5, 7, 4001, "flush segment 4001"),
    ("ManualFlush", 5, None, None, f"flush_ts 2025-11-13T02:13:22Z (TSO {tso(T0 + 2)}); segments 4001, 4002"),
    ("CreateIndex", 5, None, None, "index vec_idx (id 9001) on field 101"),
    ("TruncateCollection", 5, None, None, "segments 4001, 4002"),
    ("AlterWAL", None, None, None, "target WoodPecker; config stage=switching"),
    ("BeginTxn", None, None, None, "keepalive 3000 ms"),
]
UNDECODABLE = "Flush header (_h) is not a FlushMessageHeader: FlushMessageHeader.collection_id has another wire type"


def _facts(messages: list[dict]) -> list[tuple]:
    return [(m["type"], m["collection_id"], m["partition_id"], m["segment_id"], m["detail"]) for m in messages]


@pytest.fixture(scope="module")
def wal(tmp_path_factory):
    root = tmp_path_factory.mktemp("wp26") / "wp"
    stored = [w.message(payload, properties) for payload, properties in _stored()]
    w.local_segment(root / "1" / "0", [stored[:4], stored[4:]])
    return root


def test_peek_json_shows_what_each_message_says(wal):
    result = run_cli("channels", "peek", "1", "--woodpecker", str(wal), "--json")
    assert result.code == 0, result.stderr
    messages = result.json()["messages"]
    assert _facts(messages[:-1]) == EXPECTED
    assert all(m["error"] is None and m["vchannel"] == VCHANNEL for m in messages[:-1])
    assert messages[6]["txn"] == 42
    last = messages[-1]
    assert (last["type"], last["error"], last["detail"], last["segment_id"]) == (
        "FlushSegment",
        UNDECODABLE,
        None,
        None,
    )
    assert last["time"] == "2025-11-13T02:13:27Z"


def test_peek_table_shows_the_detail(wal):
    result = run_cli("channels", "peek", "1", "--woodpecker", str(wal), "--wide")
    assert result.code == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "primary keys / detail" in text
    for words in (
        "flush segment 4001",
        "index vec_idx (id 9001) on field 101",
        "target WoodPecker; config stage=switching",
    ):
        assert words in text, words
    assert "error: Flush header (_h) is not a FlushMessageHeader" in text and "Traceback" not in result.stderr


def test_type_filter_selects_the_flushes(wal):
    result = run_cli("channels", "peek", "1", "--woodpecker", str(wal), "--type", "flushsegment,manualflush", "--json")
    assert result.code == 0, result.stderr
    assert [m["detail"] for m in result.json()["messages"]] == [EXPECTED[1][4], EXPECTED[2][4], None]


def test_show_counts_the_collection_and_the_undecodable(wal):
    result = run_cli("channels", "show", "1", "--woodpecker", str(wal), "--json")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["undecodable"] == 1
    assert [c["id"] for c in report["collections"]] == [5]


@pytest.fixture(scope="module")
def rocksmq(tmp_path_factory):
    from tests.helpers.rocksmq26 import append, streaming_copy
    from tests.helpers.woodpecker_wal import ROCKSMQ

    if not ROCKSMQ.exists():
        pytest.skip("tests/fixtures not written yet (python tests/helpers/make_fixtures.py)")
    path, _ = streaming_copy(tmp_path_factory.mktemp("rmq26"), {"by-dev-rootcoord-dml_0"})
    ids = append(path, "by-dev-rootcoord-dml_0", _stored())
    return path, ids


def test_rocksmq_values_written_by_26_show_the_same(rocksmq):
    path, ids = rocksmq
    result = run_cli(
        "channels", "peek", "by-dev-rootcoord-dml_0", "--rocksmq", str(path), "--from", str(ids[0]), "--json"
    )
    assert result.code == 0, result.stderr
    messages = result.json()["messages"]
    assert [m["id"] for m in messages] == ids
    assert _facts(messages[:-1]) == EXPECTED
    assert messages[-1]["error"] == UNDECODABLE


def _peeked(*args: str) -> list[dict]:
    result = run_cli("channels", "peek", *args, "--limit", "1000", "--json")
    assert result.code == 0, result.stderr
    return result.json()["messages"]


@pytest.mark.spark
def test_replay_messages_shape_carries_the_ids_and_the_detail(spark, wal):
    """`replay`'s messages shape (the milvus_mq data source in a real local Spark) gets the collection, partition and
    segment of each version-2 message, the undecodable one its error, and the `detail` `channels peek` shows."""
    frame = spark.read.format("milvus_mq").option("woodpecker", str(wal)).load()
    rows = frame.orderBy("id").collect()
    got = [(r["type"], r["collection_id"], r["partition_id"], r["segment_id"], r["error"]) for r in rows]
    assert got == [(t, c, p, s, None) for t, c, p, s, _ in EXPECTED] + [("FlushSegment", None, None, None, UNDECODABLE)]
    peeked = _peeked("1", "--woodpecker", str(wal))
    assert [r["detail"] for r in rows] == [m["detail"] for m in peeked] == [d for *_, d in EXPECTED] + [None]


@pytest.mark.spark
def test_replay_detail_on_rocksmq_is_null_before_version_2(spark, rocksmq):
    """On a RocksMQ holding 2.6 values (dml_0, version-2 messages appended) beside 2.3-2.5 ones (dml_1), each row's
    `detail` equals what `channels peek --json` shows for that message: set on the version-2 messages, null on the
    version-1 messages in the 2.6 envelope and on every message 2.3-2.5 wrote."""
    path, ids = rocksmq
    frame = spark.read.format("milvus_mq").option("rocksmq", str(path)).load()
    rows = frame.select("channel", "id", "type", "detail").collect()
    replayed = {(r["channel"], r["id"]): (r["type"], r["detail"]) for r in rows}
    for channel in ("by-dev-rootcoord-dml_0", "by-dev-rootcoord-dml_1"):
        peeked = {(channel, m["id"]): (m["type"], m["detail"]) for m in _peeked(channel, "--rocksmq", str(path))}
        assert peeked and {key: replayed[key] for key in peeked} == peeked
    details = {key: detail for key, (_, detail) in replayed.items() if detail is not None}
    assert sorted(details) == [("by-dev-rootcoord-dml_0", i) for i in ids[:-1]]
    assert [details[("by-dev-rootcoord-dml_0", i)] for i in ids[:-1]] == [d for *_, d in EXPECTED]


@pytest.mark.spark
def test_follow_messages_shape_carries_the_detail(spark, wal, tmp_path):
    """`replay --follow` writes the same `detail` column (the streaming reader, Spark's file sink), up to the BeginTxn
    of the transaction never committed here (no batch ends inside an open transaction)."""
    from mqctl.mq.sources import SourceOptions
    from mqctl.replay.follow import FollowRequest, run_follow
    from mqctl.replay.model import ReplayRequest

    out = tmp_path / "out"
    replay = ReplayRequest(SourceOptions(woodpecker=str(wal)), output=str(out), shape="messages")
    result = run_follow(FollowRequest(replay, str(tmp_path / "ckpt"), available_now=True), spark=spark)
    begin = [properties["_t"] for _, properties in _stored()].index("900")
    assert result.rows == begin
    rows = spark.read.parquet(str(out)).orderBy("id").collect()
    assert [r["detail"] for r in rows] == [m["detail"] for m in _peeked("1", "--woodpecker", str(wal))][:begin]
    assert [r["detail"] for r in rows] == [d for *_, d in EXPECTED][:begin]
