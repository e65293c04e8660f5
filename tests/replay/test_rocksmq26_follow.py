"""`replay --follow` on a RocksMQ written by Milvus 2.6 (`STREAM`-prefixed values, tests/helpers/rocksmq26.py): a 2.6
transaction open at the end of what is visible holds the batch before its BeginTxn, and the batch that reads its
CommitTxn emits it once, whole, with the commit's time tick, as on Woodpecker (tests/replay/test_woodpecker_follow.py).
The store is a copy of the RocksMQ fixture whose `dml_0` holds the 2.6 form of its messages beside channels 2.5
wrote; the transaction's messages are appended to it between runs, as the 2.6 streaming service writes them."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.helpers.paths import ROCKSMQ
from tests.helpers.protowire import field_int
from tests.helpers.streaming_meta import base36

DML_0, DML_1 = "by-dev-rootcoord-dml_0", "by-dev-rootcoord-dml_1"
TXN = 11

Message = tuple[bytes, dict[str, str]]


class Growth(NamedTuple):
    first: list[Message]  # the BeginTxn, an insert inside the transaction, a time tick
    second: list[Message]  # the CommitTxn, a time tick
    commit: int  # the CommitTxn's time tick


def _txn(properties: dict[str, str], tso: int) -> dict[str, str]:
    return {**properties, "_tt": base36(tso), "_tx": base64.b64encode(field_int(1, TXN)).decode()}


def _marker(kind: int, tso: int) -> Message:
    return b"", _txn({"_v": "2", "_t": str(kind)}, tso)


def _tick(tso: int) -> Message:
    return b"", {"_v": "1", "_t": "1", "_tt": base36(tso)}  # a TimeTick (messages.proto MessageType 1)


def _store(tmp_path: Path) -> tuple[Path, Growth]:
    """The 2.6 copy, and what is appended to dml_0: first the BeginTxn, an `items` insert inside the transaction and a
    time tick (so the transaction lies within what is visible), later its CommitTxn and another tick."""
    from mqctl.mq.decode.messages import decode
    from mqctl.mq.rocksmq.reader import RocksMQSource
    from tests.helpers.rocksmq26 import streaming_copy

    if not ROCKSMQ.exists():
        pytest.skip("tests/fixtures not written yet (python tests/helpers/make_fixtures.py)")
    store, _ = streaming_copy(tmp_path / "milvus", {DML_0})
    with RocksMQSource(store) as source:
        stored = list(source.iter_messages(DML_0))
    last = max(int(raw.headers["_tt"], 36) for raw in stored)
    [insert] = [
        (raw.data, raw.headers)
        for raw in stored
        if (m := decode(raw.data, raw.headers)).type_code == 400 and m.collection == "items"
    ][:1]
    begin, commit = last + 10, last + 30
    first = [_marker(900, begin), (insert[0], _txn(insert[1], begin)), _tick(last + 20)]
    second = [_marker(901, commit), _tick(last + 40)]
    return store, Growth(first, second, commit)


def test_positions_hold_an_open_transaction_whole(tmp_path):
    from mqctl.mq.rocksmq.reader import RocksMQSource
    from mqctl.replay.reader.open_transactions import (
        may_hold_transactions,
        transaction_safe_end,
        transaction_safe_start,
    )
    from tests.helpers.rocksmq26 import append

    store, growth = _store(tmp_path)
    begin, insert, tick = append(store, DML_0, growth.first)
    with RocksMQSource(store) as source:
        bounds_0, bounds_1 = source.id_range(DML_0), source.id_range(DML_1)
        assert bounds_0 is not None and bounds_1 is not None
        first_0, (first_1, last_1) = bounds_0[0], bounds_1
        assert transaction_safe_end(source, DML_0, first_0, tick + 1) == begin  # held before the BeginTxn
        assert transaction_safe_end(source, DML_0, first_0, begin) == begin  # nothing open before it
        assert transaction_safe_end(source, DML_0, begin, tick + 1) == begin  # its outcome is not stored yet
        assert transaction_safe_start(source, DML_0, tick + 1) == begin  # --from latest starts before it
        assert may_hold_transactions(source, DML_0, first_0, tick + 1)
        # a channel 2.5 wrote: its newest message carries no 2.6 envelope, nothing is scanned or moved
        assert not may_hold_transactions(source, DML_1, first_1, last_1 + 1)
        assert transaction_safe_end(source, DML_1, first_1, last_1 + 1) == last_1 + 1
    commit, _ = append(store, DML_0, growth.second)
    with RocksMQSource(store) as source:
        assert transaction_safe_end(source, DML_0, first_0, commit + 2) == commit + 2
        # a cap ending inside the transaction: held before it, or, from its BeginTxn, carried on to its commit, but
        # only within what is visible
        assert transaction_safe_end(source, DML_0, first_0, insert + 1) == begin
        assert transaction_safe_end(source, DML_0, begin, insert + 1) == commit + 1
        assert transaction_safe_end(source, DML_0, begin, insert + 1, limit=commit) == begin
        assert transaction_safe_end(source, DML_0, begin, insert + 1, limit=commit + 2) == commit + 1


def _keys(rows) -> list[tuple]:
    """(op, pk, channel, message id, time tick) of every row, sorted: duplicates stay visible."""
    return sorted((row["_op"], row["id"], row["_channel"], row["_seq"], row["_ts"]) for row in rows)


@pytest.mark.spark
def test_follow_emits_a_transaction_once_whole_at_its_commit_and_resumes(spark, tmp_path):
    from mqctl.mq.sources import SourceOptions
    from mqctl.replay.follow import FollowRequest, run_follow
    from mqctl.replay.model import ReplayRequest
    from tests.helpers.rocksmq26 import append

    store, growth = _store(tmp_path)
    begin, insert, _ = append(store, DML_0, growth.first)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    replay = ReplayRequest(SourceOptions(rocksmq=store), output=str(out), collection="items", partitions=2)

    def follow():
        return run_follow(FollowRequest(replay, str(ckpt), available_now=True), spark=spark)

    def batch_keys() -> list[tuple]:
        frame = spark.read.format("milvus_mq").option("rocksmq", str(store)).option("collection", "items").load()
        return _keys(frame.collect())

    first = follow()
    assert first.positions[DML_0] == begin  # the batch ends right before the open transaction's BeginTxn
    written = _keys(spark.read.parquet(str(out)).collect())
    assert written and not [key for key in written if key[3] >= begin]

    _, tick = append(store, DML_0, growth.second)
    second = follow()
    assert second.resumed and second.positions[DML_0] == tick + 1
    written = _keys(spark.read.parquet(str(out)).collect())
    assert written == batch_keys() and len(written) == len(set(written))
    txn_rows = [key for key in written if key[2] == DML_0 and key[3] == insert]
    assert txn_rows and len(txn_rows) == second.rows and {key[4] for key in txn_rows} == {growth.commit}

    third = follow()  # a restart with nothing new
    assert third.rows == 0 and _keys(spark.read.parquet(str(out)).collect()) == written
