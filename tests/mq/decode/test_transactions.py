"""2.6 transactions resolved as a consumer sees them (mqctl.mq.decode.transactions), on messages carrying the
envelope properties of milvus pkg/streaming/util/message/properties.go: `_tx` base64 of TxnContext (txn_id 1)."""

from __future__ import annotations

import base64

from mqctl.mq.decode.transactions import TxnStats, committed_only
from mqctl.mq.model import RawMessage
from tests.helpers.protowire import field_int


def _msg(number: int, kind: int, tick: str, txn: int | None = None) -> RawMessage:
    headers = {"_v": "2", "_t": str(kind), "_tt": tick}
    if txn is not None:
        headers["_tx"] = base64.b64encode(field_int(1, txn)).decode()
    return RawMessage("ch", number, b"", headers)


CHANNEL = [
    _msg(1, 1, "a"),  # time tick
    _msg(2, 900, "b", txn=7),  # BeginTxn 7
    _msg(3, 2, "c", txn=7),  # insert of 7
    _msg(4, 900, "d", txn=8),  # BeginTxn 8
    _msg(5, 2, "e", txn=8),  # insert of 8
    _msg(6, 2, "f", txn=7),  # insert of 7
    _msg(7, 902, "g", txn=8),  # RollbackTxn 8
    _msg(8, 901, "h", txn=7),  # CommitTxn 7
    _msg(9, 2, "i"),  # an insert outside any transaction
    _msg(10, 900, "j", txn=9),  # BeginTxn 9, never committed
    _msg(11, 2, "k", txn=9),
]


def _read(first: int, last: int, stats: TxnStats | None = None) -> list[tuple[int, str]]:
    messages = (m for m in CHANNEL if m.id >= first)
    return [(m.id, m.headers["_tt"]) for m in committed_only(messages, last, stats)]


def test_committed_messages_come_at_the_commit_with_its_time_tick():
    stats = TxnStats()
    got = _read(1, 11, stats)
    assert got == [(1, "a"), (2, "b"), (4, "d"), (7, "g"), (3, "h"), (6, "h"), (8, "h"), (9, "i"), (10, "j")]
    assert (stats.rolled_back, stats.uncommitted, stats.open_txns) == (1, 1, {9})


def test_spans_cut_inside_a_transaction_emit_each_message_once():
    whole = sorted(_read(1, 11))
    for cut in range(1, 11):
        assert sorted(_read(1, cut) + _read(cut + 1, 11)) == whole, cut


def test_messages_without_transactions_pass_and_reading_stops_after_the_span():
    read: list[int] = []

    def messages():
        for m in CHANNEL:
            read.append(m.id)
            yield m

    assert [m.id for m in committed_only(messages(), 1)] == [1]
    assert read == [1, 2]  # one look past the span, nothing open: done
