"""Fast reads over one JetStream connection: the Milvus time of many messages in one round trip, and a
range of messages through an ephemeral pull consumer. Both publish requests by hand on a private inbox
instead of nats-py's per-request tasks, futures and metadata objects.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import json
from typing import TYPE_CHECKING

from mqctl.errors import PreconditionError
from mqctl.mq.model import RawMessage
from mqctl.mq.nats.model import StreamSource

if TYPE_CHECKING:
    from nats.aio.msg import Msg
    from nats.aio.subscription import Subscription


from mqctl.mq.model import NANOS

CONSUMER_IDLE_SECONDS = 30.0  # the server deletes a forgotten ephemeral consumer after this


async def read_message_times(source: StreamSource, wanted: list[tuple[str, int]]) -> list[dt.datetime | None]:
    """The Milvus time of each (stream, sequence) message, None when it is gone. Every
    STREAM.MSG.GET is published at once on one reply subscription and answers are matched by
    their reply subject: no task, future or timer per request, one round trip in all."""
    from google.protobuf.message import DecodeError

    from mqctl.milvus.protos import pb2
    from mqctl.mq.decode.tso import tso_to_datetime

    header = pb2("common_pb2").MsgHeader()  # the TSO is all that is needed: no full decode
    times: list[dt.datetime | None] = [None] * len(wanted)
    if not wanted:
        return times
    left, done, inbox = len(wanted), asyncio.Event(), source.nc.new_inbox()

    async def on_answer(msg: Msg) -> None:
        nonlocal left
        message = json.loads(msg.data).get("message")  # absent with error 10037: no message found
        with contextlib.suppress(DecodeError):
            if message:
                header.ParseFromString(base64.b64decode(message.get("data") or ""))
                times[int(msg.subject.rpartition(".")[2])] = tso_to_datetime(header.base.timestamp)
        left -= 1
        if not left:
            done.set()

    sub = await source.nc.subscribe(f"{inbox}.*", cb=on_answer, pending_bytes_limit=0)
    try:
        for index, (stream, seq) in enumerate(wanted):
            await source.nc.publish(
                f"$JS.API.STREAM.MSG.GET.{stream}", json.dumps({"seq": seq}).encode(), reply=f"{inbox}.{index}"
            )
        try:
            await asyncio.wait_for(done.wait(), source.timeout)
        except asyncio.TimeoutError:
            raise PreconditionError(
                f"{source.description}: {left} of {len(wanted)} message reads got no answer within {source.timeout:g}s",
                hint="retry, or raise --timeout",
            ) from None
    finally:
        await sub.unsubscribe()
    return times


def sequence_and_pending(reply: str) -> tuple[int, int]:
    """The stream sequence of a delivered message and the count still pending, from its reply subject:
    $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<ts>.<pending>, or since
    nats-server 2.9 $JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<delivered>.<stream seq>...<pending>.<token>."""
    tokens = reply.split(".")
    at = 5 if len(tokens) == 9 else 7
    return int(tokens[at]), int(tokens[at + 3])


class PullReader:
    """An ephemeral consumer (ack_policy none) read through a plain subscription on a private inbox.

    nats-py's pull_subscribe/fetch starts a task per message and builds metadata objects; here pull
    requests are published by hand, the stream sequence and the pending count come straight from
    the reply subject, and messages are handed over in batches, one event-loop run per batch."""

    def __init__(self, source: StreamSource, stream: str, last: int, batch: int) -> None:
        self._source, self._nc = source, source.nc
        self.stream, self.last, self.batch = stream, last, batch
        self.done = False
        self.consumer: str | None = None
        self._sub: Subscription | None = None
        self._inbox = ""
        self._received: list[RawMessage] = []
        self._due = 0  # messages the current pull request still owes
        self._ready = asyncio.Event()

    async def open(self, first: int) -> None:
        self._inbox = self._nc.new_inbox()
        self._sub = await self._nc.subscribe(self._inbox, cb=self._on_message, pending_bytes_limit=0)
        config = {
            "deliver_policy": "by_start_sequence",
            "opt_start_seq": first,
            "ack_policy": "none",
            "replay_policy": "instant",
            "inactive_threshold": int(CONSUMER_IDLE_SECONDS * NANOS),
            "mem_storage": True,
            "description": "mqctl read-only reader",
        }
        created = await self._source.api(
            f"CONSUMER.CREATE.{self.stream}", {"stream_name": self.stream, "config": config}
        )
        self.consumer = created["name"]
        await self._pull()

    async def _pull(self) -> None:
        self._due = self.batch
        request = {"batch": self.batch, "expires": int(self._source.timeout * NANOS)}
        await self._nc.publish(
            f"$JS.API.CONSUMER.MSG.NEXT.{self.stream}.{self.consumer}", json.dumps(request).encode(), reply=self._inbox
        )

    async def _on_message(self, msg: Msg) -> None:
        if self.done:
            return
        if not msg.reply.startswith("$JS.ACK."):  # a status: 408 request expired, 404/409 nothing more to read
            if (msg.headers or {}).get("Status") != "100":  # 100 = heartbeat
                self._finish()
            return
        seq, pending = sequence_and_pending(msg.reply)
        if seq > self.last:
            self._finish()
            return
        self._received.append(
            RawMessage(
                channel=self.stream, id=seq, data=msg.data or b"", headers=dict(msg.headers) if msg.headers else {}
            )
        )
        self._due -= 1
        if seq == self.last or pending == 0:
            self._finish()
            return
        if self._due == 0:
            await self._pull()  # the next batch travels while this one is being processed
        if len(self._received) >= self.batch:
            self._ready.set()

    def _finish(self) -> None:
        self.done = True
        self._ready.set()

    async def next_batch(self) -> list[RawMessage] | None:
        """The messages received so far: at least a batch unless the read is done; None once the read is
        done and all was handed over (messages may arrive, and end the read, after a batch was taken)."""
        if len(self._received) < self.batch and not self.done:
            self._ready.clear()
            await self._ready.wait()
        if self.done and not self._received:
            return None
        received, self._received = self._received, []
        return received

    async def close(self) -> None:
        """Stop listening and delete the consumer (it would also expire by itself)."""
        self.done = True
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
        if self.consumer is not None:
            with contextlib.suppress(Exception):
                await self._source.api(f"CONSUMER.DELETE.{self.stream}.{self.consumer}")
