"""The threaded fetch of a bucket's objects (read_ahead.py, segment_files.Fetched's CRCs computed in the fetching
thread) under hostile answers: a GET that raises, a body shorter or longer than announced, a block whose CRC fails
in the thread, a body cut off mid-read. Each ends as the same one line (or Problem) as the direct, single-threaded
read of the same object, never hangs, and leaves no fetching thread behind."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mqctl.errors import MqctlError
from mqctl.mq.channels import list_channels
from mqctl.mq.woodpecker import storage
from mqctl.mq.woodpecker.source import WoodpeckerSource
from tests.helpers import woodpecker_segments as w
from tests.helpers.fake_s3 import BUCKET, FakeS3, Response

BROKEN = "wp/1/3/1.blk"


def objects(tmp_path: Path) -> dict[str, bytes]:
    root = tmp_path / "wal"
    body = [w.message(b"x" * 8192, {"_t": "insert", "_v": "1", "_tt": "1000"})] * 4
    for number in range(8):
        w.object_segment(root / "1" / str(number), [body] * 3, finalized=number < 7)
    return {f"wp/{p.relative_to(root)}": p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


class Cut(Response):
    """A body that fails after its first chunk, as a dropped connection does."""

    def read(self, size: int) -> bytes:
        if self.at:
            raise ConnectionResetError(104, "Connection reset by peer")
        return super().read(min(size, 100))


class Hostile(FakeS3):
    def __init__(self, found: dict[str, bytes], how: str):
        super().__init__(found)
        self.how = how

    def get_object(self, bucket: str, key: str) -> Any:
        response = super().get_object(bucket, key)
        if key != BROKEN:
            return response
        if self.how == "raises":
            response.close()
            raise OSError(5, "Input/output error")
        if self.how == "short":
            response.data = response.data[:-500]  # announced length kept: the body ends early
        elif self.how == "long":
            response.data = response.data + b"\0" * 64  # more than announced
        elif self.how == "cut":
            cut = Cut(self, response.data)
            return cut
        return response


def outcome(found: dict[str, bytes], how: str, monkeypatch: pytest.MonkeyPatch, *, ahead: bool) -> str:
    """What a verifying listing says (an error line, or its warnings), with the reads fetched ahead in threads or
    each fetched directly when read."""
    fake = Hostile(found, how)
    monkeypatch.setattr(storage, "_client", lambda access: (fake, "http://fake", True))
    if not ahead:
        monkeypatch.setattr("mqctl.mq.woodpecker.source.read_ahead", lambda *args, **kwargs: None)
    try:
        with WoodpeckerSource(f"s3://{BUCKET}/wp", verify=True) as source:
            return " | ".join(list_channels(source).warnings) or "no warning"
    except MqctlError as err:
        return f"error: {err.message}"


def assert_no_thread_left(before: set[int | None]) -> None:
    """No fetching thread started since `before` is alive within 5 s."""
    left: list[threading.Thread] = []
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        left = [t for t in threading.enumerate() if t.ident not in before and t.name.startswith("mqctl-s3")]
        if not left:
            break
        time.sleep(0.05)
    assert not left, [t.name for t in left]


@pytest.mark.parametrize("how", ["raises", "short", "long", "cut", "crc"])
def test_a_hostile_object_ends_the_same_with_threads_as_without(tmp_path, monkeypatch, how):
    found = objects(tmp_path)
    if how == "crc":
        damaged = bytearray(found[BROKEN])
        damaged[-200] ^= 0x20
        found[BROKEN] = bytes(damaged)
    before = {t.ident for t in threading.enumerate()}
    started = time.monotonic()
    threaded = outcome(found, how, monkeypatch, ahead=True)
    direct = outcome(found, how, monkeypatch, ahead=False)
    assert time.monotonic() - started < 30  # never hangs
    assert threaded == direct, how
    assert "segment 3" in threaded or "1/3/1.blk" in threaded, threaded
    assert "Traceback" not in threaded and "\n" not in threaded
    assert_no_thread_left(before)


def test_an_interrupt_while_objects_are_fetched_ahead_leaves_no_thread_and_no_late_fetch(tmp_path, monkeypatch):
    """Ctrl-C in the reader while the threads fetch ahead: the interrupt reaches the caller at once, the source's
    close drops what was planned, and no thread is left behind nor starts a fetch after it."""
    found = objects(tmp_path)
    fake = FakeS3(found)
    monkeypatch.setattr(storage, "_client", lambda access: (fake, "http://fake", True))
    reads: list[str] = []
    original = storage.S3Prefix.read

    def interrupted(self: storage.S3Prefix, place: Any, name: str) -> Any:
        reads.append(f"{place.folder}/{name}")
        if len(reads) == 5:
            raise KeyboardInterrupt
        return original(self, place, name)

    monkeypatch.setattr(storage.S3Prefix, "read", interrupted)
    before = {t.ident for t in threading.enumerate()}
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt), WoodpeckerSource(f"s3://{BUCKET}/wp", verify=True) as source:
        list_channels(source)
    assert time.monotonic() - started < 30
    assert len(reads) == 5
    assert_no_thread_left(before)
    fetched = sum(fake.gets.values())
    time.sleep(0.2)
    assert sum(fake.gets.values()) == fetched  # nothing fetched after the close
    # some objects were fetched ahead, the plan was dropped rather than fetched to its end, every body was closed
    assert len(reads) - 1 < fetched < len(found) and fake.open_now == 0  # 4 objects read, 1 or more ahead
