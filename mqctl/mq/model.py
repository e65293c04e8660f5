"""The shapes every MQ source shares, so channels, retention, migrate and replay read RocksMQ, NATS JetStream,
Woodpecker and Kafka through one interface."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from mqctl.errors import PreconditionError

NANOS = 1_000_000_000  # JetStream keeps times and ages in nanoseconds

if TYPE_CHECKING:
    from mqctl.mq.retention_model import ConfiguredRetention, RetentionReport


@dataclass
class ChannelInfo:
    """One physical channel (RocksMQ topic / JetStream stream / Woodpecker log)."""

    name: str
    messages: int
    bytes: int | None  # None: the MQ does not say without reading every message (Kafka's Python admin API)
    first_id: int | None = None  # RocksMQ message id, JetStream sequence, Woodpecker segment * 10**10 + entry
    last_id: int | None = None
    first_time: dt.datetime | None = None  # from the Milvus TSO inside the message, UTC
    last_time: dt.datetime | None = None
    consumers: int | None = None  # NATS consumers; Kafka consumer groups with offsets on the topic


@dataclass
class RawMessage:
    """One message as stored: its id/sequence, payload and (NATS) headers."""

    channel: str
    id: int
    data: bytes
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class ChannelBounds:
    """Where a channel's stored ids start and end, and the age limit the MQ itself keeps for it."""

    first: int | None  # first stored id (NATS: the next sequence when the stream is empty)
    last: int | None  # None: nothing stored
    max_age_seconds: float | None = None  # None: no per-channel limit (RocksMQ's retention is in the config)


@dataclass
class PageRow:
    """One closed RocksMQ page, as `channels show` lists it."""

    end_id: int
    size: int
    closed_at: dt.datetime | None
    acked_at: dt.datetime | None
    acked: bool


@dataclass
class WalSegment:
    """One Woodpecker segment of a log, as `channels show` lists it."""

    segment: int
    layout: str  # local | object
    state: str  # finalized | active | fenced | corrupt
    blocks: int
    entries: int
    first_entry: int | None
    last_entry: int | None
    footer_version: int | None
    lac: int | None


@dataclass
class ChannelExtras:
    """What only one MQ knows about a channel: RocksMQ's creation time and pages, JetStream's stream,
    Woodpecker's segments, or Kafka's topic."""

    created_at: dt.datetime | None = None  # RocksMQ topic creation
    open_page_size: int | None = None  # RocksMQ: bytes in the page still being written
    pages: list[PageRow] | None = None  # RocksMQ closed pages
    stream: dict[str, Any] | None = None  # JetStream config and state
    segments: list[WalSegment] | None = None  # Woodpecker segments of the log
    topic: dict[str, Any] | None = None  # Kafka: partitions and their offsets, watched configs, consumer groups


class MQSource(Protocol):
    """A read-only view of one MQ. Implementations never write to Milvus's data.

    What differs between the MQs is asked of the source, never told by its class: the capability
    attributes say what it can do, and the methods below answer in each MQ's own terms."""

    description: str  # e.g. "rocksmq:/var/lib/milvus/rdb_data" or "nats://127.0.0.1:4222"
    mq: ClassVar[str]  # its name in mqctl.backends.BACKENDS
    supports_store_times: ClassVar[bool]  # list_channels(message_times=False) takes times from the store
    sequential_ids: ClassVar[bool]  # ids are contiguous (NATS sequences), so gaps can be counted

    def list_channels(self, *, message_times: bool = True) -> list[ChannelInfo]: ...

    def iter_messages(
        self, channel: str, start_id: int | None = None, end_id: int | None = None
    ) -> Generator[RawMessage, None, None]:
        """Messages with start_id <= id <= end_id (both optional), in id order; close() ends a read early."""
        ...

    def id_range(self, channel: str) -> tuple[int, int] | None:
        """(first_id, last_id) of a channel, or None when it is empty; cheap (no value reads)."""
        ...

    def channel_bounds(self, names: set[str]) -> dict[str, ChannelBounds]:
        """Bounds of those of `names` the MQ knows (also channels whose messages are all gone)."""
        ...

    def channel_extras(self, name: str) -> ChannelExtras:
        """What only this MQ knows about one channel (`channels show`)."""
        ...

    def store_identity(self) -> str | None:
        """What tells this local store from another at the same path (None: a server, its URL names it)."""
        ...

    def data_warnings(self) -> list[tuple[str | None, str]]:
        """(channel or None, warning) where the stored data and its metadata disagree."""
        ...

    def retention_report(self, configured: ConfiguredRetention, now: dt.datetime) -> RetentionReport:
        """Configured vs actual retention of every channel, by this MQ's own retention rules."""
        ...

    def close(self) -> None: ...


def path_is_dir(path: Path) -> bool:
    return _path_is(path, Path.is_dir)


def path_is_file(path: Path) -> bool:
    return _path_is(path, Path.is_file)


def _path_is(path: Path, test: Callable[[Path], bool]) -> bool:
    """Path.is_dir/is_file, but a folder this user may not look into is one clear error (exit 3), not a traceback."""
    try:
        return test(path)
    except OSError as err:
        raise PreconditionError(
            f"cannot read {path}: {err.strerror}",
            hint="run mqctl as a user that can read Milvus's data (its own user, or sudo)",
        ) from None


def grouped_diff(rows: list[tuple[str, str, str]], kind: str, wanted_label: str) -> str:
    """A unified diff per named object (a stream's limits, a topic's configs): `rows` are (name, line now,
    line wanted) in order; the headers read `<kind> <name> (now)` and `<kind> <name> (<wanted_label>)`."""
    import difflib

    by_name: dict[str, list[tuple[str, str]]] = {}
    for name, before, after in rows:
        by_name.setdefault(name, []).append((f"{before}\n", f"{after}\n"))
    text: list[str] = []
    for name, lines in by_name.items():
        text += difflib.unified_diff(
            [b for b, _ in lines], [a for _, a in lines], f"{kind} {name} (now)", f"{kind} {name} ({wanted_label})"
        )
    return "".join(text)
