"""Positions of a followed channel, on the driver's side and in the stream reader (stream.py): how far a channel
is visible (up to its last time tick on a Milvus DML channel, its last message elsewhere), which stored messages lie
between two positions and how many, the cap of one batch shared by backlog, and how far each channel is behind
(`channel_lags`, for follow mode's progress). No pyspark here."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mqctl.replay.reader.open_transactions import newest_first

if TYPE_CHECKING:
    from mqctl.mq.model import MQSource, RawMessage

TIME_TICK = 1200
WOODPECKER = "woodpecker"  # MQSource.mq of a Woodpecker WAL
DML_CHANNEL_MARK = "rootcoord-dml_"  # Milvus's DML pchannels: <prefix>-rootcoord-dml_N, time-ticked


def is_time_ticked(channel: str) -> bool:
    """Milvus sends time ticks on its DML channels; other channels (the replicate channel) never get one."""
    return DML_CHANNEL_MARK in channel


def _header(raw: RawMessage) -> tuple[int | None, int | None]:
    """(message type code, TSO) from the message header only (a 2.6 message: from its envelope)."""
    from google.protobuf.message import DecodeError

    from mqctl.milvus.protos import pb2
    from mqctl.mq.decode.envelope import has_envelope, read_envelope

    if has_envelope(raw.headers):
        envelope = read_envelope(raw.headers)
        return (TIME_TICK if envelope.type_number == 1 else None), envelope.time_tick  # messages.proto TimeTick = 1

    header = pb2("common_pb2").MsgHeader()
    try:
        header.ParseFromString(raw.data)
    except DecodeError:
        return None, None
    return header.base.msg_type, header.base.timestamp or None


def visible_end(source: MQSource, channel: str, start: int, last: int) -> int:
    """The position after the channel's last time tick in start..last (start when none): what may be
    emitted. Channels without time ticks, and a Woodpecker log (see woodpecker_end), are visible up to their last
    message."""
    if not is_time_ticked(channel) or source.mq == WOODPECKER:
        return max(start, last + 1)
    for raw in newest_first(source, channel, start, last):
        if _header(raw)[0] == TIME_TICK:
            return raw.id + 1
    return start


def message_ids(source: MQSource, channel: str, start: int, end: int) -> Iterator[int]:
    """Ids of the stored messages start <= id < end, in order, without their payloads where the MQ allows."""
    if end <= start:
        return
    if source.sequential_ids:
        bounds = source.id_range(channel)
        if bounds is not None:
            yield from range(max(start, bounds[0]), min(end - 1, bounds[1]) + 1)
        return
    ids = getattr(source, "iter_ids", None)
    if ids is not None:
        yield from ids(channel, start, end - 1)
        return
    for raw in source.iter_messages(channel, start, end - 1):
        yield raw.id


def count_messages(source: MQSource, channel: str, start: int, end: int) -> int:
    """Stored messages with start <= id < end."""
    if source.sequential_ids:
        bounds = source.id_range(channel)
        if bounds is None or end <= start:
            return 0
        return max(0, min(end - 1, bounds[1]) - max(start, bounds[0]) + 1)
    return sum(1 for _ in message_ids(source, channel, start, end))


def end_after(source: MQSource, channel: str, start: int, end: int, messages: int) -> int:
    """The position after the first `messages` stored messages at or after start (at most end)."""
    if messages <= 0:
        return start
    if source.sequential_ids:
        bounds = source.id_range(channel)
        first = max(start, bounds[0]) if bounds else start
        return min(end, first + messages)
    for n, message_id in enumerate(message_ids(source, channel, start, end), 1):
        if n == messages:
            return message_id + 1
    return end


def share(backlogs: dict[str, int], cap: int) -> dict[str, int]:
    """Messages each channel may read in one batch: `cap` shared by backlog (largest remainder, in name
    order on ties), never more than a channel's backlog."""
    total = sum(backlogs.values())
    if total <= cap:
        return dict(backlogs)
    quotas = {name: cap * backlog / total for name, backlog in backlogs.items()}
    granted = {name: int(quota) for name, quota in quotas.items()}
    for name in sorted(quotas, key=lambda n: (granted[n] - quotas[n], n))[: cap - sum(granted.values())]:
        granted[name] += 1
    return granted


# -------------------------------------------------------------------------------- lag (driver side)
@dataclass
class ChannelLag:
    channel: str
    position: int  # the query's position after the batch
    behind: int  # stored messages at or after it
    seconds: float | None  # now minus the time of the newest message before the position


def channel_lags(source: MQSource, positions: dict[str, int], now_ms: int) -> list[ChannelLag]:
    """How far each channel of a query is behind the MQ: in messages, and in seconds of Milvus time."""
    from mqctl.mq.decode.messages import TSO_LOGICAL_BITS

    lags = []
    for name, position in sorted(positions.items()):
        bounds = source.id_range(name)
        if bounds is None:
            lags.append(ChannelLag(name, position, 0, None))
            continue
        behind = count_messages(source, name, position, bounds[1] + 1)
        seconds = None
        if position > bounds[0]:
            for raw in newest_first(source, name, bounds[0], min(position - 1, bounds[1])):
                tso = _header(raw)[1]
                if tso:
                    seconds = max(0.0, (now_ms - (tso >> TSO_LOGICAL_BITS)) / 1000)
                    break
        lags.append(ChannelLag(name, position, behind, seconds))
    return lags
