"""Milvus 2.6 transactions in a channel, as a consumer sees them: a message carrying `_tx` counts only once the
CommitTxn of its transaction follows, and then at the commit's time tick; a rolled-back or never committed
transaction's messages are left out. Format from Milvus v2.6.x source; not yet verified on a running 2.6.

milvus pkg/proto/messages.proto (stored commit 003b114b9ebd): BeginTxn "once a begin transaction message is
received, all messages combined with the transaction message cannot be consumed until a CommitTxn message is
received"; RollbackTxn "all messages combined with the transaction message can be discarded"; TxnMessageBody "All
message in a transaction message only has same timetick which is equal to the CommitTransationMessage". Every
message of a transaction carries `_tx` (base64 of `TxnContext`, message_impl.go `WithTxnContext`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field

from mqctl.mq.decode.envelope import has_envelope, in_transaction, read_envelope
from mqctl.mq.model import RawMessage

BEGIN, COMMIT, ROLLBACK = 900, 901, 902


@dataclass
class TxnStats:
    """What the filter held back: messages of transactions rolled back, or not committed in what was read."""

    rolled_back: int = 0
    uncommitted: int = 0
    open_txns: set[int] = field(default_factory=set)


def committed_only(messages: Iterator[RawMessage], last: int, stats: TxnStats | None = None) -> Iterator[RawMessage]:
    """The messages up to id `last` of one channel with transactions resolved. `messages` reads the channel from the
    span's first id on, to its end if need be: past `last` only the outcome of a transaction still open is looked
    for (and reading stops as soon as none is), so each message is emitted by exactly one of the spans a channel is
    cut into. A transaction's messages are emitted at its CommitTxn, with the commit's time tick; markers (BeginTxn,
    CommitTxn, RollbackTxn) pass as they are."""
    stats = stats if stats is not None else TxnStats()
    pending: dict[int, list[RawMessage]] = {}
    for raw in messages:
        beyond = raw.id > last
        if beyond and not pending:
            return
        headers = raw.headers
        if not in_transaction(headers):
            if not beyond:
                yield raw
            continue
        envelope = read_envelope(headers) if has_envelope(headers) else None
        txn = envelope.txn_id if envelope is not None and envelope.in_txn else None
        if txn is None:
            if not beyond:
                yield raw
            continue
        number = envelope.type_number if envelope is not None else None
        if number == COMMIT:
            tick = raw.headers.get("_tt")
            for held in pending.pop(txn, []):
                yield dataclasses.replace(held, headers={**held.headers, "_tt": tick}) if tick else held
            if not beyond:
                yield raw
        elif number == ROLLBACK:
            stats.rolled_back += len(pending.pop(txn, []))
            if not beyond:
                yield raw
        elif number == BEGIN:
            if not beyond:
                pending.setdefault(txn, [])
                yield raw
        elif not beyond:
            pending.setdefault(txn, []).append(raw)
    stats.uncommitted += sum(len(held) for held in pending.values())
    stats.open_txns |= set(pending)
