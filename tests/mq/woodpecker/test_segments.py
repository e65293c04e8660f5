"""Woodpecker segment files (local data.log and a directory copy of the object layout) written by
tests/helpers/woodpecker_segments.py from the cited layout, read back by mqctl's reader: entries, ids,
properties, v5 and v6 footers, an active segment, a fence, compaction, and a flipped byte found by its CRC.
Woodpecker's own codec tests are round-trips through its own encoder (no golden bytes to replay)."""

from __future__ import annotations

from pathlib import Path

from mqctl.mq.woodpecker.segment_files import find_segments, read_local_segment, read_object_segment, read_segments
from tests.helpers import woodpecker_segments as w


def test_local_finalized_v6(tmp_path):
    folder = tmp_path / "7" / "0"
    w.local_segment(folder, [w.messages(3), w.messages(2, 3)], lac=4)
    segment = read_local_segment(folder, 7, 0)
    assert (segment.state, segment.layout, segment.blocks, segment.problems) == ("finalized", "local", 2, [])
    assert segment.footer is not None
    assert (segment.footer.version, segment.footer.lac, segment.footer.records) == (6, 4, 5)
    assert [e.entry_id for e in segment.entries] == [0, 1, 2, 3, 4]
    assert [e.block for e in segment.entries] == [0, 0, 0, 1, 1]
    assert segment.entries[3].payload == b"payload-3"
    assert segment.entries[3].properties == {"_t": "insert", "_v": "1", "_tt": "1003"}


def test_local_v5_footer_has_no_lac(tmp_path):
    folder = tmp_path / "7" / "1"
    w.local_segment(folder, [w.messages(2)], version=5)
    segment = read_local_segment(folder, 7, 1)
    assert segment.footer is not None
    assert (segment.state, segment.footer.version, segment.footer.lac) == ("finalized", 5, None)
    assert [e.payload for e in segment.entries] == [b"payload-0", b"payload-1"]


def test_active_segment_is_read_to_its_last_complete_block(tmp_path):
    folder = tmp_path / "7" / "2"
    data = w.local_segment(folder, [w.messages(2), w.messages(3, 2)], finalized=False)
    (folder / "data.log").write_bytes(data[:-10])  # the second block is still being written
    segment = read_local_segment(folder, 7, 2)
    assert (segment.state, segment.footer, segment.problems) == ("active", None, [])
    assert [e.entry_id for e in segment.entries] == [0, 1]


def test_flipped_byte_is_found_by_the_block_crc(tmp_path):
    folder = tmp_path / "7" / "3"
    data = bytearray(w.local_segment(folder, [w.messages(2), w.messages(2, 2)]))
    second_block = data.index(b"payload-2")
    data[second_block] ^= 0x01
    (folder / "data.log").write_bytes(bytes(data))
    segment = read_local_segment(folder, 7, 3)
    assert [e.entry_id for e in segment.entries] == [0, 1]
    [problem] = segment.problems
    assert (problem.log_id, problem.segment_id, problem.block) == (7, 3, 1)
    assert problem.what == "block CRC mismatch"
    assert problem.offset == len(w.header(0)) + len(w.block(0, 0, w.messages(2)))
    assert "log 7 segment 3 block 1" in str(problem)


def test_flipped_byte_in_a_record_header_is_found_by_the_record_crc(tmp_path):
    folder = tmp_path / "7" / "4"
    data = bytearray(w.local_segment(folder, [w.messages(2)]))
    data[5] ^= 0x01  # the header record's length
    (folder / "data.log").write_bytes(bytes(data))
    segment = read_local_segment(folder, 7, 4)
    assert segment.entries == []
    assert segment.problems and segment.problems[0].offset == 0


def test_object_layout_finalized_and_fenced(tmp_path):
    folder = tmp_path / "9" / "0"
    w.object_segment(folder, [w.messages(2), w.messages(2, 2), w.messages(1, 4)], lac=4)
    segment = read_object_segment(folder, 9, 0)
    assert segment.footer is not None
    assert (segment.state, segment.blocks, segment.footer.version) == ("finalized", 3, 6)
    assert [e.entry_id for e in segment.entries] == [0, 1, 2, 3, 4]

    fenced = tmp_path / "9" / "1"
    w.object_segment(fenced, [w.messages(2)], finalized=False, fence_at=1)
    segment = read_object_segment(fenced, 9, 1)
    assert (segment.state, [e.entry_id for e in segment.entries]) == ("fenced", [0, 1])


