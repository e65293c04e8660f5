"""Every byte of every file of a Woodpecker WAL flipped, and every file cut at every length (issue 29): both
layouts, finalized v6 and v5 footers with and without LAC, a compacted, a fenced and an active segment, checked
against etcd's LastEntryId as `channels checkpoints --etcd` checks them. The damaged WAL is read in process by the
same reader the commands use (storage.read_all over an in-memory store) and no damage may give a different set
of entries than the intact WAL unless a problem is reported. Cutting the tail of an active segment is left out:
it is the same bytes as a moment earlier in its writing, which no reader can tell apart."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mqctl.mq.woodpecker.meta import Log, WoodpeckerMeta
from mqctl.mq.woodpecker.meta import Segment as MetaSegment
from mqctl.mq.woodpecker.meta_check import check_against_meta
from mqctl.mq.woodpecker.segments import Data
from mqctl.mq.woodpecker.storage import SegmentPlace, read_all
from tests.helpers import woodpecker_segments as w

Files = dict[str, bytes]  # "log/segment/name" -> bytes


class MemoryStore:
    """SegmentFiles over a dict: the reader's own code path, without a disk in the loop."""

    description = "memory"

    def __init__(self, files: Files):
        self.files = files

    def places(self) -> list[SegmentPlace]:
        folders: dict[str, set[str]] = {}
        for key in self.files:
            folder, _, name = key.rpartition("/")
            folders.setdefault(folder, set()).add(name)
        found = []
        for folder, names in sorted(folders.items()):
            log, segment = (int(part) for part in folder.split("/"))
            layout = "local" if "data.log" in names else "object"
            found.append(SegmentPlace(layout, log, segment, folder, frozenset(names)))
        return found

    def read(self, place: SegmentPlace, name: str) -> Data:
        return self.files[f"{place.folder}/{name}"]

    def shown(self, place: SegmentPlace, name: str | None = None) -> str:
        return f"{place.folder}/{name}" if name else place.folder


def _wal(tmp_path: Path) -> tuple[Files, set[str]]:
    """The WAL's files, and those of active segments (whose tail is not cut)."""
    w.local_segment(tmp_path / "7" / "0", [w.messages(2), w.messages(2, 2)], lac=3)
    w.local_segment(tmp_path / "7" / "1", [w.messages(2)], version=5)
    w.local_segment(tmp_path / "7" / "2", [w.messages(1), w.messages(2, 1)], finalized=False)
    w.object_segment(tmp_path / "8" / "0", [w.messages(2), w.messages(1, 2)], lac=2)
    w.object_segment(tmp_path / "8" / "1", [w.messages(1), w.messages(2, 1)], compacted=True, version=5)
    w.object_segment(tmp_path / "8" / "2", [w.messages(2)], finalized=False, fence_at=1)
    w.object_segment(tmp_path / "8" / "3", [w.messages(1), w.messages(1, 1)], finalized=False)
    files = {p.relative_to(tmp_path).as_posix(): p.read_bytes() for p in sorted(tmp_path.rglob("*")) if p.is_file()}
    return files, {"7/2/data.log", "8/3/1.blk"}


def _meta() -> WoodpeckerMeta:
    """etcd's record: every finalized segment completed with its last entry."""

    def segments(name: str, closed: dict[int, int], active: list[int]) -> list[MetaSegment]:
        found = [MetaSegment(name, i, "completed", None, None, None, last, 0, None, []) for i, last in closed.items()]
        return found + [MetaSegment(name, i, "active", None, None, None, -1, 0, None, []) for i in active]

    logs = {
        "a": Log("a", 7, "k/a", None, -1, -1, segments("a", {0: 3, 1: 1}, [2])),
        "b": Log("b", 8, "k/b", None, -1, -1, segments("b", {0: 2, 1: 2}, [2, 3])),
    }
    return WoodpeckerMeta("woodpecker", ["woodpecker"], logs)


def _answer(files: Files) -> tuple[list[tuple[int, int, int, bytes, tuple[tuple[str, str], ...]]], bool]:
    """(every entry read, whether any problem was reported)."""
    segments = check_against_meta(read_all(MemoryStore(files)), _meta())
    entries = [
        (e.log_id, e.segment_id, e.entry_id, e.payload, tuple(sorted(e.properties.items())))
        for s in segments
        for e in s.entries
    ]
    return entries, any(s.problems for s in segments)


def _sweep(files: Files, damage: Callable[[str, bytes], list[bytes]], skip: set[str]) -> int:
    intact, flagged = _answer(files)
    assert not flagged and len(intact) == 19
    tried = 0
    for name, data in files.items():
        if name in skip:
            continue
        for damaged in damage(name, data):
            tried += 1
            entries, flagged = _answer({**files, name: damaged})
            assert flagged or entries == intact, (name, damaged.hex())
    return tried


def test_every_flipped_byte_is_flagged_or_harmless(tmp_path):
    files, _ = _wal(tmp_path)

    def flips(name: str, data: bytes) -> list[bytes]:
        return [data[:i] + bytes([data[i] ^ 0xA5]) + data[i + 1 :] for i in range(len(data))]

    assert _sweep(files, flips, set()) == sum(len(d) for d in files.values())


@pytest.mark.parametrize("cut", ["tail", "head"])
def test_every_cut_is_flagged_or_harmless(tmp_path, cut):
    """Every file cut short at every length (its tail lost) or started late (its head lost). An active segment's
    file keeps at least 5 bytes: fewer, it is the same as a header record still being written (its CRC and nothing
    else), or a segment just created."""
    files, active = _wal(tmp_path)

    def cuts(name: str, data: bytes) -> list[bytes]:
        if cut == "tail":
            return [data[:i] for i in range(len(data))]
        keep = 5 if name in active else 1
        return [data[i:] for i in range(1, len(data) - keep + 1)]

    assert _sweep(files, cuts, active if cut == "tail" else set()) > 1000
