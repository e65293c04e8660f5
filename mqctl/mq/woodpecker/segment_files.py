"""Woodpecker segment files in a folder, read-only: the canonical names of logs, segments and blocks, the size
cap, a regular file read without blocking (`read_regular_file`), the segment folders below a root
(`scan_segment_folders`, `find_segments`) and each read through segments.py's decoders (`read_local_segment`,
`read_object_segment`, `read_segments`). Bounds: see segments.py."""

from __future__ import annotations

import errno
import os
import re
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from mqctl.files import special_file_kind
from mqctl.mq.woodpecker.segment_model import Segment, UnreadableFile, check_log
from mqctl.mq.woodpecker.segments import (
    BLOCK,
    BLOCK_HEADER,
    BLOCK_HEADER_LAYOUT,
    HEADER,
    LOOKS_LIKE_DATA,
    MAX_FOOTER_BYTES,
    RECORD_HEADER,
    Data,
    read_local_bytes,
    read_object_files,
    record_frame,
    unreadable_segment,
)

# canonical names only: ASCII decimal without leading zero, and nothing after (`$` would accept a trailing newline)
NUMBER = re.compile(r"(?:0|[1-9][0-9]*)\Z", re.ASCII)
DEFAULT_MAX_FILE_BYTES = 1 << 30


def max_file_bytes() -> int:
    """The cap on one data.log, block object or footer copy: MQCTL_WOODPECKER_MAX_BYTES, else 1 GiB."""
    text = os.environ.get("MQCTL_WOODPECKER_MAX_BYTES", "").strip()
    return int(text) if text.isascii() and text.isdigit() and int(text) > 0 else DEFAULT_MAX_FILE_BYTES


class Fetched(bytearray):
    """An object's bytes with the CRC-32 of its blocks' data records, computed by the thread that fetched it
    (`checksum_blocks`, called by storage.S3Prefix in the read-ahead threads): zlib.crc32 releases the GIL for
    buffers over 5 KiB (CPython Modules/zlibmodule.c, `zlib_crc32_impl`), so the blocks fetched ahead are
    checksummed on another core while the reader decodes. `crcs` maps a byte range (start, end) to the CRC of
    exactly those bytes: segments.py compares it with the block header's CRC as it would its own."""

    def __init__(self, size: int = 0):
        super().__init__(size)
        self.crcs: dict[tuple[int, int], int] = {}

    def checksum_blocks(self, name: str) -> None:
        """For a block object (`N.blk`, `m_N.blk`: [header record] [block header][data records...]), the CRC of
        each block's data records, found from its block header's data length. Nothing is judged here: a range
        that does not fit, or a record of another type, ends the scan; the reader checks every record itself."""
        offset = 0
        if not BLOCK.fullmatch(name):
            return
        with memoryview(self) as view:
            while (frame := record_frame(self, offset, len(self))) is not None:
                _, kind, start = frame
                if kind == HEADER:
                    offset = start
                    continue
                if kind != BLOCK_HEADER or start - offset - RECORD_HEADER != BLOCK_HEADER_LAYOUT.size:
                    return
                end = start + BLOCK_HEADER_LAYOUT.unpack_from(self, offset + RECORD_HEADER)[3]
                if end > len(self):
                    return
                self.crcs[(start, end)] = zlib.crc32(view[start:end])
                offset = end


def is_canonical_number(name: str) -> bool:
    return NUMBER.fullmatch(name) is not None


def looks_numeric(name: str) -> bool:
    """A folder name meant as a log or segment id, canonical or not (`00`, `١`, `0\n`)."""
    return name.strip().isdigit()


def number_of(name: str) -> int:
    """The id a (possibly non-canonical) numeric name stands for, -1 when it has none."""
    try:
        return int(name.strip())
    except ValueError:
        return -1


def read_regular_file(path: Path, cap: int | None = None) -> Data:
    """The bytes of `path`, only when it is a regular file of at most `cap` bytes (max_file_bytes()): anything else
    (a FIFO, a directory, a device, a dangling or looping symlink) raises UnreadableFile naming it, and nothing is
    opened that could block (O_NONBLOCK; the file type is checked before and after opening)."""
    cap = max_file_bytes() if cap is None else cap
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise UnreadableFile(f"{path.name} is a dangling symbolic link") from None
        raise UnreadableFile(f"{path.name} is gone (deleted while read?)") from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise UnreadableFile(f"{path.name} is a symbolic link loop") from None
        raise UnreadableFile(f"{path.name} cannot be read: {err.strerror}") from None
    _check_regular(path.name, info.st_mode, info.st_size, cap)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise UnreadableFile(f"{path.name} cannot be opened: {err.strerror}") from None
    try:
        info = os.fstat(descriptor)
        _check_regular(path.name, info.st_mode, info.st_size, cap)
        data = bytearray(info.st_size)
        view, got = memoryview(data), 0
        try:
            while got < len(data):
                count = os.readv(descriptor, [view[got:]])
                if count == 0:
                    break
                got += count
        finally:
            view.release()
        del data[got:]  # the file shrank while read: what is there
        return data  # a bytearray: one copy of the file in memory, not two
    finally:
        os.close(descriptor)


