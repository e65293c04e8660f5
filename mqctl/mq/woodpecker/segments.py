"""Woodpecker segment files, read-only: the local layout (`<logId>/<segId>/data.log`) and the object layout
(`<logId>/<segId>/N.blk`, `m_N.blk`, `footer.blk`), decoded from bytes (`read_local_bytes`, `read_object_files`)
wherever storage.py found them (a folder or an S3 bucket), or from a folder directly (`read_local_segment`,
`read_object_segment`, `read_segments`). Format from Woodpecker v0.1.x source (zilliztech/woodpecker, read for the
format only); not yet verified on a running 2.6.

Record framing (server/storage/codec/format.go and codec.go, v0.1.25): `[crc32:4][type:1][length:4][payload]`,
little-endian, the CRC (IEEE) over type, length and payload. Types: header 1 (version u16, flags u16, first
entry id i64, magic `HDR\\x01`), data 2 (the entry's bytes), index 3 (block number i32, start offset i64,
block size u32, first entry i64, last entry i64), footer 4 (total blocks i32, total records u32, total size
u64, index offset u64, index length u32, version u16, flags u16 (bit 0: compacted), magic `FTR\\x01`, and from
format version 6 the LAC i64), block header 5 (block number i32, first entry i64, last entry i64, block
length u32, block CRC u32 over the data records that follow). Version 5 footers are 36 bytes, version 6 44;
Woodpecker v0.1.1-v0.1.13 writes version 5, v0.1.14 on version 6.

Layouts (server/storage/disk/writer_impl.go, server/storage/objectstorage/writer_impl.go, v0.1.25): a block is
`[block header][data records...]`, the segment's first block preceded by the header record. Locally the blocks
follow each other in `data.log`, then the index records and the footer once the segment is finalized; beside
it `write.lock` and `write.fence` (a fenced segment). In object storage each block is an object `N.blk`, the
index records and footer are `footer.blk`, compaction writes merged blocks `m_N.blk` (footer flag compacted),
and a fence is a one-byte object `F` at the next block number (its `Fenced` user metadata is lost in a
directory copy). A data record holds a `LogMessageLayout` (proto/logstore.proto: payload 1, properties 2,
a map<string,string>).

A segment without footer is active: it is read up to its last complete block. A record or block whose CRC does
not match is reported with log, segment, block and offset, and reading that segment stops there; the index
records of a finalized segment are CRC-checked too.
"""

from __future__ import annotations

import functools
import re
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mqctl.mq.declared_protos import declare, parse

HEADER, DATA, INDEX, FOOTER, BLOCK_HEADER = 1, 2, 3, 4, 5
RECORD_HEADER = 9
HEADER_MAGIC = b"HDR\x01"
FOOTER_MAGIC = b"FTR\x01"
FOOTER_V5, FOOTER_V6 = 36, 44
FLAG_COMPACTED = 1
BLOCK = re.compile(r"^(m_)?(\d+)\.blk$")

_layout = declare(
    "mqctl.woodpecker_log",
    {
        "Property": {"key": (1, "string", False), "value": (2, "string", False)},
        "LogMessageLayout": {"payload": (1, "bytes", False), "properties": (2, "msg:Property", True)},
    },
)


class SegmentCorruption(Exception):
    def __init__(self, what: str, offset: int, block: int | None):
        super().__init__(what)
        self.what, self.offset, self.block = what, offset, block


@dataclass
class Entry:
    log_id: int
    segment_id: int
    entry_id: int
    payload: bytes
    properties: dict[str, str]
    block: int


@dataclass
class Footer:
    version: int
    blocks: int
    records: int
    compacted: bool
    lac: int | None  # last add confirmed (version 6), None when absent or unset


@dataclass
class Problem:
    """Corruption found, with where: log, segment, block, file and byte offset."""

    log_id: int
    segment_id: int
    block: int | None
    file: str
    offset: int
    what: str

    def __str__(self) -> str:
        block = f" block {self.block}" if self.block is not None else ""
        return f"log {self.log_id} segment {self.segment_id}{block}: {self.file} at byte {self.offset}: {self.what}"


@dataclass
class Segment:
    log_id: int
    segment_id: int
    layout: str  # local | object
    path: str
    state: str  # finalized (footer) | active | fenced
    footer: Footer | None
    entries: list[Entry] = field(default_factory=list)
    blocks: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def first_entry(self) -> int | None:
        return self.entries[0].entry_id if self.entries else None

    @property
    def last_entry(self) -> int | None:
        return self.entries[-1].entry_id if self.entries else None


def _record(data: bytes, offset: int, block: int | None) -> tuple[int, bytes, int] | None:
    """(type, payload, next offset) of the record at `offset`; None when the bytes end inside it."""
    if offset + RECORD_HEADER > len(data):
        return None
    crc, kind, length = struct.unpack_from("<IBI", data, offset)
    end = offset + RECORD_HEADER + length
    if end > len(data):
        return None
    if zlib.crc32(data[offset + 4 : end]) != crc:
        raise SegmentCorruption(f"record CRC mismatch (type {kind}, {length} bytes)", offset, block)
    return kind, data[offset + RECORD_HEADER : end], end


