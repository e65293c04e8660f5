"""A listing from footers (footers.py, WoodpeckerSource without verify), over real folders in both layouts: the same
entries, ids and times as the whole read; a footer that disagrees with the listing (a block object missing or not
indexed, a footer cut short or failing its CRC, an index that does not meet the footer) is a Problem, never a
silently wrong count; data blocks are not read, except the two holding the log's first and last entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqctl.errors import PreconditionError
from mqctl.mq.channels import list_channels
from mqctl.mq.woodpecker import segment_files
from mqctl.mq.woodpecker.source import WoodpeckerSource
from tests.helpers import woodpecker_segments as w


def make_wal(root: Path, layout: str, segments: int = 3, blocks: int = 3) -> Path:
    """One log of `segments` finalized segments of `blocks` blocks of 4 entries, and an active one after them."""
    write = w.local_segment if layout == "local" else w.object_segment
    for number in range(segments + 1):
        body = [w.messages(4, start=100 * number + 4 * b) for b in range(blocks)]
        write(root / "1" / str(number), body, finalized=number < segments)
    return root


def listed(root: Path, *, verify: bool = False) -> tuple[list, list[str], str]:
    with WoodpeckerSource(root, verify=verify) as source:
        result = list_channels(source)
        return result.channels, result.warnings, source.read_kind


@pytest.mark.parametrize("layout", ["local", "object"])
def test_footers_give_what_the_whole_read_gives(tmp_path, layout):
    root = make_wal(tmp_path / "wp", layout)
    quick, quick_warnings, kind = listed(root)
    whole, whole_warnings, verified = listed(root, verify=True)
    assert (kind, verified) == ("footers", "verified")
    assert not quick_warnings and not whole_warnings
    for a, b in zip(quick, whole, strict=True):
        assert (a.messages, a.first_id, a.last_id, a.first_time, a.last_time) == (
            b.messages,
            b.first_id,
            b.last_id,
            b.first_time,
            b.last_time,
        )
    assert quick[0].messages == 4 * 3 * 4 and quick[0].bytes is None and whole[0].bytes is not None


def test_a_local_listing_reads_data_log_whole_only_for_the_active_segment(tmp_path, monkeypatch):
    root = make_wal(tmp_path / "wp", "local", segments=5)
    whole: list[Path] = []
    real = segment_files.read_regular_file

    def counting(path: Path, cap: int | None = None) -> bytearray | bytes:
        whole.append(path)
        return real(path, cap)

    monkeypatch.setattr("mqctl.mq.woodpecker.storage.read_regular_file", counting)
    channels, warnings, _ = listed(root)
    assert not warnings and channels[0].messages == 6 * 3 * 4
    assert whole == [root / "1" / "5" / "data.log"]  # the finalized five: their tail and two blocks, in ranges


def damaged(root: Path, segment: int, change) -> list[str]:
    change(root / "1" / str(segment))
    _, warnings, _ = listed(root)
    return warnings


@pytest.mark.parametrize(
    ("what", "change", "said"),
    [
        (
            "missing block",
            lambda f: (f / "1.blk").unlink(),
            "1.blk is not in the listing, yet the footer's index names it",
        ),
        (
            "extra block",
            lambda f: (f / "3.blk").write_bytes((f / "2.blk").read_bytes()),
            "3.blk is listed but the footer's index does not name it",
        ),
        (
            "truncated footer",
            lambda f: (f / "footer.blk").write_bytes((f / "footer.blk").read_bytes()[:-7]),
            "footer.blk holds no footer record",
        ),
        ("footer CRC", lambda f: flip(f / "footer.blk", -20), "footer CRC mismatch"),
        ("index CRC", lambda f: flip(f / "footer.blk", 20), "record CRC mismatch"),
    ],
)
def test_a_footer_that_disagrees_with_the_listing_is_a_problem(tmp_path, what, change, said):
    warnings = damaged(make_wal(tmp_path / "wp", "object"), 1, change)
    assert len(warnings) == 1 and said in warnings[0] and "segment 1" in warnings[0], (what, warnings)


def test_a_fence_after_the_counted_blocks_is_not_an_extra_block(tmp_path):
    root = tmp_path / "wp"
    w.object_segment(root / "1" / "0", [w.messages(4), w.messages(4, 4)], fence_at=2)
    channels, warnings, _ = listed(root)
    assert not warnings and channels[0].messages == 8


def test_a_compacted_segment_is_read_from_its_merged_blocks(tmp_path):
    root = tmp_path / "wp"
    w.object_segment(root / "1" / "0", [w.messages(4), w.messages(4, 4)], compacted=True)
    channels, warnings, _ = listed(root)
    whole, _, _ = listed(root, verify=True)
    assert not warnings and channels[0].messages == whole[0].messages == 8
    (root / "1" / "0" / "m_0.blk").unlink()  # the merged block gone: the plain ones are not what the index names
    assert listed(root)[1]


@pytest.mark.parametrize(
    ("what", "change", "said"),
    [
        ("footer CRC", lambda f: flip(f / "data.log", -20), "footer CRC mismatch"),
        ("index CRC", lambda f: flip(f / "data.log", -60), "CRC mismatch"),
        ("cut short", lambda f: (f / "data.log").write_bytes((f / "data.log").read_bytes()[:-3]), ""),
    ],
)
def test_a_damaged_local_footer_or_index_is_a_problem(tmp_path, what, change, said):
    """A tail that is no footer is read whole (an active segment, or one whose footer is damaged: the whole read
    names it); a damaged index is named from the tail read."""
    warnings = damaged(make_wal(tmp_path / "wp", "local"), 1, change)
    assert warnings and said in warnings[0] and "segment 1" in warnings[0], (what, warnings)


def test_a_footer_whose_block_count_disagrees_with_its_index_is_a_problem(tmp_path):
    root = make_wal(tmp_path / "wp", "object")
    folder = root / "1" / "1"
    spans = [(n, 0, (folder / f"{n}.blk").stat().st_size, 100 + 4 * n, 103 + 4 * n) for n in range(3)]
    index = b"".join(w.index(*span) for span in spans)
    (folder / "footer.blk").write_bytes(index + w.footer(4, 12, 0, 0, len(index)))
    warnings = listed(root)[1]
    assert len(warnings) == 1 and "footer says 4 block(s), its index lists 3" in warnings[0]


def test_a_lac_past_the_index_is_a_problem(tmp_path):
    root = tmp_path / "wp"
    w.object_segment(root / "1" / "0", [w.messages(4)], lac=9)
    w.object_segment(root / "1" / "1", [w.messages(4, 100)], finalized=False)
    warnings = listed(root)[1]
    assert len(warnings) == 1 and "footer LAC (last add confirmed) is entry 9" in warnings[0]


def test_a_block_whose_entries_disagree_with_the_index_is_a_problem_when_read(tmp_path):
    """The first block of the log is read for the first time: its content must be what the index says."""
    root = make_wal(tmp_path / "wp", "object")
    folder = root / "1" / "0"
    (folder / "0.blk").write_bytes(w.header(0) + w.block(0, 0, w.messages(3)))
    warnings = listed(root)[1]
    assert len(warnings) == 1 and "the index says block 0 holds entries 0..3" in warnings[0]


def test_a_strict_source_stops_at_a_footer_problem(tmp_path):
    root = make_wal(tmp_path / "wp", "object")
    (root / "1" / "1" / "2.blk").unlink()
    with WoodpeckerSource(root, strict=True) as source, pytest.raises(PreconditionError, match=r"2\.blk is not in"):
        source.id_range("1")


def flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0x10
    path.write_bytes(bytes(data))


def test_an_index_longer_than_the_tail_read_is_read_in_a_second_range(tmp_path, monkeypatch):
    root = make_wal(tmp_path / "wp", "local")
    whole = listed(root)
    monkeypatch.setattr("mqctl.mq.woodpecker.footers.TAIL", 60)  # the footer record and a few bytes of index
    short = listed(root)
    assert not short[1] and [(c.messages, c.first_id, c.last_id) for c in short[0]] == [
        (c.messages, c.first_id, c.last_id) for c in whole[0]
    ]
