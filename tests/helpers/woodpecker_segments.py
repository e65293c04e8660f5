"""Woodpecker segment files written from the layout in zilliztech/woodpecker server/storage/codec (format.go,
codec.go) and the disk/objectstorage writers (v0.1.25), independently of mqctl's reader: record
`[crc32 IEEE:4][type:1][length:4][payload]` little-endian, header 1, data 2, index 3, footer 4, block header 5;
a data record holds a LogMessageLayout (payload 1, properties 2 as map entries key 1 / value 2)."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from tests.helpers.protowire import field_bytes


def record(kind: int, payload: bytes) -> bytes:
    body = bytes([kind]) + struct.pack("<I", len(payload)) + payload
    return struct.pack("<I", zlib.crc32(body)) + body


def header(first_entry: int, version: int = 6) -> bytes:
    return record(1, struct.pack("<HHq", version, 0, first_entry) + b"HDR\x01")


def message(payload: bytes, properties: dict[str, str]) -> bytes:
    return field_bytes(1, payload) + b"".join(
        field_bytes(2, field_bytes(1, k) + field_bytes(2, v)) for k, v in properties.items()
    )


def block(number: int, first_entry: int, messages: list[bytes]) -> bytes:
    data = b"".join(record(2, m) for m in messages)
    last = first_entry + len(messages) - 1
    return record(5, struct.pack("<iqqII", number, first_entry, last, len(data), zlib.crc32(data))) + data


def index(number: int, offset: int, size: int, first: int, last: int) -> bytes:
    return record(3, struct.pack("<iqIqq", number, offset, size, first, last))


def footer(
    blocks: int,
    records: int,
    size: int,
    index_offset: int,
    index_length: int,
    *,
    version: int = 6,
    compacted: bool = False,
    lac: int = -1,
) -> bytes:
    payload = struct.pack("<iIQQIHH", blocks, records, size, index_offset, index_length, version, int(compacted))
    payload += b"FTR\x01"
    if version >= 6:
        payload += struct.pack("<q", lac)
    return record(4, payload)


def messages(count: int, start: int = 0) -> list[bytes]:
    return [
        message(f"payload-{i}".encode(), {"_t": "insert", "_v": "1", "_tt": str(1000 + i)})
        for i in range(start, start + count)
    ]


def local_segment(
    folder: Path, blocks: list[list[bytes]], *, finalized: bool = True, version: int = 6, lac: int = -1
) -> bytes:
    """`data.log`: header, blocks, then (finalized) index records and the footer."""
    folder.mkdir(parents=True, exist_ok=True)
    out = header(0, version)
    first, spans = 0, []
    for number, block_messages in enumerate(blocks):
        start = len(out)
        out += block(number, first, block_messages)
        spans.append((number, start, len(out) - start, first, first + len(block_messages) - 1))
        first += len(block_messages)
    if finalized:
        index_offset = len(out)
        out += b"".join(index(*span) for span in spans)
        out += footer(len(blocks), first, len(out), index_offset, len(out) - index_offset, version=version, lac=lac)
    (folder / "data.log").write_bytes(out)
    return out


def object_segment(
    folder: Path,
    blocks: list[list[bytes]],
    *,
    finalized: bool = True,
    compacted: bool = False,
    fence_at: int | None = None,
    version: int = 6,
    lac: int = -1,
) -> None:
    """`N.blk` per block (the first with the header), `footer.blk`; `compacted` also writes one merged
    `m_0.blk`; `fence_at` writes the one-byte fence object there."""
    folder.mkdir(parents=True, exist_ok=True)
    first, spans = 0, []
    for number, block_messages in enumerate(blocks):
        data = (header(0, version) if number == 0 else b"") + block(number, first, block_messages)
        (folder / f"{number}.blk").write_bytes(data)
        spans.append((number, 0, len(data), first, first + len(block_messages) - 1))
        first += len(block_messages)
    if fence_at is not None:
        (folder / f"{fence_at}.blk").write_bytes(b"F")
    if compacted:
        every = [m for b in blocks for m in b]
        merged = header(0, version) + block(0, 0, every)
        (folder / "m_0.blk").write_bytes(merged)
        spans = [(0, 0, len(merged), 0, len(every) - 1)]
    if finalized:
        out = b"".join(index(*span) for span in spans)
        out += footer(len(spans), first, 0, 0, len(out), version=version, compacted=compacted, lac=lac)
        (folder / "footer.blk").write_bytes(out)


def object_segment_at(root: Path, blocks: int = 3, **options: object) -> Path:
    """An object-layout segment of `blocks` blocks of two messages at `<root>/7/0` (log 7, segment 0)."""
    folder = root / "7" / "0"
    object_segment(folder, [messages(2, 2 * i) for i in range(blocks)], **options)  # type: ignore[arg-type]
    return folder


def missing_middle_block(root: Path) -> None:
    """The segment of object_segment_at with its middle block object gone."""
    (object_segment_at(root) / "1.blk").unlink()
