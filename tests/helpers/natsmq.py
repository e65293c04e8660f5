"""natsmq configs and JetStream limits: what the retention tests write and read back."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any


def natsmq_yaml(
    tmp_path: Path,
    *,
    max_age: str = "4320",
    max_bytes: str = "",
    max_msgs: str = "",
    name: str = "milvus.yaml",
) -> Path:
    """A milvus.yaml choosing natsmq with the given retention settings (empty: unset)."""
    path = tmp_path / name
    path.write_text(
        "mq:\n  type: natsmq\nnatsmq:\n  server:\n    port: 4222\n    storeDir: /var/lib/milvus/nats\n"
        f"    retention:\n      maxAge: {max_age}\n      maxBytes: {max_bytes}\n      maxMsgs: {max_msgs}\n"
    )
    return path


def stream_limits(url: str) -> dict[str, tuple[Any, Any, Any, Any]]:
    """stream name -> (max_age, max_bytes, max_msgs, messages) as the live server reports them."""
    import nats

    async def read() -> dict[str, tuple[Any, Any, Any, Any]]:
        nc = await nats.connect(url)
        infos = await nc.jetstream().streams_info()
        await nc.close()
        return {
            str(i.config.name): (i.config.max_age, i.config.max_bytes, i.config.max_msgs, i.state.messages)
            for i in infos
        }

    return asyncio.run(read())


def publish(url: str, channel: str, payloads: list[bytes], *, create: bool = False) -> None:
    """Publish `payloads` to `channel` of a live JetStream server (creating its stream first with `create`)."""
    import nats

    async def send() -> None:
        nc = await nats.connect(url)
        js = nc.jetstream()
        if create:
            await js.add_stream(name=channel, subjects=[channel])
        for payload in payloads:
            await js.publish(channel, payload)
        await nc.close()

    asyncio.run(send())


def max_age_keeping(store: Path, margin_minutes: int = 4320) -> str:
    """A natsmq `maxAge` (minutes) under which `store` keeps every message on any date: the age of its oldest
    message as mqctl measures it (mqctl.clock, so MQCTL_NOW moves it too) plus a margin. nats-server expires by
    the wall clock, so the larger of both ages counts."""
    from mqctl import clock
    from mqctl.mq.nats.store import read_store

    stamps = [s.oldest_ns for s in read_store(store).values() if s.oldest_ns is not None]
    assert stamps, f"no message in {store}"
    oldest = dt.datetime.fromtimestamp(min(stamps) / 1e9, dt.timezone.utc)
    latest = max(clock.now(), dt.datetime.now(dt.timezone.utc))
    return str(int((latest - oldest).total_seconds() // 60) + margin_minutes)


def purge_stream(url: str, stream: str, sequence: int) -> None:
    """What natsmq retention does to old messages: the stream at `url` drops everything below `sequence`."""
    import nats

    async def purge() -> None:
        client = await nats.connect(url)
        try:
            await client.jsm().purge_stream(stream, seq=sequence)
        finally:
            await client.close()

    asyncio.run(purge())


def purge_below(store: Path, stream: str, sequence: int) -> None:
    """`purge_stream` on a natsmq store, through a private nats-server over it."""
    from mqctl.mq.nats.server import private_nats_server

    with private_nats_server(store, writable=True) as url:
        purge_stream(url, stream, sequence)


def purge_dml_streams(url: str) -> list[str]:
    """What natsmq retention does to every DML stream at once (their first messages dropped), on a live server:
    the names of the streams purged."""
    import nats

    async def purge() -> list[str]:
        nc = await nats.connect(url)
        try:
            jsm = nc.jsm()
            names = [s.config.name or "" for s in await jsm.streams_info() if "rootcoord-dml" in (s.config.name or "")]
            for name in names:
                await jsm.purge_stream(name)
            return names
        finally:
            await nc.close()

    return asyncio.run(purge())