def test_object_layout_compacted_reads_the_merged_block(tmp_path):
    folder = tmp_path / "9" / "2"
    w.object_segment(folder, [w.messages(2), w.messages(2, 2)], compacted=True, version=5)
    segment = read_object_segment(folder, 9, 2)
    assert segment.footer is not None
    assert (segment.footer.compacted, segment.footer.version, segment.blocks) == (True, 5, 1)
    assert [e.payload for e in segment.entries] == [f"payload-{i}".encode() for i in range(4)]


def test_object_block_corruption_names_the_object(tmp_path):
    folder = tmp_path / "9" / "3"
    w.object_segment(folder, [w.messages(2), w.messages(2, 2)])
    raw = bytearray((folder / "1.blk").read_bytes())
    raw[-1] ^= 0xFF
    (folder / "1.blk").write_bytes(bytes(raw))
    segment = read_object_segment(folder, 9, 3)
    assert [e.entry_id for e in segment.entries] == [0, 1]
    [problem] = segment.problems
    assert problem.file.endswith("9/3/1.blk") and problem.block == 1


def test_layouts_are_found_below_their_prefixes(tmp_path):
    local = tmp_path / "volumes" / "milvus" / "wp" / "files" / "wp"
    w.local_segment(local / "1" / "0", [w.messages(1)])
    bucket = tmp_path / "bucket" / "files" / "wp"
    w.object_segment(bucket / "2" / "5", [w.messages(1)])
    found = [(layout, log, seg) for layout, _, log, seg in find_segments(tmp_path)]
    assert found == [("object", 2, 5), ("local", 1, 0)]
    assert [(s.log_id, s.segment_id, s.state) for s in read_segments(Path(tmp_path))] == [
        (1, 0, "finalized"),
        (2, 5, "finalized"),
    ]


def test_a_flipped_byte_in_the_index_is_found_by_its_record_crc(tmp_path):
    folder = tmp_path / "7" / "9"
    data = bytearray(w.local_segment(folder, [w.messages(2), w.messages(2, 2)]))
    index_at = len(data) - len(w.footer(2, 4, 0, 0, 0)) - len(w.index(1, 0, 0, 2, 3))
    data[index_at + 12] ^= 0x01  # the second index record's block number
    (folder / "data.log").write_bytes(bytes(data))
    segment = read_local_segment(folder, 7, 9)
    [problem] = segment.problems
    assert problem.offset == index_at and "record CRC mismatch (type 3" in problem.what
    assert [e.entry_id for e in segment.entries] == [0, 1, 2, 3]  # the blocks themselves are whole


def test_a_flipped_byte_in_footer_blk_index_is_found(tmp_path):
    folder = tmp_path / "7" / "10"
    w.object_segment(folder, [w.messages(2), w.messages(2, 2)])
    data = bytearray((folder / "footer.blk").read_bytes())
    data[12] ^= 0x01  # the first index record's payload
    (folder / "footer.blk").write_bytes(bytes(data))
    segment = read_object_segment(folder, 7, 10)
    assert segment.problems and segment.problems[0].offset == 0 and "footer.blk" in segment.problems[0].file


def test_bytes_that_are_no_segment_are_reported_not_read_as_an_empty_active_one(tmp_path):
    folder = tmp_path / "7" / "11"
    folder.mkdir(parents=True)
    (folder / "data.log").write_bytes(b"not a woodpecker segment " * 40)
    segment = read_local_segment(folder, 7, 11)
    [problem] = segment.problems
    assert (problem.offset, segment.entries) == (0, [])
    assert "expected a record of type 1, found type 97" in problem.what


def test_a_block_header_with_a_wrong_length_is_corruption_not_a_tail(tmp_path):
    folder = tmp_path / "7" / "12"
    data = bytearray(w.local_segment(folder, [w.messages(2)], finalized=False))
    start = len(w.header(0))
    data[start + 5 : start + 9] = (10_000).to_bytes(4, "little")  # the block header's length field
    (folder / "data.log").write_bytes(bytes(data))
    segment = read_local_segment(folder, 7, 12)
    [problem] = segment.problems
    assert problem.offset == start and "record of type 5 with length 10000" in problem.what