def read_regular_range(path: Path, start: int | None, length: int) -> tuple[int, Data]:
    """(the file's size, up to `length` of its bytes from `start`; `start` None: its last `length` bytes, or all of
    a shorter file), under read_regular_file's rules (a regular file, opened without blocking): a local data.log's
    footer and index, or one block, are read this way, not the whole file."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise UnreadableFile(f"{path.name} is gone or a dangling symbolic link") from None
    except OSError as err:
        raise UnreadableFile(f"{path.name} cannot be opened: {err.strerror}") from None
    try:
        info = os.fstat(descriptor)
        kind = special_file_kind(info.st_mode)
        if kind is not None:
            raise UnreadableFile(f"{path.name} is {kind}, not a segment file: not read")
        size = info.st_size
        if start is None:
            start, length = max(0, size - length), min(size, length)
        if start < 0 or length < 0 or start + length > size:
            raise UnreadableFile(f"{path.name}: bytes {start}..{start + length} asked of {size}")
        return size, bytearray(os.pread(descriptor, length, start)) if length else bytearray()
    finally:
        os.close(descriptor)


def _check_regular(name: str, mode: int, size: int, cap: int) -> None:
    kind = special_file_kind(mode)
    if kind is not None:
        raise UnreadableFile(f"{name} is {kind}, not a segment file: not read")
    if size > cap:
        raise UnreadableFile(
            f"{name} holds {size} bytes, more than the {cap}-byte cap: not read (MQCTL_WOODPECKER_MAX_BYTES raises it)"
        )


def read_local_segment(folder: Path, log_id: int, segment_id: int) -> Segment:
    """`<logId>/<segId>/data.log` of the local layout."""
    path = folder / "data.log"
    try:
        data = read_regular_file(path)
    except UnreadableFile as err:
        return unreadable_segment(log_id, segment_id, "local", str(path), err.what)
    return read_local_bytes(data, (folder / "write.fence").exists(), log_id, segment_id, str(path))


def read_object_segment(folder: Path, log_id: int, segment_id: int) -> Segment:
    """`<logId>/<segId>/{N.blk, m_N.blk, footer.blk}` of the object layout, from a directory copy."""
    names = [path.name for path in folder.iterdir()]
    return read_object_files(
        names,
        lambda name: read_regular_file(folder / name, MAX_FOOTER_BYTES if name == "footer.blk" else None),
        log_id,
        segment_id,
        lambda name: str(folder / name) if name is not None else str(folder),
    )


def segment_layout(names: Iterable[str]) -> str | None:
    """local (a `data.log`, whatever its file type), object (a block or footer name, canonical or not), or None."""
    names = list(names)
    if "data.log" in names:
        return "local"
    if any(name == "footer.blk" or LOOKS_LIKE_DATA.fullmatch(name) for name in names):
        return "object"
    return None


def scan_segments(root: Path) -> Iterator[tuple[str, Path, int, int, str | None]]:
    """(layout, folder, log id, segment id, naming problem or None) of every segment folder below `root`; a folder
    whose log or segment name is numeric but not canonical (`00`, `01`, non-ASCII digits) comes with the problem."""
    for layout, folder, log_id, segment_id, problem, _ in scan_segment_folders(root):
        yield layout, folder, log_id, segment_id, problem


def scan_segment_folders(root: Path) -> Iterator[tuple[str, Path, int, int, str | None, frozenset[str]]]:
    """scan_segments with the names in each folder: one walk of the tree (os.walk, symlinked folders not followed,
    as Path.rglob), each folder listed once."""
    for top, folders, files in os.walk(root):
        folders.sort()
        here = Path(top)
        if here == root or not looks_numeric(here.name) or not looks_numeric(here.parent.name):
            continue
        names = frozenset([*files, *folders])
        layout = segment_layout(names)
        if layout is None:
            continue
        log_id, segment_id = number_of(here.parent.name), number_of(here.name)
        yield layout, here, log_id, segment_id, misnamed(here.parent.name, here.name), names


def misnamed(log_name: str, segment_name: str) -> str | None:
    """Why `<log>/<segment>` is not read as a segment folder (non-canonical names), or None when it is."""
    bad = [
        (kind, name) for kind, name in (("log", log_name), ("segment", segment_name)) if not is_canonical_number(name)
    ]
    if not bad:
        return None
    return (
        "; ".join(
            f"{kind} folder name {name!r} is not the canonical ASCII decimal form"
            + (f" of {number_of(name)}" if number_of(name) >= 0 else "")
            for kind, name in bad
        )
        + ": not read (Woodpecker writes canonical names; this is a stray copy or a damaged name)"
    )


def find_segments(root: Path) -> Iterator[tuple[str, Path, int, int]]:
    """(layout, folder, log id, segment id) of every canonically named segment below `root`: a folder
    `<logId>/<segId>` holding `data.log` (local) or `*.blk` objects (object layout), wherever the `wp` prefix puts
    them."""
    for layout, folder, log_id, segment_id, problem in scan_segments(root):
        if problem is None:
            yield layout, folder, log_id, segment_id


def read_segments(root: Path) -> list[Segment]:
    """Every segment below `root`, by log and segment id, cross-checked across each log."""
    found = []
    for layout, folder, log_id, segment_id in find_segments(root):
        reader = read_local_segment if layout == "local" else read_object_segment
        found.append(reader(folder, log_id, segment_id))
    check_log(found)
    return sorted(found, key=lambda s: (s.log_id, s.segment_id))
