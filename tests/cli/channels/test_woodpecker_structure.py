"""The structure around the CRCs (issue 29, class 1): each damage is built on segments written by
tests/helpers/woodpecker_segments.py (the cited layout) and read end to end by `mqctl channels woodpecker --json`,
from a folder and, for the object layout, from moto's S3 server. Every case must end in exit 1 with a problem that
names the log, segment and file and says what is missing or disagrees, with never more entries than the files hold;
a stray name beside whole data keeps the whole answer and is named too."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import woodpecker_segments as w
from tests.helpers.cli import run_cli

Build = Callable[[Path], None]


def _local(root: Path, segment: int = 0, blocks: int = 2, **options: object) -> Path:
    folder = root / "7" / str(segment)
    w.local_segment(folder, [w.messages(2, 2 * i) for i in range(blocks)], **options)  # type: ignore[arg-type]
    return folder


def _rewrite_block(folder: Path, number: int, first: int, count: int) -> None:
    """N.blk holding `count` entries from `first` (a block written with other entry ids)."""
    (folder / f"{number}.blk").write_bytes(w.block(number, first, w.messages(count, first)))


def missing_last_block_of_a_finalized_segment(root: Path) -> None:
    (w.object_segment_at(root) / "2.blk").unlink()


def empty_block(root: Path) -> None:
    (w.object_segment_at(root) / "1.blk").write_bytes(b"")


def fence_in_a_finalized_segment(root: Path) -> None:
    """A fence where the footer counts a data block. Right after the counted blocks (3.blk here) a fence is what
    upstream's writer leaves when it seals a segment (tests/fixtures/upstream), read as whole."""
    (w.object_segment_at(root) / "2.blk").write_bytes(b"F")


def fence_with_blocks_after_it(root: Path) -> None:
    folder = w.object_segment_at(root, finalized=False)
    (folder / "1.blk").write_bytes(b"F")


def footer_block_count_disagrees(root: Path) -> None:
    folder = w.object_segment_at(root)
    spans = [(n, 0, 10, 2 * n, 2 * n + 1) for n in range(3)]
    index = b"".join(w.index(*span) for span in spans)
    (folder / "footer.blk").write_bytes(index + w.footer(2, 6, 0, 0, len(index)))


def footer_index_disagrees(root: Path) -> None:
    folder = w.object_segment_at(root)
    spans = [(0, 0, 10, 0, 1), (1, 0, 10, 2, 3), (2, 0, 10, 4, 9)]
    index = b"".join(w.index(*span) for span in spans)
    (folder / "footer.blk").write_bytes(index + w.footer(3, 6, 0, 0, len(index)))


def blocks_swapped(root: Path) -> None:
    folder = w.object_segment_at(root)
    one, two = (folder / "1.blk").read_bytes(), (folder / "2.blk").read_bytes()
    (folder / "1.blk").write_bytes(two)
    (folder / "2.blk").write_bytes(one)


def block_duplicated(root: Path) -> None:
    folder = w.object_segment_at(root, finalized=False)
    (folder / "2.blk").write_bytes((folder / "1.blk").read_bytes())


def entry_ids_skip_across_blocks(root: Path) -> None:
    _rewrite_block(w.object_segment_at(root, finalized=False), 1, 5, 2)


def entry_ids_repeat_across_blocks(root: Path) -> None:
    _rewrite_block(w.object_segment_at(root, finalized=False), 1, 1, 2)


def lac_past_the_last_entry(root: Path) -> None:
    w.object_segment_at(root, lac=9)


def local_lac_past_the_last_entry(root: Path) -> None:
    _local(root, lac=7)


def local_cut_short_with_a_segment_after_it(root: Path) -> None:
    folder = _local(root)
    data = (folder / "data.log").read_bytes()
    (folder / "data.log").write_bytes(data[: len(data) - 100])
    _local(root, 1, finalized=False)


def local_footer_damaged_with_a_segment_after_it(root: Path) -> None:
    folder = _local(root)
    data = bytearray((folder / "data.log").read_bytes())
    data[-1] ^= 0x01
    (folder / "data.log").write_bytes(bytes(data))
    _local(root, 1, finalized=False)


def object_without_footer_with_a_segment_after_it(root: Path) -> None:
    w.object_segment_at(root, finalized=False)
    w.object_segment(root / "7" / "1", [w.messages(1)], finalized=False)


def segment_missing_between_two(root: Path) -> None:
    _local(root, 0)
    _local(root, 2, finalized=False)


def unparsable_message_layout(root: Path) -> None:
    folder = root / "7" / "0"
    broken = w.message(b"payload", {"_t": "insert"}).replace(b"insert", b"ins\xffrt")  # invalid UTF-8 in a property
    w.local_segment(folder, [[*w.messages(1), broken]])


