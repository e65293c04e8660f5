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
records of a finalized segment are CRC-checked too. A block's CRC covers its data records whole, their own CRCs
included, so those are not computed a second time: each byte is checksummed once (`_read_entries`).

The structure around the CRCs is cross-checked as well, since a CRC cannot see what is missing: block numbers run
0, 1, 2... (in each block header and, in the object layout, in the object names), entry ids run on from the
header's first entry without gap or repeat across blocks, no block is empty, a footer's block count and index
records agree with the blocks read, a v6 footer's LAC is not past the last readable entry, a fence object only
ends an unfinalized segment, and file and folder names are the canonical ASCII decimal form (`00`, `01.blk`, `١`
or a key ending in a newline is named and not read, never counted twice). Across the segments of a log
(segment_model.py `check_log`): a segment without footer that another segment follows is a completed segment cut short or whose
footer is lost, and a gap in the segment ids is a lost segment. Each finding is a Problem naming log, segment,
block and file: the reader never answers with fewer or more entries than the files hold without one.

Bounds: a local file is read only when `stat` says it is a regular file (a FIFO, a device, a directory, a dangling
or looping symlink is a named Problem, never opened), opened with O_NONBLOCK, and no file or object is read past
MAX_FILE_BYTES (1 GiB by default, MQCTL_WOODPECKER_MAX_BYTES to change it; a block's data length is a u32, so the
format alone would allow 4 GiB; a segment rolls at 256 MiB by default, so no file Woodpecker writes comes near the
cap) or, for `footer.blk`, MAX_FOOTER_BYTES (64 MiB: 1.6 million 41-byte index records). Reading is linear in the
bytes: records are decoded in place, never from a copied prefix.
"""

from __future__ import annotations

import functools
import re
import struct
import zlib
from collections.abc import Callable, Iterable

from mqctl.mq.declared_protos import declare, parse
from mqctl.mq.woodpecker.segment_model import Entry, Footer, Problem, Segment, SegmentCorruption, UnreadableFile

HEADER, DATA, INDEX, FOOTER, BLOCK_HEADER = 1, 2, 3, 4, 5
RECORD_HEADER = 9
# a block header record's payload: block number, first and last entry id, data bytes that follow, their CRC-32
BLOCK_HEADER_LAYOUT = struct.Struct("<iqqII")
HEADER_MAGIC = b"HDR\x01"
FOOTER_MAGIC = b"FTR\x01"
FOOTER_V5, FOOTER_V6 = 36, 44
FLAG_COMPACTED = 1
BLOCK = re.compile(r"(m_)?(0|[1-9][0-9]*)\.blk\Z", re.ASCII)
# names that look like segment data but are not canonical (`01.blk`, `1.blk\n`, `١.blk`, `data.log~`): named, not read
LOOKS_LIKE_DATA = re.compile(r".*\.blk.*|.*footer.*|data\.log.+", re.DOTALL)
MAX_FOOTER_BYTES = 64 << 20
FENCE = b"F"
Data = bytes | bytearray  # a file's bytes; read into a bytearray once, never copied whole again

_layout = declare(
    "mqctl.woodpecker_log",
    {
        "Property": {"key": (1, "string", False), "value": (2, "string", False)},
        "LogMessageLayout": {"payload": (1, "bytes", False), "properties": (2, "msg:Property", True)},
    },
)


def record_frame(data: Data, offset: int, limit: int) -> tuple[int, int, int] | None:
    """(CRC, type, next offset) from the framing of the record at `offset`; None when the bytes up to `limit` end
    inside it. Nothing is checked or copied: the one parse of a record's framing, for the readers and the CRC scan of
    fetched objects (segment_files.Fetched)."""
    if offset + RECORD_HEADER > limit:
        return None
    crc, kind, length = struct.unpack_from("<IBI", data, offset)
    end = offset + RECORD_HEADER + length
    return None if end > limit else (crc, kind, end)


def _record(data: Data, offset: int, block: int | None, limit: int | None = None) -> tuple[int, bytes, int] | None:
    """(type, payload, next offset) of the record at `offset`, its CRC checked; None when the bytes (up to `limit`)
    end inside it. Nothing before `offset` is copied: a segment is read in time linear in its bytes."""
    frame = record_frame(data, offset, len(data) if limit is None else limit)
    if frame is None:
        return None
    crc, kind, end = frame
    view = memoryview(data)
    try:
        if zlib.crc32(view[offset + 4 : end]) != crc:
            raise SegmentCorruption(
                f"record CRC mismatch (type {kind}, {end - offset - RECORD_HEADER} bytes)", offset, block
            )
        return kind, bytes(view[offset + RECORD_HEADER : end]), end
    finally:
        view.release()


def _footer(data: Data) -> Footer | None:
    """The footer record at the end of `data` (version 6 or 5), or None."""
    for size in (FOOTER_V6, FOOTER_V5):
        start = len(data) - RECORD_HEADER - size
        if start < 0:
            continue
        crc, kind, length = struct.unpack_from("<IBI", data, start)
        payload = bytes(data[start + RECORD_HEADER :])
        if kind != FOOTER or length != size or payload[32:36] != FOOTER_MAGIC:
            continue
        if zlib.crc32(bytes(data[start + 4 :])) != crc:
            raise SegmentCorruption("footer CRC mismatch", start, None)
        blocks, records, total, index_offset, index_length, version, flags = struct.unpack_from("<iIQQIHH", payload)
        lac = struct.unpack_from("<q", payload, 36)[0] if size == FOOTER_V6 else None
        return Footer(
            version,
            blocks,
            records,
            bool(flags & FLAG_COMPACTED),
            lac if lac is not None and lac >= 0 else None,
            total,
            index_offset,
            index_length,
        )
    return None


@functools.cache
def _layout_class() -> object:
    """The LogMessageLayout class, looked up once (not once per entry)."""
    return _layout("LogMessageLayout")


def _message(payload: bytes | memoryview, entry_id: int, offset: int, block: int) -> tuple[bytes, dict[str, str]]:
    """The LogMessageLayout of one entry. One that does not parse (invalid UTF-8 in a property, a broken field) is
    reported: read as a bare payload it would show as an undecodable message nobody was warned about."""
    layout = parse(_layout_class(), payload)
    if layout is None:
        raise SegmentCorruption(
            f"entry {entry_id}: its LogMessageLayout (payload and properties) does not parse", offset, block
        )
    return bytes(layout.payload), {p.key: p.value for p in layout.properties}


# payload lengths of the fixed-size records (server/storage/codec/format.go v0.1.25 `HeaderRecordSize` 16,
# `BlockHeaderRecordSize` 28, `IndexRecordSize` 32, `FooterRecordSizeV5` 36, `FooterRecordSizeV6` 44): a record cut
# short is a segment still being written only when what is there is the start of the record expected there
SIZES = {HEADER: {16}, INDEX: {32}, FOOTER: {FOOTER_V5, FOOTER_V6}, BLOCK_HEADER: {28}}


def _expect(data: Data, offset: int, kinds: tuple[int, ...], block: int | None) -> None:
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


def _block_crc(data: Data, start: int, end: int) -> int:
    """The CRC of data[start:end]: the one its fetching thread computed (segment_files.Fetched), else computed here."""
    crcs: dict[tuple[int, int], int] = getattr(data, "crcs", {})
    known = crcs.get((start, end))
    if known is not None:
        return known
    with memoryview(data) as view:
        return zlib.crc32(view[start:end])


def _read_entries(data: Data, start: int, end: int, number: int, first: int, segment: Segment) -> int:
    """The data records of block `number` (bytes start..end, whose block CRC matched) as entries `first` on;
    returns the entry id after the last. The block CRC covers every byte of these records, their own CRCs
    included, so each record's CRC is not computed again; its framing and type are checked, and each entry's
    LogMessageLayout is parsed from a view of the block (its payload copied out once, by the parser)."""
    entry_id, position = first, start
    with memoryview(data) as view:
        while position < end:
            frame = record_frame(data, position, end)
            if frame is None:
                raise SegmentCorruption("data record runs past its block", position, number)
            _, kind, after = frame
            if kind != DATA:
                raise SegmentCorruption(f"expected a data record, found type {kind}", position, number)
            payload = view[position + RECORD_HEADER : after]
            try:
                message, properties = _message(payload, entry_id, position, number)
            finally:
                payload.release()
            segment.entries.append(Entry(segment.log_id, segment.segment_id, entry_id, message, properties, number))
            entry_id += 1
            position = after
    return entry_id


def _read_blocks(data: Data, start: int, segment: Segment, *, expect_header: bool, stop_at_index: bool) -> int:
    """Read `[header] [block header][data...]...` from `start`; returns the offset after the last complete block.
    Block numbers must run on from the blocks already read, entry ids on from the last entry read."""
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
        segment.next_entry = struct.unpack_from("<q", payload, 4)[0]
        offset = after
    elif segment.blocks == 0 and segment.next_entry is None:
        raise SegmentCorruption("the first block does not start with the segment's header record", offset, 0)
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
        number, first, last, length, block_crc = BLOCK_HEADER_LAYOUT.unpack_from(payload)
        end = after + length
        if end > len(data):
            return offset  # the tail block is incomplete: an active segment
        if number != segment.blocks:
            raise SegmentCorruption(
                f"block header says block {number} where block {segment.blocks} comes (a block missing, swapped "
                "or repeated)",
                offset,
                number,
            )
        if segment.next_entry is not None and first != segment.next_entry:
            raise SegmentCorruption(
                f"block starts at entry {first} where entry {segment.next_entry} comes (entries missing, out of "
                "order or repeated)",
                offset,
                number,
            )
        if last < first or length == 0:
            raise SegmentCorruption(f"empty block (entries {first}..{last}, {length} data bytes)", offset, number)
        if _block_crc(data, after, end) != block_crc:
            raise SegmentCorruption("block CRC mismatch", offset, number)
        entry_id = _read_entries(data, after, end, number, first, segment)
        if entry_id - 1 != last:
            raise SegmentCorruption(
                f"block says entries {first}..{last}, holds {first}..{entry_id - 1}", offset, number
            )
        segment.blocks += 1
        segment.spans.append((number, first, last))
        segment.next_entry = last + 1
        offset = end
    return offset


def index_records(data: Data, start: int) -> list[tuple[int, int, int, int, int]]:
    """Every index record from `start` up to the footer ending `data` (or the end of `data` when it holds index
    records only), each CRC-checked: (block, start offset, block size, first entry, last entry)."""
    offset, found = start, list[tuple[int, int, int, int, int]]()
    while offset < len(data):
        record = _record(data, offset, None)
        if record is None:
            raise SegmentCorruption("index record runs past the end of the index", offset, None)
        kind, payload, after = record
        if kind == FOOTER and after == len(data):
            return found
        if kind != INDEX or len(payload) != 32:
            raise SegmentCorruption(f"expected an index record, found type {kind}", offset, None)
        number, block_start, size, first, last = struct.unpack_from("<iqIqq", payload)
        found.append((number, block_start, size, first, last))
        offset = after
    return found


def _check_index(data: Data, start: int) -> list[tuple[int, int, int]]:
    """The index records from `start` up to the footer ending `data`: each one whole, of its type, CRC checked
    (the blocks are read without them; a damaged index still means a damaged segment). Locally they follow the last
    block directly (server/storage/disk/writer_impl.go v0.1.25 `Finalize`: the index records from the written
    offset, then the footer). Returns (block, first entry, last entry) of each."""
    offset, found = start, list[tuple[int, int, int]]()
    while offset < len(data):
        record = _record(data, offset, None)
        if record is None:
            raise SegmentCorruption("index record runs past the end of the file", offset, None)
        kind, payload, after = record
        if kind == FOOTER and after == len(data):
            return found
        if kind != INDEX or len(payload) != 32:
            raise SegmentCorruption(f"expected an index record, found type {kind}", offset, None)
        number, _start, _size, first, last = struct.unpack_from("<iqIqq", payload)
        found.append((number, first, last))
        offset = after
    raise SegmentCorruption("no footer record after the index", offset, None)


def _against_footer(segment: Segment, index: list[tuple[int, int, int]], file: str) -> None:
    """A finalized segment read whole must hold what its footer and index say: the same blocks with the same
    entries, and no fewer entries than the LAC confirms."""
    footer = segment.footer
    if footer is None or segment.problems:
        return
    if footer.blocks != len(index):
        segment.problem(file, f"footer says {footer.blocks} block(s), its index lists {len(index)}")
    elif footer.blocks != segment.blocks:
        segment.problem(
            file,
            f"footer says {footer.blocks} block(s), {segment.blocks} read: "
            + (f"blocks {segment.blocks}..{footer.blocks - 1} missing" if segment.blocks < footer.blocks else "more"),
        )
    elif index != segment.spans:
        wrong = next(i for i, (a, b) in enumerate(zip(index, segment.spans, strict=True)) if a != b)
        listed, read = index[wrong], segment.spans[wrong]
        segment.problem(
            file,
            f"index lists block {listed[0]} with entries {listed[1]}..{listed[2]}, the block read is block "
            f"{read[0]} with entries {read[1]}..{read[2]}",
            block=read[0],
        )
    last = segment.last_entry
    if footer.lac is not None and (last is None or footer.lac > last):
        segment.problem(
            file,
            f"footer LAC (last add confirmed) is entry {footer.lac}, the last readable entry is "
            f"{'none' if last is None else last}: entries {0 if last is None else last + 1}..{footer.lac} missing",
        )


def _guard(segment: Segment, file: str, action: Callable[[], object]) -> bool:
    """Run `action`; a corruption becomes a Problem of `segment` (False: stop reading it)."""
    try:
        action()
    except SegmentCorruption as err:
        segment.problems.append(Problem(segment.log_id, segment.segment_id, err.block, file, err.offset, err.what))
        return False
    except UnreadableFile as err:
        segment.problems.append(Problem(segment.log_id, segment.segment_id, None, file, 0, err.what))
        return False
    except struct.error as err:
        segment.problems.append(Problem(segment.log_id, segment.segment_id, None, file, 0, f"truncated record: {err}"))
        return False
    return True


def read_local_bytes(data: Data, fenced: bool, log_id: int, segment_id: int, shown: str) -> Segment:
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
            _against_footer(segment, _check_index(data, end), shown)

    _guard(segment, shown, read)
    return segment


def unreadable_segment(log_id: int, segment_id: int, layout: str, shown: str, what: str) -> Segment:
    """A segment whose data file cannot be read (what says why): no entries, one Problem."""
    segment = Segment(log_id, segment_id, layout, shown, "active", None)
    segment.problem(shown, what)
    return segment


def read_object_files(
    names: Iterable[str], read: Callable[[str], Data], log_id: int, segment_id: int, shown: Callable[[str | None], str]
) -> Segment:
    """An object-layout segment from the names of its files (`N.blk`, `m_N.blk`, `footer.blk`) and a `read(name)`
    of their bytes, wherever they are stored; `shown(name)` names a file in problems (`shown(None)` the segment).
    Blocks are read one at a time, in order, and only as far as needed: from 0 on without a gap, the one-byte fence
    object only at the end of a segment without footer."""
    names = set(names)
    blocks: dict[int, str] = {}
    merged: dict[int, str] = {}
    segment = Segment(log_id, segment_id, "object", shown(None), "active", None)
    for name in sorted(names):
        match = BLOCK.fullmatch(name)
        if match:
            (merged if match.group(1) else blocks)[int(match.group(2))] = name
        elif name != "footer.blk" and LOOKS_LIKE_DATA.fullmatch(name):
            segment.problem(
                shown(name),
                f"{name!r} is not a canonical block name (N.blk, N in ASCII decimal): not read",
                loses_entries=False,
            )
    index: list[tuple[int, int, int]] = []
    if "footer.blk" in names:

        def read_footer() -> None:
            data = read("footer.blk")
            if len(data) > MAX_FOOTER_BYTES:
                raise UnreadableFile(f"{len(data)} bytes, more than a footer object holds ({MAX_FOOTER_BYTES})")
            segment.footer = _footer(data)
            if segment.footer is None:
                raise SegmentCorruption("footer.blk holds no footer record", 0, None)
            segment.state = "finalized"
            index.extend(_check_index(data, 0))

        if not _guard(segment, shown("footer.blk"), read_footer):
            return segment
    chosen = merged if segment.footer is not None and segment.footer.compacted and merged else blocks
    numbers = sorted(chosen)
    for position, number in enumerate(numbers):
        name = chosen[number]
        if number != position:
            what = f"{'m_' if chosen is merged else ''}{position}.blk is missing ({name} follows)"
            segment.problem(shown(name), what + ": the blocks after it are not read", block=position)
            return segment
        fetched = _fetch(segment, shown(name), read, name)
        if fetched is None:
            return segment
        data = fetched
        if data == FENCE:
            if segment.footer is not None:
                # Upstream's writer leaves the fence of a segment it sealed, right after the blocks its footer
                # counts (seen in the object layout Woodpecker v0.1.13 and v0.1.37 wrote: tests/fixtures/upstream):
                # normal there; anywhere else a fence in a finalized segment hides blocks the footer does not count.
                if number != numbers[-1] or number != segment.footer.blocks:
                    segment.problem(
                        shown(name),
                        f"a fence object in a finalized segment at block {number}, not after its "
                        f"{segment.footer.blocks} footer-counted block(s)",
                        block=number,
                    )
            elif number != numbers[-1]:
                segment.problem(shown(name), f"a fence object with blocks after it ({numbers[-1]}.blk)", block=number)
            else:
                segment.state = "fenced"
            return segment
        if not data:
            segment.problem(shown(name), "empty block object", block=number)
            return segment
        before = segment.blocks
        ok = _guard(
            segment,
            shown(name),
            functools.partial(_read_blocks, data, 0, segment, expect_header=position == 0, stop_at_index=False),
        )
        if not ok:
            return segment
        tail_being_copied = segment.blocks == before and segment.footer is None and number == numbers[-1]
        if segment.blocks != before + 1 and not tail_being_copied:  # a copy taken mid-write may cut the last one
            segment.problem(
                shown(name),
                f"holds {segment.blocks - before} whole block(s), not one"
                + (": cut short" if segment.blocks == before else ""),
                block=number,
            )
            return segment
    _against_footer(segment, index, shown("footer.blk"))
    return segment


def _fetch(segment: Segment, file: str, read: Callable[[str], Data], name: str) -> Data | None:
    """read(name), or None once an unreadable file became a Problem."""
    try:
        return read(name)
    except UnreadableFile as err:
        segment.problem(file, err.what)
        return None
