"""Replay from a Woodpecker WAL into a real local Spark, through the data source (the CLI's runs: tests/cli/replay/
test_woodpecker_replay.py): the RocksMQ fixture's messages (written by a real Milvus 2.3.5) in the 2.6 envelope as
Woodpecker segments (tests/helpers/woodpecker_wal.py), replayed as rows and as messages, and compared with what was
inserted and with the same replay from RocksMQ."""

from __future__ import annotations

import pytest

from tests.helpers.replay import EXPECTED, expected_deletes, expected_inserts, replayed
from tests.helpers.woodpecker_wal import ROCKSMQ, write_wal


def _frame(spark, options: dict[str, str]):
    reader = spark.read.format("milvus_mq")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


@pytest.mark.spark
@pytest.mark.parametrize("collection", ["items", "skus"])
def test_rows_equal_what_was_inserted_and_deleted(spark, wal, collection):
    df = _frame(spark, {"woodpecker": str(wal), "collection": collection, "partitions": "3"})
    inserts, deletes = replayed(df.collect(), collection)
    assert inserts == expected_inserts("rocksmq", collection)
    assert deletes == expected_deletes("rocksmq", collection)


@pytest.mark.spark
def test_messages_equal_the_rocksmq_replay_of_the_same_messages(spark, wal, logs):
    names = {str(log.log_id): log.channel for log in logs}
    keep = ["type", "type_code", "tso", "time", "collection_id", "partition_id", "shard", "rows", "error"]
    mine = _frame(spark, {"woodpecker": str(wal), "woodpecker_logs": __import__("json").dumps(names)})
    theirs = _frame(spark, {"rocksmq": str(ROCKSMQ), "types": "timetick,insert,delete,createcollection,dropcollection"})
    got = sorted((r["channel"], *(r[k] for k in keep)) for r in mine.collect())
    want = sorted((r["channel"], *(r[k] for k in keep)) for r in theirs.collect())
    assert len(got) == sum(len(log.messages) for log in logs) and got == want


@pytest.fixture(scope="module")
def txn_wal(tmp_path_factory, logs):
    """The fixture WAL with dml_0's first insert in a committed transaction (committed a second after its last
    message) and its second insert in a rolled-back one: (folder, pks of the rolled-back insert, commit TSO, the
    channel of dml_0)."""
    import base64
    import dataclasses

    from pymilvus.grpc_gen import msg_pb2

    from tests.helpers.protowire import field_int
    from tests.helpers.streaming_meta import base36

    log = next(log for log in logs if log.channel == "by-dev-rootcoord-dml_0")
    inserts = [i for i, (_, props) in enumerate(log.messages) if props["_t"] == "2"]
    committed, rolled_back = inserts[0], inserts[1]
    commit_tso = int(log.messages[-1][1]["_tt"], 36) + (1000 << 18)

    def marker(kind: int, txn: int, tso: int) -> tuple[bytes, dict[str, str]]:
        tx = base64.b64encode(field_int(1, txn)).decode()
        return b"", {"_v": "2", "_t": str(kind), "_tt": base36(tso), "_tx": tx}

    def in_txn(index: int, txn: int) -> tuple[bytes, dict[str, str]]:
        payload, props = log.messages[index]
        return payload, {**props, "_tx": base64.b64encode(field_int(1, txn)).decode()}

    tick = int(log.messages[committed][1]["_tt"], 36)
    messages = []
    for i, message in enumerate(log.messages):
        if i == committed:
            messages += [marker(900, 1, tick), in_txn(i, 1)]
        elif i == rolled_back:
            messages += [marker(900, 2, tick), in_txn(i, 2), marker(902, 2, tick)]
        else:
            messages.append(message)
    messages.append(marker(901, 1, commit_tso))
    indexes = list(range(len(messages)))
    blocks = [indexes[i : i + 4] for i in range(0, len(indexes), 4)]
    changed = dataclasses.replace(
        log, messages=messages, segments=[blocks[i : i + 3] for i in range(0, len(blocks), 3)]
    )
    root = tmp_path_factory.mktemp("txn") / "wp"
    write_wal(root, [changed if other is log else other for other in logs])
    body = msg_pb2.InsertRequest()
    body.ParseFromString(log.messages[rolled_back][0])
    assert EXPECTED is not None
    pk = EXPECTED["collections"]["items"]["primary_key"]
    [column] = [fd for fd in body.fields_data if fd.field_name == pk]
    return root, set(column.scalars.long_data.data), commit_tso, str(log.log_id)


@pytest.mark.spark
def test_rows_of_a_rolled_back_transaction_are_left_out(spark, txn_wal):
    root, rolled_back, commit_tso, channel = txn_wal
    df = _frame(spark, {"woodpecker": str(root), "collection": "items", "partitions": "4"})
    rows = df.collect()
    inserts, deletes = replayed(rows, "items")
    expected = {pk: row for pk, row in expected_inserts("rocksmq", "items").items() if pk not in rolled_back}
    assert rolled_back and inserts == expected and deletes == expected_deletes("rocksmq", "items")
    first_insert = [r for r in rows if r["_op"] == "insert" and r["_channel"] == channel and r["_seq"] < 10**10]
    assert first_insert and {r["_ts"] for r in first_insert} == {commit_tso}