def object_too_large_for_the_cap(root: Path) -> None:
    w.object_segment_at(root)
    os.environ["MQCTL_WOODPECKER_MAX_BYTES"] = "120"


CASES: dict[str, tuple[Build, str, str]] = {  # damage -> (build, words of the problem, file named)
    "missing middle block": (w.missing_middle_block, "1.blk is missing (2.blk follows)", "7/0/2.blk"),
    "missing last block": (missing_last_block_of_a_finalized_segment, "footer says 3 block(s), 2 read", "footer.blk"),
    "empty block": (empty_block, "empty block object", "7/0/1.blk"),
    "fence in a finalized segment": (fence_in_a_finalized_segment, "a fence object in a finalized segment", "2.blk"),
    "fence with blocks after it": (fence_with_blocks_after_it, "a fence object with blocks after it", "1.blk"),
    "footer block count": (footer_block_count_disagrees, "footer says 2 block(s), its index lists 3", "footer.blk"),
    "footer index": (footer_index_disagrees, "index lists block 2 with entries 4..9", "footer.blk"),
    "blocks swapped": (blocks_swapped, "block header says block 2 where block 1 comes", "7/0/1.blk"),
    "block duplicated": (block_duplicated, "block header says block 1 where block 2 comes", "7/0/2.blk"),
    "entry ids skip": (entry_ids_skip_across_blocks, "block starts at entry 5 where entry 2 comes", "1.blk"),
    "entry ids repeat": (entry_ids_repeat_across_blocks, "block starts at entry 1 where entry 2 comes", "1.blk"),
    "LAC past the last entry": (lac_past_the_last_entry, "LAC (last add confirmed) is entry 9", "footer.blk"),
    "local LAC": (local_lac_past_the_last_entry, "entries 4..7 missing", "7/0/data.log"),
    "cut short, followed": (local_cut_short_with_a_segment_after_it, "no footer, yet segment 1 follows", "data.log"),
    "footer damaged, followed": (local_footer_damaged_with_a_segment_after_it, "footer CRC mismatch", "data.log"),
    "object without footer, followed": (object_without_footer_with_a_segment_after_it, "yet segment 1 follows", "7/0"),
    "segment missing": (segment_missing_between_two, "segment 1 of log 7 missing between segments 0 and 2", "7/2"),
    "unparsable layout": (unparsable_message_layout, "entry 1: its LogMessageLayout", "7/0/data.log"),
    "over the size cap": (object_too_large_for_the_cap, "more than the 120-byte cap", "7/0/0.blk"),
}


OBJECT_ONLY_FILES = {"local LAC", "cut short, followed", "footer damaged, followed", "unparsable layout"}


def _report(location: str, *extra: str, env: dict[str, str] | None = None) -> tuple[int, list[dict], str]:
    result = run_cli("channels", "woodpecker", location, "--json", *extra, env=env)
    assert result.code in (0, 1), result.stderr
    return result.code, result.json()["segments"], result.stderr


@pytest.fixture
def no_cap_left(monkeypatch):
    monkeypatch.delenv("MQCTL_WOODPECKER_MAX_BYTES", raising=False)
    yield
    os.environ.pop("MQCTL_WOODPECKER_MAX_BYTES", None)


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_damage_is_named_with_exit_1(tmp_path, case, no_cap_left):
    build, words, file = CASES[case]
    build(tmp_path)
    code, segments, _ = _report(str(tmp_path))
    problems = [p for s in segments for p in s["problems"]]
    assert code == 1 and problems, segments
    named = [p for p in problems if words in p]
    assert named, problems
    assert "log 7 segment" in named[0] and file in named[0]


def test_the_intact_cases_read_whole_with_exit_0(tmp_path):
    """The segments the damages start from are read whole: the checks do not flag what is sound."""
    w.object_segment_at(tmp_path / "a", lac=5)
    w.object_segment_at(tmp_path / "b", finalized=False)
    _local(tmp_path / "c", lac=3)
    _local(tmp_path / "c", 1, finalized=False)
    w.object_segment(tmp_path / "d" / "7" / "0", [w.messages(2)], finalized=False, fence_at=1)
    for name, entries in (("a", 6), ("b", 6), ("c", 8), ("d", 2)):
        code, segments, _ = _report(str(tmp_path / name))
        assert (code, sum(s["entries"] for s in segments)) == (0, entries), segments
        assert all(s["problems"] == [] for s in segments)