def _footer(data: bytes) -> Footer | None:
    """The footer record at the end of `data` (version 6 or 5), or None."""
    for size in (FOOTER_V6, FOOTER_V5):
        start = len(data) - RECORD_HEADER - size
        if start < 0:
            continue
        crc, kind, length = struct.unpack_from("<IBI", data, start)
        payload = data[start + RECORD_HEADER :]
        if kind != FOOTER or length != size or payload[32:36] != FOOTER_MAGIC:
            continue
        if zlib.crc32(data[start + 4 :]) != crc:
            raise SegmentCorruption("footer CRC mismatch", start, None)
        blocks, records, _size, _index_offset, _index_length, version, flags = struct.unpack_from("<iIQQIHH", payload)
        lac = struct.unpack_from("<q", payload, 36)[0] if size == FOOTER_V6 else None
        return Footer(
            version, blocks, records, bool(flags & FLAG_COMPACTED), lac if lac is not None and lac >= 0 else None
        )
    return None


def _message(payload: bytes) -> tuple[bytes, dict[str, str]]:
    layout = parse(_layout("LogMessageLayout"), payload)
    if layout is None:
        return payload, {}
    return bytes(layout.payload), {p.key: p.value for p in layout.properties}


# payload lengths of the fixed-size records (server/storage/codec/format.go v0.1.25 `HeaderRecordSize` 16,
# `BlockHeaderRecordSize` 28, `IndexRecordSize` 32, `FooterRecordSizeV5` 36, `FooterRecordSizeV6` 44): a record cut
# short is a segment still being written only when what is there is the start of the record expected there
SIZES = {HEADER: {16}, INDEX: {32}, FOOTER: {FOOTER_V5, FOOTER_V6}, BLOCK_HEADER: {28}}


def _expect(data: bytes, offset: int, kinds: tuple[int, ...], block: int | None) -> None:
    """The record starting at `offset`, whole or cut short, is one of `kinds` with its fixed length."""
    if offset + 5 <= len(data) and data[offset + 4] not in kinds:
        names = " or ".join(str(k) for k in kinds)
        raise SegmentCorruption(f"expected a record of type {names}, found type {data[offset + 4]}", offset, block)
    if offset + RECORD_HEADER <= len(data):
        kind, length = data[offset + 4], struct.unpack_from("<I", data, offset + 5)[0]
        if length not in SIZES[kind]:
            raise SegmentCorruption(
                f"record of type {kind} with length {length}, not {sorted(SIZES[kind])}", offset, block
            )


def _read_blocks(data: bytes, start: int, segment: Segment, *, expect_header: bool, stop_at_index: bool) -> int:
    """Read `[header] [block header][data...]...` from `start`; returns the offset after the last complete block."""
    offset = start
    if expect_header:
        _expect(data, offset, (HEADER,), 0)
        record = _record(data, offset, 0)
        if record is None:
            return offset
        kind, payload, after = record
        if kind != HEADER:
            raise SegmentCorruption(f"expected the header record, found type {kind}", offset, 0)
        if payload[12:16] != HEADER_MAGIC:
            raise SegmentCorruption("bad header magic", offset, 0)
        offset = after
    while offset < len(data):
        _expect(data, offset, (BLOCK_HEADER, INDEX, FOOTER) if stop_at_index else (BLOCK_HEADER,), None)
        record = _record(data, offset, None)
        if record is None:
            return offset  # a block still being written
        kind, payload, after = record
        if kind in (INDEX, FOOTER) and stop_at_index:
            return offset
        if kind != BLOCK_HEADER:
            raise SegmentCorruption(f"expected a block header, found record type {kind}", offset, None)
        number, first, last, length, block_crc = struct.unpack_from("<iqqII", payload)
        end = after + length
        if end > len(data):
            return offset  # the tail block is incomplete: an active segment
        if zlib.crc32(data[after:end]) != block_crc:
            raise SegmentCorruption("block CRC mismatch", offset, number)
        entry_id, position = first, after
        while position < end:
            record = _record(data[:end], position, number)
            if record is None:
                raise SegmentCorruption("data record runs past its block", position, number)
            kind, payload, after_record = record
            if kind != DATA:
                raise SegmentCorruption(f"expected a data record, found type {kind}", position, number)
            position = after_record
            message, properties = _message(payload)
            segment.entries.append(Entry(segment.log_id, segment.segment_id, entry_id, message, properties, number))
            entry_id += 1
        if entry_id - 1 != last:
            raise SegmentCorruption(
                f"block says entries {first}..{last}, holds {first}..{entry_id - 1}", offset, number
            )
        segment.blocks += 1
        offset = end
    return offset


