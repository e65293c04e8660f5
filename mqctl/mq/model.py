"""The shapes every MQ source shares, so channels, retention, migrate and replay read RocksMQ
and NATS JetStream through one interface."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from mqctl.errors import PreconditionError


@dataclass
class ChannelInfo:
    """One physical channel (RocksMQ topic / JetStream stream)."""

    name: str
    messages: int
    bytes: int
    first_id: int | None = None  # RocksMQ message id or JetStream sequence
    last_id: int | None = None
    first_time: dt.datetime | None = None  # from the Milvus TSO inside the message, UTC
    last_time: dt.datetime | None = None
    consumers: int | None = None  # NATS only


@dataclass
class RawMessage:
    """One message as stored: its id/sequence, payload and (NATS) headers."""

    channel: str
    id: int
    data: bytes
    headers: dict[str, str] = field(default_factory=dict)


class MQSource(Protocol):
    """A read-only view of one MQ. Implementations never write to Milvus's data."""

    description: str  # e.g. "rocksmq:/var/lib/milvus/rdb_data" or "nats://127.0.0.1:4222"

    def list_channels(self) -> list[ChannelInfo]: ...

    def iter_messages(
        self, channel: str, start_id: int | None = None, end_id: int | None = None
    ) -> Iterator[RawMessage]:
        """Messages with start_id <= id <= end_id (both optional), in id order."""
        ...

    def id_range(self, channel: str) -> tuple[int, int] | None:
        """(first_id, last_id) of a channel, or None when it is empty; cheap (no value reads)."""
        ...

    def close(self) -> None: ...


def path_is_dir(path: Path) -> bool:
    return _path_is(path, Path.is_dir)


def path_is_file(path: Path) -> bool:
    return _path_is(path, Path.is_file)


def _path_is(path: Path, test) -> bool:
    """Path.is_dir/is_file, but a folder this user may not look into is one clear error (exit 3), not a traceback."""
    try:
        return test(path)
    except OSError as err:
        raise PreconditionError(
            f"cannot read {path}: {err.strerror}",
            hint="run mqctl as a user that can read Milvus's data (its own user, or sudo)",
        ) from None