def test_non_canonical_names_are_named_and_never_counted_twice(tmp_path):
    """`01.blk` beside `1.blk`, a block name ending in a newline, a segment folder `00` beside `0` and a log folder
    in non-ASCII digits: each is a named problem (exit 1) and the entries are those of the canonical files, once."""
    folder = w.object_segment_at(tmp_path)
    (folder / "01.blk").write_bytes((folder / "1.blk").read_bytes())
    (folder / "2.blk\n").write_bytes((folder / "2.blk").read_bytes())
    w.object_segment_at(tmp_path / "copy")
    (tmp_path / "copy" / "7" / "0").rename(tmp_path / "7" / "00")
    _local(tmp_path / "arabic")
    (tmp_path / "arabic" / "7").rename(tmp_path / "\u0667")  # ٧, an Arabic-Indic seven
    code, segments, stderr = _report(str(tmp_path))
    assert code == 1 and "Traceback" not in stderr
    whole = [s for s in segments if s["state"] == "finalized"]
    assert [(s["log_id"], s["segment"], s["entries"]) for s in whole] == [(7, 0, 6)]
    problems = [p for s in segments for p in s["problems"]]
    assert any("'01.blk' is not a canonical block name" in p for p in problems)
    assert any("'2.blk\\n' is not a canonical block name" in p for p in problems)
    assert any("segment folder name '00' is not the canonical ASCII decimal form of 0" in p for p in problems)
    assert any("log folder name '\u0667' is not the canonical ASCII decimal form of 7" in p for p in problems)
    assert sum(s["entries"] for s in segments) == 6

    listed = run_cli("channels", "list", "--woodpecker", str(tmp_path), "--json")
    assert listed.code == 1, listed.stderr
    warnings = listed.json()["warnings"]
    assert any(m.startswith("Woodpecker folder not read: log 7 segment 0") and "log folder name" in m for m in warnings)
    assert listed.json()["totals"]["messages"] == 6


SPECIAL_FILES: dict[str, tuple[Callable[[Path], None], str]] = {
    "fifo": (lambda path: os.mkfifo(path), "data.log is a named pipe (FIFO), not a segment file"),
    "directory": (lambda path: path.mkdir(), "data.log is a directory, not a segment file"),
    "dangling symlink": (lambda path: path.symlink_to(path.parent / "gone"), "data.log is a dangling symbolic link"),
    "symlink loop": (lambda path: path.symlink_to(path), "data.log is a symbolic link loop"),
    "/dev/zero": (lambda path: path.symlink_to("/dev/zero"), "data.log is a character device"),
    "/dev/null": (lambda path: path.symlink_to("/dev/null"), "data.log is a character device"),
}


@pytest.mark.parametrize("kind", sorted(SPECIAL_FILES))
def test_a_data_log_that_is_no_file_is_named_never_opened(tmp_path, kind):
    make, words = SPECIAL_FILES[kind]
    _local(tmp_path, 0)
    folder = tmp_path / "7" / "1"
    folder.mkdir()
    make(folder / "data.log")
    code, segments, _ = _report(str(tmp_path))
    assert code == 1
    rows = {s["segment"]: s for s in segments}
    assert rows[0]["entries"] == 4 and rows[1]["entries"] == 0
    assert any(words in p and "log 7 segment 1" in p for p in rows[1]["problems"]), rows[1]


def test_a_block_object_that_is_a_fifo_does_not_hang(tmp_path):
    folder = w.object_segment_at(tmp_path, finalized=False)
    (folder / "2.blk").unlink()
    os.mkfifo(folder / "2.blk")
    code, segments, _ = _report(str(tmp_path))
    (segment,) = segments
    assert (code, segment["entries"]) == (1, 4)
    assert any("2.blk is a named pipe (FIFO)" in p for p in segment["problems"])


# --- the same damages in a bucket --------------------------------------------------------------------------
@pytest.mark.extra
def test_object_damages_read_from_s3_as_from_the_folder(tmp_path, no_cap_left):
    """Every object-layout case uploaded to moto's S3 server: the same report as from the folder, with keys where
    the folder read names paths (a key ending in a newline: test_s3_bounds.py, moto does not store one)."""
    pytest.importorskip("moto.server", reason="moto[server] of .[test]")
    from tests.helpers.s3 import moto_s3

    cases = [name for name in sorted(CASES) if name not in OBJECT_ONLY_FILES and name != "over the size cap"]
    for name in cases:
        CASES[name][0](tmp_path / name.replace(" ", "-").replace(",", ""))
    with moto_s3() as s3:
        s3.client().create_bucket(Bucket="wal")
        s3.upload(tmp_path, "wal")
        env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1"}
        for name in cases:
            prefix = name.replace(" ", "-").replace(",", "")
            url = f"s3://wal/{prefix}"
            mine = run_cli("channels", "woodpecker", url, "--json", "--s3-endpoint", s3.endpoint, env=env)
            theirs = run_cli("channels", "woodpecker", str(tmp_path / prefix), "--json")
            assert mine.code == theirs.code == 1, (name, mine.stderr)
            shown = theirs.stdout.replace(str(tmp_path / prefix), url)
            assert mine.json()["segments"] == json.loads(shown)["segments"], name