def _check_index(data: bytes, start: int) -> None:
    """The index records from `start` up to the footer ending `data`: each one whole, of its type, CRC checked
    (the blocks are read without them; a damaged index still means a damaged segment). Locally they follow the last
    block directly (server/storage/disk/writer_impl.go v0.1.25 `Finalize`: the index records from the written
    offset, then the footer)."""
    offset = start
    while offset < len(data):
        record = _record(data, offset, None)
        if record is None:
            raise SegmentCorruption("index record runs past the end of the file", offset, None)
        kind, _, after = record
        if kind == FOOTER and after == len(data):
            return
        if kind != INDEX:
            raise SegmentCorruption(f"expected an index record, found type {kind}", offset, None)
        offset = after
    raise SegmentCorruption("no footer record after the index", offset, None)


def _guard(segment: Segment, file: str, action: Callable[[], object]) -> None:
    try:
        action()
    except SegmentCorruption as err:
        segment.problems.append(Problem(segment.log_id, segment.segment_id, err.block, file, err.offset, err.what))
    except struct.error as err:
        segment.problems.append(Problem(segment.log_id, segment.segment_id, None, file, 0, f"truncated record: {err}"))


def read_local_bytes(data: bytes, fenced: bool, log_id: int, segment_id: int, shown: str) -> Segment:
    """A local-layout `data.log` given as bytes (`fenced`: `write.fence` lies beside it); `shown` names it in
    problems (a path, or an object's URL)."""
    segment = Segment(log_id, segment_id, "local", shown, "active", None)

    def read() -> None:
        segment.footer = _footer(data)
        if segment.footer is not None:
            segment.state = "finalized"
        elif fenced:
            segment.state = "fenced"
        end = _read_blocks(data, 0, segment, expect_header=True, stop_at_index=True)
        if segment.footer is not None:
            _check_index(data, end)

    _guard(segment, shown, read)
    return segment


def read_object_files(
    names: Iterable[str], read: Callable[[str], bytes], log_id: int, segment_id: int, shown: Callable[[str | None], str]
) -> Segment:
    """An object-layout segment from the names of its files (`N.blk`, `m_N.blk`, `footer.blk`) and a `read(name)`
    of their bytes, wherever they are stored; `shown(name)` names a file in problems (`shown(None)` the segment).
    Blocks are read one at a time, in order, and only as far as needed."""
    names = set(names)
    blocks: dict[int, str] = {}
    merged: dict[int, str] = {}
    for name in names:
        match = BLOCK.match(name)
        if match:
            (merged if match.group(1) else blocks)[int(match.group(2))] = name
    segment = Segment(log_id, segment_id, "object", shown(None), "active", None)
    if "footer.blk" in names:

        def read_footer() -> None:
            data = read("footer.blk")
            segment.footer = _footer(data)
            if segment.footer is None:
                raise SegmentCorruption("footer.blk holds no footer record", 0, None)
            segment.state = "finalized"
            _check_index(data, 0)

        _guard(segment, shown("footer.blk"), read_footer)
    chosen = merged if segment.footer is not None and segment.footer.compacted and merged else blocks
    for number in sorted(chosen):
        name = chosen[number]
        data = read(name)
        if data == b"F":
            segment.state = "fenced" if segment.state == "active" else segment.state
            break
        if segment.problems:
            break
        first = number == min(chosen)
        _guard(
            segment,
            shown(name),
            functools.partial(_read_blocks, data, 0, segment, expect_header=first, stop_at_index=False),
        )
    return segment


def read_local_segment(folder: Path, log_id: int, segment_id: int) -> Segment:
    """`<logId>/<segId>/data.log` of the local layout."""
    path = folder / "data.log"
    return read_local_bytes(path.read_bytes(), (folder / "write.fence").exists(), log_id, segment_id, str(path))


def read_object_segment(folder: Path, log_id: int, segment_id: int) -> Segment:
    """`<logId>/<segId>/{N.blk, m_N.blk, footer.blk}` of the object layout, from a directory copy."""
    names = [path.name for path in folder.iterdir()]
    return read_object_files(
        names,
        lambda name: (folder / name).read_bytes(),
        log_id,
        segment_id,
        lambda name: str(folder / name) if name is not None else str(folder),
    )


def find_segments(root: Path) -> Iterator[tuple[str, Path, int, int]]:
    """(layout, folder, log id, segment id) of every segment below `root`: a folder `<logId>/<segId>` holding
    `data.log` (local) or `*.blk` objects (object layout), wherever the `wp` prefix puts them."""
    for folder in sorted(root.rglob("*")):
        if not folder.is_dir() or not folder.name.isdigit() or not folder.parent.name.isdigit():
            continue
        log_id, segment_id = int(folder.parent.name), int(folder.name)
        if (folder / "data.log").is_file():
            yield "local", folder, log_id, segment_id
        elif any(BLOCK.match(p.name) or p.name == "footer.blk" for p in folder.iterdir()):
            yield "object", folder, log_id, segment_id


def read_segments(root: Path) -> list[Segment]:
    """Every segment below `root`, by log and segment id."""
    found = []
    for layout, folder, log_id, segment_id in find_segments(root):
        reader = read_local_segment if layout == "local" else read_object_segment
        found.append(reader(folder, log_id, segment_id))
    return sorted(found, key=lambda s: (s.log_id, s.segment_id))
