"""A finalized Woodpecker segment summarized from its footer and index alone, as upstream's reader trusts them
(zilliztech/woodpecker v0.1.35: server/storage/objectstorage/reader_impl.go:108 `tryReadFooterAndIndex` reads
`footer.blk` and the index before any block; server/storage/disk/reader_impl.go:194 and :253 read a local file's
last bytes for the footer, then the index at the offset it gives; server/storage/codec/format.go for the records): the object layout's `footer.blk` fetched whole, the local
layout's `data.log` read only at its tail (the footer record, then the index records it points at). No data block is
read; the one entry a caller needs (the log's first or last) is read from the one block the index says holds it
(`end_entry`), with its block CRC checked.

What the footer and index say is cross-checked against the listing without reading data: the footer's block count
against its index records, block numbers 0..n-1 with entry ids running on without gap, every indexed block present
as a listed object (`N.blk`, or `m_N.blk` when compacted), no listed block the index does not name (upstream's
one-byte fence object right after the counted blocks excepted, fetched to tell), the LAC not past the last indexed
entry, the index ending where the footer starts. A mismatch is a Problem of the segment, never a silently wrong
count. Corruption inside a data block is not seen this way: a verifying read (the whole segment, segments.py) is.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from mqctl.mq.woodpecker.segment_model import (
    Entry,
    Segment,
    SegmentCorruption,
    SegmentSummary,
    UnreadableFile,
)
from mqctl.mq.woodpecker.segments import (
    BLOCK,
    FENCE,
    FOOTER,
    FOOTER_V5,
    FOOTER_V6,
    MAX_FOOTER_BYTES,
    RECORD_HEADER,
    Data,
    _footer,
    _guard,
    _read_blocks,
    index_records,
)

# what a local data.log's tail read fetches: the footer record and, for up to about 1,500 blocks, the index records
# before it (a larger index is read in a second range)
TAIL = 64 << 10
Index = list[tuple[int, int, int, int, int]]  # (block, start offset, size, first entry, last entry)


def _summary(segment: Segment, index: Index, read: str = "footer") -> SegmentSummary:
    first = index[0][3] if index else None
    last = index[-1][4] if index else None
    entries = 0 if first is None or last is None else last - first + 1
    return SegmentSummary(
        segment.segment_id,
        segment.layout,
        segment.state,
        len(index),
        entries,
        None,
        first,
        last,
        segment.footer,
        segment.problems,
        read,
        spans=list(index),
    )


def _check(segment: Segment, index: Index, file: str) -> bool:
    """The footer and its index agree with each other (counts, numbering, entry ids, LAC)."""
    footer = segment.footer
    assert footer is not None
    if footer.blocks != len(index):
        segment.problem(file, f"footer says {footer.blocks} block(s), its index lists {len(index)}")
        return False
    following = index[0][3] if index else 0
    for position, (number, _start, size, first, last) in enumerate(index):
        if number != position:
            segment.problem(file, f"index lists block {number} where block {position} comes", block=position)
            return False
        if first != following or last < first or size == 0:
            segment.problem(
                file,
                f"index says block {number} holds entries {first}..{last} ({size} bytes), entry {following} comes "
                "next (entries missing, repeated or an empty block)",
                block=number,
            )
            return False
        following = last + 1
    last_entry = index[-1][4] if index else None
    if footer.lac is not None and (last_entry is None or footer.lac > last_entry):
        segment.problem(
            file,
            f"footer LAC (last add confirmed) is entry {footer.lac}, its index ends at entry "
            f"{'none' if last_entry is None else last_entry}: entries past it missing",
        )
        return False
    return True


def block_names(names: set[str] | frozenset[str], compacted: bool) -> tuple[dict[int, str], bool]:
    """The block objects the reader uses, by number, and whether they are the merged ones: `m_N.blk` when the footer
    says compacted and some are listed, else `N.blk` (as segments.read_object_files chooses)."""
    plain: dict[int, str] = {}
    merged: dict[int, str] = {}
    for name in names:
        match = BLOCK.fullmatch(name)
        if match:
            (merged if match.group(1) else plain)[int(match.group(2))] = name
    return (merged, True) if compacted and merged else (plain, False)


def object_summary(
    names: frozenset[str], read: Callable[[str], Data], log_id: int, segment_id: int, shown: Callable[[str | None], str]
) -> SegmentSummary:
    """An object-layout segment with a `footer.blk` listed: that object only is fetched (and a fence-sized object
    right after the counted blocks, to tell a fence from an uncounted block)."""
    segment = Segment(log_id, segment_id, "object", shown(None), "finalized", None)
    index: Index = []
    file = shown("footer.blk")

    def read_footer() -> None:
        data = read("footer.blk")
        if len(data) > MAX_FOOTER_BYTES:
            raise UnreadableFile(f"{len(data)} bytes, more than a footer object holds ({MAX_FOOTER_BYTES})")
        segment.footer = _footer(data)
        if segment.footer is None:
            raise SegmentCorruption("footer.blk holds no footer record", 0, None)
        index.extend(index_records(data, 0))

    if not _guard(segment, file, read_footer) or not _check(segment, index, file):
        return _summary(segment, index if not segment.problems else [])
    assert segment.footer is not None
    chosen, merged = block_names(names, segment.footer.compacted)
    prefix = "m_" if merged else ""
    for number, *_ in index:
        if number not in chosen:
            segment.problem(
                shown(f"{prefix}{number}.blk"),
                f"{prefix}{number}.blk is not in the listing, yet the footer's index names it: its entries are lost",
                block=number,
            )
            return _summary(segment, [])
    for number in sorted(set(chosen) - {n for n, *_ in index}):
        name = chosen[number]
        if number == segment.footer.blocks and not merged and number == max(chosen):
            # upstream's writer leaves the fence of a segment it sealed right after the counted blocks
            # (segments.read_object_files): a one-byte object, fetched to tell it from a block
            fetched = _read_or_problem(segment, shown(name), read, name)
            if fetched is None:
                return _summary(segment, [])
            if bytes(fetched) == FENCE:
                continue
        segment.problem(
            shown(name),
            f"{name} is listed but the footer's index does not name it ({segment.footer.blocks} block(s) counted): "
            "entries the footer does not count",
            block=number,
        )
        return _summary(segment, index)
    return _summary(segment, index)


def _read_or_problem(segment: Segment, file: str, read: Callable[[str], Data], name: str) -> Data | None:
    box: list[Data] = []
    ok = _guard(segment, file, lambda: box.append(read(name)))
    return box[0] if ok else None


def local_summary(
    size: int, tail: Data, read_range: Callable[[int, int], Data], log_id: int, segment_id: int, shown: str
) -> SegmentSummary | None:
    """A local-layout data.log from `tail`, its last bytes (TAIL of them, or all of a shorter file): None when it has
    no footer (an active or fenced segment: read whole by the caller), else its summary from the footer and the index
    records before it (from `tail` when they are in it, else `read_range(start, length)`)."""
    segment = Segment(log_id, segment_id, "local", shown, "finalized", None)
    try:
        footer = _footer(tail)
    except SegmentCorruption:
        footer = None  # a tail that fails the footer's CRC: the whole read names it exactly
    if footer is None:
        return None
    segment.footer = footer
    length = next(
        n
        for n in (FOOTER_V6, FOOTER_V5)
        if len(tail) >= RECORD_HEADER + n and _is_footer(tail, len(tail) - RECORD_HEADER - n, n)
    )
    footer_start = size - RECORD_HEADER - length
    index: Index = []

    def read_index() -> None:
        if footer.index_offset + footer.index_length != footer_start or footer.index_length > MAX_FOOTER_BYTES:
            raise SegmentCorruption(
                f"footer says its index is bytes {footer.index_offset}..{footer.index_offset + footer.index_length}, "
                f"the footer starts at {footer_start}",
                footer_start,
                None,
            )
        tail_start = size - len(tail)
        if footer.index_offset >= tail_start:
            at = footer.index_offset - tail_start
            data: Data = tail[at : at + footer.index_length]
        else:
            data = read_range(footer.index_offset, footer.index_length)
        index.extend(index_records(data, 0))

    if not _guard(segment, shown, read_index) or not _check(segment, index, shown):
        return _summary(segment, [])
    return _summary(segment, index)


def _is_footer(data: Data, start: int, length: int) -> bool:
    kind, stated = struct.unpack_from("<BI", data, start + 4)
    return bool(kind == FOOTER and stated == length)


def end_entry(
    summary: SegmentSummary,
    log_id: int,
    fetch: Callable[[int, int, int], Data],
    shown_block: Callable[[int], str],
    *,
    last: bool,
) -> Entry | None:
    """The first (or last) entry of a footer-summarized segment, from the one block holding it: `fetch(block,
    start, size)` returns that block's bytes (the object, or the range of data.log; block 0 with the segment's
    header record before it). The block's CRC and its entries are checked as a whole read checks them; a mismatch
    with the index becomes a Problem of the summary, naming the file as `shown_block(block)` does (the block's
    object, or data.log), as a whole read names it."""
    if not summary.spans:
        return None
    number, _start, _size, first, final = summary.spans[-1 if last else 0]
    shown = shown_block(number)
    segment = Segment(log_id, summary.segment_id, summary.layout, shown, summary.state, summary.footer)
    segment.blocks = number
    segment.next_entry = first if number else None

    def read() -> None:
        data = fetch(number, _start, _size)
        _read_blocks(data, 0, segment, expect_header=number == 0, stop_at_index=False)
        if segment.spans != [(number, first, final)]:
            raise SegmentCorruption(
                f"the index says block {number} holds entries {first}..{final}, the block read holds "
                + (f"{segment.spans[0][1]}..{segment.spans[-1][2]}" if segment.spans else "none"),
                0,
                number,
            )

    if not _guard(segment, shown, read):
        summary.problems.extend(segment.problems)
        return None
    return segment.entries[-1 if last else 0]
