"""NATS JetStream client (Milvus `natsmq`): a live server, or the private `nats-server` of server.py
over a store.

Milvus's embedded NATS has no monitoring port, so everything goes through the JetStream API.
The facade is synchronous over nats-py's asyncio. Messages are read with ephemeral pull
consumers (`ack_policy: none`, removed afterwards; see reads.py), so reading never moves
anything Milvus relies on.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
from collections.abc import Awaitable, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from mqctl import interrupts
from mqctl.backends import BACKENDS
from mqctl.errors import InputError, PreconditionError
from mqctl.mq.model import NANOS, ChannelBounds, ChannelExtras, ChannelInfo, RawMessage
from mqctl.mq.nats.connect import check_file, check_timeout, public_url, quiet_tls_close, require_nkeys, tls_context
from mqctl.mq.nats.model import Json, StreamDetails
from mqctl.mq.nats.reads import PullReader, read_message_times

if TYPE_CHECKING:
    from nats.aio.client import Client

    from mqctl.mq.retention_model import ConfiguredRetention, RetentionReport

READ_BATCH = 2000  # messages per pull request
READ_BATCH_BYTES = 32 * 1024 * 1024  # a batch of large messages is smaller
UNLIMITED = -1
STREAM_NOT_FOUND = 10059  # JetStream err_code

T = TypeVar("T")


def _url_credentials(
    url: str, user: str | None, password: str | None, token: str | None
) -> tuple[str, str | None, str | None, str | None]:
    """(the server URL without user:password@, user, password, token): credentials written into the URL (%-encoded,
    the password up to the last `@`, so one holding `@`, `:` or `/` works) are passed apart, as nats-py would read
    `nats://user:password@` and `nats://token@`; --user/--password/--token win over them."""
    from urllib.parse import unquote

    from mqctl.urls import split_url

    parts, url_user, url_password = split_url(url, "--nats")
    if url_user is None:
        return url, user, password, token
    if url_password is None:
        return parts.geturl(), user, password, token or unquote(url_user)
    return parts.geturl(), user or unquote(url_user), password or unquote(url_password), token


class JetStreamSource:
    """An MQSource over a live NATS JetStream server."""

    mq: ClassVar[str] = BACKENDS["natsmq"].name
    supports_store_times: ClassVar[bool] = True  # the server keeps each message's store time
    sequential_ids: ClassVar[bool] = True  # stream sequences

    def __init__(
        self,
        url: str,
        *,
        user: str | None = None,
        password: str | None = None,
        token: str | None = None,
        creds: str | None = None,
        nkey: str | None = None,
        tls_ca: str | None = None,
        tls_cert: str | None = None,
        tls_key: str | None = None,
        timeout: float = 5.0,
    ):
        self.url = url if "://" in url else f"nats://{url}"
        self.description = public_url(self.url)
        server, user, password, token = _url_credentials(self.url, user, password, token)
        self.store: Path | None = None  # the natsmq store a private server serves (a copy of it), if any
        self.timeout = check_timeout(timeout)
        require_nkeys(creds, nkey)
        options: dict[str, Any] = {
            "servers": [server],
            "connect_timeout": timeout,
            "allow_reconnect": False,
            "max_reconnect_attempts": 1,
            "reconnect_time_wait": 0.2,  # 0 would retry the first connect forever
            "user": user,
            "password": password,
            "token": token,
            "user_credentials": check_file(creds, "--creds"),
            "nkeys_seed": check_file(nkey, "--nkey"),
            "tls": tls_context(
                check_file(tls_ca, "--tls-ca"), check_file(tls_cert, "--tls-cert"), check_file(tls_key, "--tls-key")
            ),
            "error_cb": self._remember_error,
            "disconnected_cb": self._ignore,
            "closed_cb": self._ignore,
        }
        self._last_error: Exception | None = None
        self._nc: Client | None = None
        # asyncio logs "returning true from eof_received() has no effect when using ssl" when a TLS server
        # closes; it is noise on a command's stderr
        logging.getLogger("asyncio").addFilter(quiet_tls_close)
        self._loop = asyncio.new_event_loop()
        try:
            self._nc = self._run(self._connect({k: v for k, v in options.items() if v is not None}))
            self._js = self.nc.jetstream(timeout=timeout)
            self._run(self.api("INFO"))
        except PreconditionError:
            self.close()
            raise
        except Exception as err:
            self.close()
            raise PreconditionError(
                f"{self.description}: JetStream is not available: {type(err).__name__} {err}".strip(),
                hint="Milvus's NATS enables JetStream; check the URL",
            ) from err
        except BaseException:  # interrupted: leave no connection or loop behind
            self.close()
            raise

    @staticmethod
    async def _ignore(*_args: object) -> None:
        """nats-py prints connection errors itself unless given callbacks; mqctl reports them once."""

    async def _remember_error(self, err: Exception) -> None:
        self._last_error = err

    async def _connect(self, options: dict[str, Any]) -> Client:
        import nats

        nc: Client | None = None
        try:
            nc = await nats.connect(**options)
        except Exception as err:
            self._last_error = self._last_error or err
        if nc is not None and nc.is_connected:
            return nc
        last = self._last_error
        reason = (str(last) or type(last).__name__) if last else "connection refused or closed"
        raise PreconditionError(
            f"cannot connect to NATS at {self.description}: {reason}",
            hint="check --nats URL, credentials and TLS options; Milvus's embedded NATS listens "
            "on 127.0.0.1:natsmq.server.port",
        )

    @property
    def nc(self) -> Client:
        """The open connection (reads after close() are a programming error)."""
        if self._nc is None:
            raise PreconditionError(f"{self.description}: the connection is closed")
        return self._nc

    def _run(self, coro: Awaitable[T]) -> T:
        return interrupts.run_until_complete(self._loop, asyncio.wait_for(coro, self.timeout * 4))

    def __enter__(self) -> JetStreamSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        nc = getattr(self, "_nc", None)
        if nc is not None and not nc.is_closed:
            with contextlib.suppress(Exception):
                interrupts.run_until_complete(self._loop, asyncio.wait_for(nc.close(), self.timeout))
        self._nc = None
        if not self._loop.is_closed():
            self._loop.close()

    # streams ----------------------------------------------------------------------
    async def api(self, subject: str, payload: Json | None = None) -> Json:
        """One JetStream API request as plain JSON (nats-py's dataclasses drop fields such as first_ts)."""
        reply = await self.nc.request(f"$JS.API.{subject}", json.dumps(payload or {}).encode(), timeout=self.timeout)
        answer: Json = json.loads(reply.data)
        error = answer.get("error")
        if error and error.get("err_code") == STREAM_NOT_FOUND:
            raise InputError(
                f"no stream named {subject.rpartition('.')[2]!r} on {self.description}",
                hint="run `mqctl channels list` to see the streams",
            )
        if error:
            raise PreconditionError(
                f"{self.description}: {subject} failed: {error.get('description')} "
                f"(JetStream error {error.get('err_code')})"
            )
        return answer

    async def _stream_list(self) -> list[Json]:
        streams: list[Json] = []
        while True:
            page = await self.api("STREAM.LIST", {"offset": len(streams)})
            streams += page.get("streams") or []
            if not page.get("streams") or len(streams) >= page.get("total", 0):
                return streams

    async def _stream_info(self, name: str) -> Json:
        if not name or any(ch in name for ch in " .*>"):
            raise InputError(
                f"{name!r} is not a valid stream name", hint="run `mqctl channels list` to see the streams"
            )
        return await self.api(f"STREAM.INFO.{name}")

    def stream_details(self) -> list[StreamDetails]:
        """Every stream's limits and state (one API call per 256 streams)."""
        from mqctl.sorting import natural_key

        return sorted(map(_details, self._run(self._stream_list())), key=lambda d: natural_key(d.name))

    def stream(self, name: str) -> StreamDetails:
        return _details(self._run(self._stream_info(name)))

    def stream_config(self, name: str) -> Json:
        """A stream's whole config as the server holds it (the JetStream API's JSON)."""
        config: Json = self._run(self._stream_info(name))["config"]
        return config

    def update_config(self, name: str, config: Json) -> StreamDetails:
        """Replace a stream's config (STREAM.UPDATE takes the whole config, not a patch)."""
        return _details(self._run(self.api(f"STREAM.UPDATE.{name}", config)))

    def data_warnings(self) -> list[tuple[str | None, str]]:
        """(stream, warning) where the store's files disagree with what the server recovered from them: a stream
        folder it did not load, a corrupt block, fewer messages than the blocks hold, messages gone that no limit
        removes (--nats-store only)."""
        if self.store is None:
            return []
        from mqctl.mq.nats.server import store_root
        from mqctl.mq.nats.store import disagreements

        return disagreements(store_root(self.store), {d.name: d for d in self.stream_details()})

    # MQSource -----------------------------------------------------------------------------
    async def _channels(self, message_times: bool) -> list[ChannelInfo]:
        streams = await self._stream_list()
        ends = (
            [
                (stream["config"]["name"], stream["state"][end])
                for stream in streams
                if stream["state"]["messages"]
                for end in ("first_seq", "last_seq")
            ]
            if message_times
            else []
        )
        times = iter(await read_message_times(self, ends))
        channels = []
        for stream in streams:
            state, empty = stream["state"], not stream["state"]["messages"]
            if empty:
                first_time = last_time = None
            elif message_times:
                first_time, last_time = next(times), next(times)
            else:
                first_time, last_time = _nats_time(state.get("first_ts")), _nats_time(state.get("last_ts"))
            channels.append(
                ChannelInfo(
                    name=stream["config"]["name"],
                    messages=state["messages"],
                    bytes=state["bytes"],
                    first_id=None if empty else state["first_seq"],
                    last_id=None if empty else state["last_seq"],
                    first_time=first_time,
                    last_time=last_time,
                    consumers=state.get("consumer_count", 0),
                )
            )
        return channels

    def list_channels(self, *, message_times: bool = True) -> list[ChannelInfo]:
        """Every stream. Times come from the Milvus TSO of the first and last message (two reads per stream);
        with message_times=False from the server's store timestamps instead (one API call in all)."""
        from mqctl.sorting import natural_key

        return sorted(self._run(self._channels(message_times)), key=lambda c: natural_key(c.name))

    def channel_bounds(self, names: set[str]) -> dict[str, ChannelBounds]:
        """From each stream's state (an empty one's first sequence is the next it will store) and its max_age."""
        return {
            s.name: ChannelBounds(s.first_seq, s.last_seq or None, s.max_age_seconds)
            for s in self.stream_details()
            if s.name in names
        }

    def channel_extras(self, name: str) -> ChannelExtras:
        """The stream's config and state."""
        import dataclasses

        return ChannelExtras(stream=dataclasses.asdict(self.stream(name)))

    def store_identity(self) -> str | None:
        """None: the URL names the one server."""
        return None

    def retention_report(self, configured: ConfiguredRetention, now: dt.datetime) -> RetentionReport:
        from mqctl.mq.nats.retention import nats_report

        return nats_report(self, configured, now)

    def id_range(self, channel: str) -> tuple[int, int] | None:
        state = self._run(self._stream_info(channel))["state"]
        return (state["first_seq"], state["last_seq"]) if state["messages"] else None

    def iter_messages(
        self, channel: str, start_id: int | None = None, end_id: int | None = None
    ) -> Generator[RawMessage, None, None]:
        info = self._run(self._stream_info(channel))
        state = info["state"]
        last = state["last_seq"] if end_id is None else min(end_id, state["last_seq"])
        first = max(start_id or 1, state["first_seq"])
        if not state["messages"] or first > last:
            return
        batch = max(1, min(READ_BATCH, READ_BATCH_BYTES * state["messages"] // max(state["bytes"], 1)))
        reader = PullReader(self, channel, last, batch)
        try:
            self._run(reader.open(first))
            while (batch := self._run(reader.next_batch())) is not None:
                yield from batch
        finally:
            self._run(reader.close())


def _details(stream: Json) -> StreamDetails:
    """StreamDetails from a JetStream API stream object (max_age in nanoseconds there)."""
    config, state = stream["config"], stream["state"]
    return StreamDetails(
        name=config["name"],
        subjects=list(config.get("subjects") or []),
        max_age_seconds=config.get("max_age", 0) / NANOS,
        max_bytes=config.get("max_bytes", UNLIMITED),
        max_msgs=config.get("max_msgs", UNLIMITED),
        storage=config.get("storage", ""),
        retention=config.get("retention", ""),
        discard=config.get("discard", ""),
        replicas=config.get("num_replicas", 1),
        messages=state["messages"],
        bytes=state["bytes"],
        first_seq=state["first_seq"],
        last_seq=state["last_seq"],
        consumers=state.get("consumer_count", 0),
        first_time=_nats_time(state.get("first_ts")),
        duplicate_window_seconds=config.get("duplicate_window", 0) / NANOS,
    )


def _nats_time(text: str | None) -> dt.datetime | None:
    """An RFC 3339 time from the JetStream API (nanoseconds trimmed); Go's zero time is None."""
    if not text or text.startswith("0001-01-01"):
        return None
    head, _, fraction = text.rstrip("Z").partition(".")
    micros = (fraction + "000000")[:6] if fraction else "000000"
    return dt.datetime.fromisoformat(f"{head}.{micros}+00:00")


def listening_process(url: str) -> str | None:
    """'pid (name)' of the local process listening on a loopback NATS URL's port, when visible in /proc."""
    from mqctl.host.procfs import listening_pid, process_name

    pid = listening_pid(public_url(url), BACKENDS["natsmq"].default_port)
    return None if pid is None else f"{pid} ({process_name(pid)})"
