"""Follow mode on a WAL written by Milvus 2.6 (Woodpecker, or RocksMQ holding `STREAM`-prefixed values): where a
batch may start and end so that no 2.6 transaction is split between batches. Format from Milvus v2.6.x source; not
yet verified on a running 2.6.

A transaction's messages count only once its CommitTxn is read (mqctl.mq.decode.transactions). A batch that ended
inside an open transaction would leave its messages to no batch: the one before its commit drops them as not
committed, the one after starts past them. So a batch ends before the first message of a transaction still open at
its end, and that transaction is emitted whole, at its commit, by the next batch that reaches its outcome.

One rule for every MQ that holds 2.6 messages: positions are message ids (the next one to read), and a message
belongs to a transaction when its envelope says so (`_tx`). A RocksMQ store upgraded from 2.5 holds 2.5 values
first and 2.6 values after them, so when the newest message of a range carries no 2.6 envelope, none in the range
does and no scan is needed (2.3-2.5 channels cost one read of their newest message). natsmq, which 2.6 no longer
offers, holds no transactions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mqctl.mq.model import MQSource, RawMessage

FIRST_WINDOW = 64  # messages looked at first when reading a channel backwards
NATSMQ = "natsmq"  # MQSource.mq of NATS JetStream


def newest_first(source: MQSource, channel: str, low: int, high: int) -> Iterator[RawMessage]:
    """Messages low <= id <= high, newest first, read in growing windows (ids may have gaps: RocksMQ)."""
    width = FIRST_WINDOW
    while high >= low:
        start = max(low, high - width + 1)
        yield from reversed(list(source.iter_messages(channel, start, high)))
        high, width = start - 1, width * 4


def may_hold_transactions(source: MQSource, channel: str, start: int, end: int) -> bool:
    """Whether messages start <= id < end may belong to a 2.6 transaction: the newest of them carries the 2.6
    envelope (see the module docstring)."""
    from mqctl.mq.decode.envelope import has_envelope

    if source.mq == NATSMQ or end <= start:
        return False
    for raw in newest_first(source, channel, start, end - 1):
        return has_envelope(raw.headers)
    return False


def _txn_marks(messages: Iterable[RawMessage]) -> Iterator[tuple[int, int, int | None]]:
    """(message id, transaction id, MessageType number) of every message that belongs to a transaction."""
    from mqctl.mq.decode.envelope import has_envelope, read_envelope

    for raw in messages:
        if not has_envelope(raw.headers):
            continue
        envelope = read_envelope(raw.headers)
        if envelope.in_txn and envelope.txn_id is not None:
            yield raw.id, envelope.txn_id, envelope.type_number


def _track(opened: dict[int, int], message_id: int, txn: int, number: int | None) -> None:
    """Transactions still open (-> their first message seen) after one more of their messages."""
    from mqctl.mq.decode.transactions import COMMIT, ROLLBACK

    if number in (COMMIT, ROLLBACK):
        opened.pop(txn, None)
    else:
        opened.setdefault(txn, message_id)


def transaction_safe_end(source: MQSource, channel: str, start: int, end: int, limit: int | None = None) -> int:
    """The end of a batch start..end (exclusive) moved back before the first message of any transaction still open
    at `end` (its BeginTxn, or its first message in the range), so a transaction is emitted whole, at its commit,
    by exactly one batch, and none is read before its outcome is stored. When that leaves the batch empty, the
    end moves forward instead, up to `limit` (what is visible; None: the channel's end), to where every transaction
    begun in it has ended (a batch may then exceed maxMessagesPerTrigger), or stays at `start` while the outcome
    is not visible yet."""
    if end <= start or not may_hold_transactions(source, channel, start, end):
        return end
    opened: dict[int, int] = {}  # transaction -> its first message in the range
    for message_id, txn, number in _txn_marks(source.iter_messages(channel, start, end - 1)):
        _track(opened, message_id, txn, number)
    if not opened:
        return end
    hold = min(opened.values())
    if hold > start:
        return hold
    if limit is not None and limit <= end:
        return start
    later = source.iter_messages(channel, end, limit - 1 if limit is not None else None)
    for message_id, txn, number in _txn_marks(later):
        _track(opened, message_id, txn, number)
        if not opened:
            return message_id + 1
    return start


def transaction_safe_start(source: MQSource, channel: str, position: int) -> int:
    """A query starting at `latest`: the position after the last message, moved back before the first message of a
    transaction still open there, so that transaction is emitted whole once it commits."""
    bounds = source.id_range(channel) if source.mq != NATSMQ else None
    if bounds is None or position <= bounds[0] or not may_hold_transactions(source, channel, bounds[0], position):
        return position
    opened: dict[int, int] = {}
    for message_id, txn, number in _txn_marks(source.iter_messages(channel, bounds[0], position - 1)):
        _track(opened, message_id, txn, number)
    return min(opened.values(), default=position)
