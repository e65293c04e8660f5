"""How a Woodpecker WAL in a bucket is read (issue 33, item 1), counted on a fake S3 client in this process: one
listing per command, each object fetched once, no more than READ_AHEAD GETs at once, a peek from a position reads
only the segments from there on, and the memory a listing takes does not grow with the WAL beyond its listing.
Not timed: bench/woodpecker_scale.py gives the figures against moto's S3 server and a bare boto3 client."""

from __future__ import annotations

import threading
import tracemalloc
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from mqctl.mq.channel_detail import peek
from mqctl.mq.channels import list_channels
from mqctl.mq.woodpecker import storage
from mqctl.mq.woodpecker.read_ahead import read_ahead
from mqctl.mq.woodpecker.source import WoodpeckerSource
from tests.helpers import woodpecker_segments as w
from tests.helpers.fake_s3 import BUCKET, FakeS3, Response


def wal(tmp_path: Path, segments: int, *, blocks: int = 4, entries: int = 8, size: int = 1024) -> dict[str, bytes]:
    """One log of `segments` finalized object-layout segments (the last one active), as bucket keys under wp/."""
    root = tmp_path / f"wal-{segments}"
    body = [w.message(b"x" * size, {"_t": "insert", "_v": "1", "_tt": "1000"})] * entries
    for number in range(segments):
        w.object_segment(root / "1" / str(number), [body] * blocks, finalized=number < segments - 1)
    return {f"wp/{p.relative_to(root)}": p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def fake_bucket(monkeypatch: pytest.MonkeyPatch):
    made: list[FakeS3] = []

    def open_bucket(objects: dict[str, bytes], kind: type[FakeS3] = FakeS3) -> FakeS3:
        fake = kind(objects)
        made.append(fake)
        monkeypatch.setattr(storage, "_client", lambda access: (fake, "http://fake", True))
        return fake

    return open_bucket


def test_a_verifying_listing_lists_once_and_fetches_each_object_once(tmp_path, fake_bucket):
    objects = wal(tmp_path, 30)
    fake = fake_bucket(objects)
    with WoodpeckerSource(f"s3://{BUCKET}/wp", verify=True) as source:
        listed = list_channels(source)  # what `channels list` runs: counts, ids, times and the data warnings
    assert listed.totals.messages == 30 * 4 * 8 and not listed.warnings
    assert fake.listings == 1
    assert set(fake.gets) == set(objects) and set(fake.gets.values()) == {1}
    assert 1 < fake.most_open <= storage.READ_AHEAD + 1  # fetched ahead, concurrently, within the cap


def footer_listing(objects: dict[str, bytes], fake: FakeS3) -> tuple[Any, int]:
    """`channels list` from footers: the listing and the bytes it fetched."""
    with WoodpeckerSource(f"s3://{BUCKET}/wp") as source:
        listed = list_channels(source)
        assert source.read_kind == "footers"
    return listed, sum(len(objects[key]) * count for key, count in fake.gets.items())


def test_a_listing_from_footers_fetches_each_footer_once_and_two_data_blocks(tmp_path, fake_bucket):
    objects = wal(tmp_path, 30)
    fake = fake_bucket(objects)
    listed, _ = footer_listing(objects, fake)
    assert listed.totals.messages == 30 * 4 * 8 and not listed.warnings
    channel = listed.channels[0]
    assert (channel.first_id, channel.last_id) == (0, 29 * 10**10 + 31)
    assert channel.first_time is not None and channel.last_time is not None
    assert channel.bytes is None  # the payloads' sum is not known from footers
    assert fake.listings == 1 and set(fake.gets.values()) == {1}
    footers = {key for key in objects if key.endswith("footer.blk")}
    blocks = set(fake.gets) - footers
    assert footers <= set(fake.gets) and len(footers) == 29
    # the first block of the log; the last segment is active, so it is read whole (its 4 blocks)
    assert blocks == {"wp/1/0/0.blk"} | {f"wp/1/29/{n}.blk" for n in range(4)}


def test_the_bytes_a_listing_from_footers_fetches_do_not_grow_with_the_blocks_per_segment(tmp_path, fake_bucket):
    fetched = []
    for blocks in (2, 16):
        root = tmp_path / f"blocks-{blocks}"
        body = [w.message(b"x" * 1024, {"_t": "insert", "_v": "1", "_tt": "1000"})] * 8
        for number in range(6):
            w.object_segment(root / "1" / str(number), [body] * blocks, finalized=True)
        objects = {f"wp/{p.relative_to(root)}": p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
        listed, got = footer_listing(objects, fake_bucket(objects))
        assert listed.totals.messages == 6 * blocks * 8 and not listed.warnings
        data_blocks = [key for key in objects if key.endswith(".blk") and not key.endswith("footer.blk")]
        fetched.append((got, sum(len(objects[key]) for key in data_blocks)))
    (small, small_wal), (big, big_wal) = fetched
    assert big_wal > 7 * small_wal  # the WAL grew eightfold ...
    index_growth = 6 * (16 - 2) * (9 + 32)  # ... the footers by their index records only
    assert big <= small + index_growth


def test_a_peek_from_a_position_reads_only_the_segments_from_there(tmp_path, fake_bucket):
    objects = wal(tmp_path, 30)
    fake = fake_bucket(objects)
    with WoodpeckerSource(f"s3://{BUCKET}/wp") as source:
        result = peek(source, "1", start="29/0", limit=100)
    assert [m.position for m in result.messages] == [f"29/{n}" for n in range(32)]
    assert fake.listings == 1
    assert set(fake.gets) == {key for key in objects if key.startswith("wp/1/29/")}
    assert set(fake.gets.values()) == {1}


def test_an_object_read_out_of_the_planned_order_is_fetched_once_and_the_skipped_ones_are_dropped(
    tmp_path, fake_bucket
):
    fake = fake_bucket(wal(tmp_path, 12, blocks=1))
    with WoodpeckerSource(f"s3://{BUCKET}/wp") as source:
        prefix = source.files
        assert isinstance(prefix, storage.S3Prefix)
        places = {p.segment_id: p for p in prefix.places()}
        read_ahead(prefix, [places[n] for n in range(12)])
        assert len(prefix.ahead.fetching) == storage.READ_AHEAD  # no more held ahead than the cap
        prefix.read(places[10], "0.blk")  # a jump: what was planned before it is dropped
        assert not any(key.startswith(("wp/1/0/", "wp/1/9/")) for key in prefix.ahead.known)
        prefix.read(places[11], "0.blk")
    assert fake.gets["wp/1/10/0.blk"] == 1 and fake.gets["wp/1/11/0.blk"] == 1


def peak_bytes_listing(tmp_path: Path, fake_bucket: Any, segments: int) -> tuple[int, int]:
    # 4-KiB entries: what a listing keeps per segment (its summary, a few KiB) stays well under a tenth of the
    # segment's bytes, whatever the read-ahead threads hold at the moment of the peak
    objects = wal(tmp_path, segments, entries=16, size=4096)
    fake_bucket(objects)
    tracemalloc.start()
    try:
        with WoodpeckerSource(f"s3://{BUCKET}/wp") as source:
            assert list_channels(source).totals.messages == segments * 4 * 16
        return tracemalloc.get_traced_memory()[1], sum(len(v) for v in objects.values())
    finally:
        tracemalloc.stop()


def test_the_memory_of_a_listing_does_not_grow_with_the_wal(tmp_path, fake_bucket):
    """Four times the segments (and bytes): the peak grows by what the listing and one summary per segment take,
    a small fraction of the bytes added; one segment's entries and READ_AHEAD objects are held at a time."""
    small, small_wal = peak_bytes_listing(tmp_path, fake_bucket, 16)
    large, large_wal = peak_bytes_listing(tmp_path, fake_bucket, 64)
    assert large_wal >= 4 * small_wal * 0.9
    assert large - small < (large_wal - small_wal) / 10, (small, large, small_wal, large_wal)
    assert large < large_wal / 2


def peak_bytes_report(tmp_path: Path, fake_bucket: Any, segments: int) -> tuple[int, int]:
    from mqctl.mq.streaming.wal_files import woodpecker_report

    objects = wal(tmp_path, segments, entries=16)
    fake = fake_bucket(objects)
    tracemalloc.start()
    try:
        report = woodpecker_report(f"s3://{BUCKET}/wp", log="1", limit=20)
        assert len(report.segments) == segments and report.entries is not None and len(report.entries) == 20
        assert sum(row.entries for row in report.segments) == segments * 4 * 16
        assert fake.listings == 1 and set(fake.gets.values()) == {1} and set(fake.gets) == set(objects)
        return tracemalloc.get_traced_memory()[1], sum(len(v) for v in objects.values())
    finally:
        tracemalloc.stop()


def test_channels_woodpecker_lists_once_fetches_once_and_keeps_only_what_it_shows(tmp_path, fake_bucket):
    """`channels woodpecker` counts each segment as it is read and keeps only the entries it shows."""
    small, small_wal = peak_bytes_report(tmp_path, fake_bucket, 16)
    large, large_wal = peak_bytes_report(tmp_path, fake_bucket, 64)
    assert large - small < (large_wal - small_wal) / 10, (small, large, small_wal, large_wal)


def test_each_block_byte_is_checksummed_once_and_off_the_reading_thread(tmp_path, fake_bucket, monkeypatch):
    """A full read of a bucket computes one CRC over each block's data records (the block CRC covers the records,
    whose own CRCs are not computed again), in the threads that fetch the objects ahead: the reading thread
    checksums only the small records (headers, footers, index) and the block CRC is still compared by the reader."""
    from mqctl.mq.woodpecker import segment_files, segments

    objects = wal(tmp_path, 6, blocks=3, entries=8, size=16 << 10)
    fake_bucket(objects)
    counted: Counter[str] = Counter()
    real = zlib.crc32

    class Counting:
        @staticmethod
        def crc32(data: Any, value: int = 0) -> int:
            counted["main" if threading.current_thread() is threading.main_thread() else "ahead"] += len(data)
            return real(data, value)

    monkeypatch.setattr(segments, "zlib", Counting)
    monkeypatch.setattr(segment_files, "zlib", Counting)
    with WoodpeckerSource(f"s3://{BUCKET}/wp") as source:
        messages = list(source.iter_messages("1"))
    assert len(messages) == 6 * 3 * 8
    block_bytes = 6 * 3 * 8 * (16 << 10)
    assert block_bytes <= counted["ahead"] < block_bytes * 1.01  # each entry's bytes once, in a fetching thread
    assert counted["main"] < block_bytes / 100, counted


def test_a_damaged_record_in_a_bucket_is_still_its_blocks_crc_mismatch(tmp_path, fake_bucket):
    """A byte changed inside a data record: the block CRC (computed in the fetching thread) names the block, as
    it did when every record's CRC was computed too; no entry of that block or after it is read."""
    objects = wal(tmp_path, 2, blocks=3, entries=4, size=8 << 10)
    damaged = bytearray(objects["wp/1/0/1.blk"])
    damaged[-100] ^= 0x5A
    objects["wp/1/0/1.blk"] = bytes(damaged)
    fake_bucket(objects)
    with WoodpeckerSource(f"s3://{BUCKET}/wp", verify=True) as source:  # inside a block: a verifying read
        listed = list_channels(source)
    assert listed.totals.messages == 4 + 3 * 4  # segment 0's block 0, then all of segment 1
    (warning,) = [w for w in listed.warnings if "block CRC mismatch" in w]
    assert "wp/1/0/1.blk" in warning and "block 1" in warning, listed.warnings


def test_a_body_is_read_up_to_its_announced_length_then_once_to_its_end(tmp_path, fake_bucket):
    """No read asks for more than what is left of the announced body (urllib3 2.x spends more CPU on reads past the
    end: docs/benchmarks.md), and one read after the announced bytes finds the end: objects of several chunks."""
    asked: list[tuple[str, int, int]] = []  # (key, bytes asked, bytes left of the body)

    class Recorded(Response):
        key = ""

        def read(self, size: int) -> bytes:
            asked.append((self.key, size, len(self.data) - self.at))
            return super().read(size)

    class Recording(FakeS3):
        def get_object(self, bucket: str, key: str) -> Any:
            plain = super().get_object(bucket, key)
            response = Recorded(self, plain.data)
            response.key = key
            return response

    objects = wal(tmp_path, 3, blocks=2, entries=8, size=300 * 1024)  # blocks of about 2.4 MB: three reads each
    fake = fake_bucket(objects, Recording)
    with WoodpeckerSource(f"s3://{BUCKET}/wp", verify=True) as source:
        assert list_channels(source).totals.messages == 3 * 2 * 8
    assert all(size <= left for _, size, left in asked if left > 0), [a for a in asked if a[1] > a[2] > 0]
    ends = Counter(key for key, _, left in asked if left == 0)
    assert set(ends) == set(fake.gets) and set(ends.values()) == {1}  # each body read to its end exactly once
    assert max(Counter(key for key, _, _ in asked).values()) >= 3  # some body took several chunks


def test_a_compacted_segments_merged_blocks_are_fetched_ahead_and_its_plain_ones_not_at_all(
    tmp_path, fake_bucket, monkeypatch
):
    """Every finalized segment of a compacted 3.0 WAL is read from its merged `m_N.blk` (upstream's Compact writes
    them before the footer that names them): they are planned and fetched ahead like plain blocks, and the plain
    `N.blk` a cleanup has not yet deleted are never fetched."""
    from mqctl.mq.woodpecker.read_ahead import ReadAhead

    root = tmp_path / "compacted"
    body = [w.message(b"x" * 512, {"_t": "insert", "_v": "1", "_tt": "1000"})] * 4
    for number in range(6):
        w.object_segment(root / "1" / str(number), [body] * 3, compacted=True)
    objects = {f"wp/{p.relative_to(root)}": p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    fake = fake_bucket(objects)
    taken: dict[str, bool] = {}
    original = ReadAhead.take

    def take(self: ReadAhead, key: str) -> Any:
        future = original(self, key)
        taken[key] = future is not None
        return future

    monkeypatch.setattr(ReadAhead, "take", take)
    with WoodpeckerSource(f"s3://{BUCKET}/wp") as source:
        assert sum(1 for _ in source.iter_messages("1")) == 6 * 3 * 4
    merged = {key for key in objects if key.endswith("/m_0.blk")}
    assert len(merged) == 6 and all(taken[key] for key in merged), taken  # each one fetched ahead
    assert set(fake.gets) == merged | {key for key in objects if key.endswith("/footer.blk")}
    assert set(fake.gets.values()) == {1}
