"""Cost linear in the input (issue 29, class 3), measured by counting work, never by timing: the bytes a
segment read copies out of the file (a prefix copied per record would grow with the square of the records), and
the Python lines the source runs to list a WAL of N and of 4N segments (a search per segment would run 16 times
as many at 4N)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any

from mqctl.mq.woodpecker.segments import read_local_bytes
from tests.helpers import woodpecker_segments as w


class CountingBytes(bytes):
    """bytes that count what slicing them copies."""

    copied = 0

    def __getitem__(self, key: Any) -> Any:
        found = super().__getitem__(key)
        if isinstance(key, slice):
            CountingBytes.copied += len(found)
        return found


def _copied_per_byte(records: int, tmp_path: Path) -> float:
    folder = tmp_path / str(records)
    data = w.local_segment(folder, [w.messages(100, start) for start in range(0, records, 100)])
    CountingBytes.copied = 0
    segment = read_local_bytes(CountingBytes(data), False, 7, 0, "data.log")
    assert (len(segment.entries), segment.problems) == (records, [])
    return CountingBytes.copied / len(data)


def test_reading_a_segment_copies_each_byte_a_bounded_number_of_times(tmp_path):
    small, large = _copied_per_byte(500, tmp_path), _copied_per_byte(2000, tmp_path)
    assert small <= 2 and large <= 2, (small, large)  # a prefix copied per record: hundreds of times each byte


def _lines_to_list(segments: int, tmp_path: Path) -> int:
    from mqctl.mq.woodpecker.source import WoodpeckerSource

    root = tmp_path / f"wal-{segments}"
    data = w.local_segment(root / "seed", [w.messages(1)])
    for segment in range(segments):
        folder = root / "7" / str(segment)
        folder.mkdir(parents=True)
        (folder / "data.log").write_bytes(data)
    source_file = (
        sys.modules["mqctl.mq.woodpecker.source"].__file__ if "mqctl.mq.woodpecker.source" in sys.modules else ""
    )
    count = 0

    def trace(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal count
        if frame.f_code.co_filename == source_file:
            count += event == "line"
            return trace
        return None

    with WoodpeckerSource(root) as source:
        sys.settrace(trace)
        try:
            source.list_channels(message_times=False)
            source.channel_extras("7")
        finally:
            sys.settrace(None)
    assert source_file and count
    return count


def test_listing_a_wal_runs_linear_in_its_segments(tmp_path):
    base, four_times = _lines_to_list(100, tmp_path), _lines_to_list(400, tmp_path)
    assert four_times < 6 * base, (base, four_times)  # linear: about 4x; a search per segment: about 16x
