"""What `mqctl channels list` reports: channel lists, and finding one channel by name. One channel in depth and its
decoded messages (`show`, `peek`) are in mqctl.mq.channel_detail, which a listing does not import."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from mqctl.errors import InputError
from mqctl.mq.model import ChannelInfo, MQSource


@dataclass
class ChannelTotals:
    channels: int
    messages: int
    bytes: int | None  # None when a channel's bytes are not known (Kafka)


@dataclass
class ChannelList:
    source: str
    channels: list[ChannelInfo]
    totals: ChannelTotals
    warnings: list[str] = field(default_factory=list)  # data and metadata disagree (see data_warnings)


@dataclass
class WoodpeckerChannelList(ChannelList):
    """A Woodpecker WAL's channels, with how they were read: "footers" (each finalized segment's footer and index,
    and the blocks holding each log's first and last entry: entries and ids exact, bytes not known, corruption
    inside a data block not seen) or "verified" (every object read and CRC-checked, bytes the payloads' sum)."""

    read: str = "footers"


def data_warnings(source: MQSource, channel: str | None = None) -> list[str]:
    """Where the stored data and its metadata disagree (a deleted WAL, a corrupt block, a stream folder the
    server did not load): such numbers are not what the MQ holds. Only those of `channel` and the
    source-wide ones when a channel is given; none for a live server (it checks its own store)."""
    return [message for name, message in source.data_warnings() if channel is None or name in (None, channel)]


def list_channels(source: MQSource, *, store_times: bool = False, verify: bool = False) -> ChannelList:
    """All channels; `store_times` (NATS only) takes first/last times from the server's store timestamps
    instead of the Milvus TSO inside the first and last message (saves two reads per stream); `verify`
    (Woodpecker only) reads every object and checks every CRC instead of trusting finalized segments' footers."""
    if store_times and not source.supports_store_times:
        raise InputError(
            "--store-times applies to NATS sources only",
            hint="RocksMQ keeps no store time per message; drop --store-times",
        )
    woodpecker = source.mq == "woodpecker"
    if verify and not woodpecker:
        raise InputError(
            "--verify applies to Woodpecker sources only",
            hint="RocksMQ and NATS stores are read message by message already; drop --verify",
        )
    read = None
    if woodpecker:
        from mqctl.mq.woodpecker.source import WoodpeckerSource

        logs = cast(WoodpeckerSource, source)
        logs.verify = logs.verify or verify
        read = logs.read_kind
    channels = source.list_channels(message_times=not store_times)
    totals = ChannelTotals(
        len(channels),
        sum(c.messages for c in channels),
        None if any(c.bytes is None for c in channels) else sum(c.bytes or 0 for c in channels),
    )
    if read is not None:
        return WoodpeckerChannelList(source.description, channels, totals, data_warnings(source), read)
    return ChannelList(source.description, channels, totals, data_warnings(source))


def find_channel(source: MQSource, name: str) -> ChannelInfo:
    channels = source.list_channels()
    for channel in channels:
        if channel.name == name:
            return channel
    raise _no_channel(source, name, [c.name for c in channels])


def require_channel(source: MQSource, name: str) -> None:
    """The channel exists (else exit 2 naming the known ones). A Woodpecker WAL answers from its listing, without
    reading any segment: a peek then reads only the segments it shows (from --from on)."""
    if source.mq != "woodpecker":
        find_channel(source, name)
        return

    from mqctl.mq.woodpecker.source import WoodpeckerSource

    names = cast(WoodpeckerSource, source).channel_names()
    if name not in names:
        raise _no_channel(source, name, names)


def _no_channel(source: MQSource, name: str, known: list[str]) -> InputError:
    return InputError(
        f"no channel {name!r} in {source.description}", hint=f"known channels: {', '.join(known) or 'none'}"
    )
