"""The shapes the NATS package shares, at its bottom: a stream's details as the server reports them, and the part of
a live JetStream source that the readers, the store check and retention use. The client fills and implements them;
nothing here imports the client, so none of those modules imports it for a type."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from nats.aio.client import Client

    from mqctl.mq.model import ChannelInfo

Json = dict[str, Any]  # a JetStream API request or answer


@dataclass
class StreamDetails:
    """A stream's limits (as stored: age in seconds, 0 or -1 = unlimited) and state."""

    name: str
    subjects: list[str]
    max_age_seconds: float
    max_bytes: int
    max_msgs: int
    storage: str
    retention: str
    discard: str
    replicas: int
    messages: int
    bytes: int
    first_seq: int
    last_seq: int
    consumers: int
    first_time: dt.datetime | None = None  # when the server stored the oldest message
    duplicate_window_seconds: float = 0.0  # JetStream refuses one longer than max_age (error 10052)


class StreamSource(Protocol):
    """A connected JetStream source (client.JetStreamSource is the one), as reads and retention use it."""

    description: str
    timeout: float

    @property
    def mq(self) -> str: ...

    @property
    def nc(self) -> Client: ...

    async def api(self, subject: str, payload: Json | None = None) -> Json: ...

    def stream_details(self) -> list[StreamDetails]: ...

    def stream_config(self, name: str) -> Json: ...

    def list_channels(self, *, message_times: bool = True) -> list[ChannelInfo]: ...
