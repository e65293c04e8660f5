"""A natsmq store read from disk without a server: which streams its folders hold and the sequences in
their message blocks, to check what a nats-server recovers from them (read-only, standard library only).

Layout (facts §3): `<storeDir>/jetstream/$G/streams/<stream>/{meta.inf, msgs/N.blk, obs/}`. A block is a
run of records: length (uint32, high bit: has headers), sequence (uint64), timestamp (int64), subject
length (uint16), subject, [headers], payload, 8-byte checksum, all little-endian. nats-server marks erased
records with bit 63 and, from 2.10, writes delete tombstones with bit 62 of the sequence. A server before
2.9.22 does not know tombstones and reads one as a message with sequence 2^62+N (nats-server commit
8841432, "Allow 2.10 tombstones to be skipped ... on downgrade from 2.10 to 2.9"; Milvus 2.3 embeds 2.9.17).
"""

from __future__ import annotations

import json
import struct
from array import array
from dataclasses import dataclass, field
from pathlib import Path

RECORD_HEADER = struct.Struct("<IQqH")  # length, sequence, timestamp, subject length
CHECKSUM_BYTES = 8
EMPTY_RECORD = RECORD_HEADER.size + CHECKSUM_BYTES
HEADERS_BIT = 1 << 31
ERASED_BIT = 1 << 63
TOMBSTONE_BIT = 1 << 62
ACCOUNT = "$G"  # Milvus's embedded server runs without accounts


@dataclass
class StoredStream:
    """One stream folder: its message sequences as the blocks hold them, and what could not be read."""

    name: str
    folder: Path
    sequences: array = field(default_factory=lambda: array("Q"))
    tombstones: int = 0
    problems: list[str] = field(default_factory=list)

    def held_from(self, first_seq: int) -> int:
        """Messages the blocks hold at or after first_seq (a server drops older ones by its limits)."""
        return sum(1 for seq in self.sequences if seq >= first_seq)


def stream_folders(root: Path) -> list[Path]:
    base = root / "jetstream" / ACCOUNT / "streams"
    try:
        return sorted(p for p in base.iterdir() if p.is_dir())
    except OSError:
        return []


def _block_number(path: Path) -> int:
    return int(path.stem) if path.stem.isdigit() else 0


def read_stream(folder: Path) -> StoredStream:
    """The records of every msgs/N.blk of one stream folder, in block order."""
    stream = StoredStream(folder.name, folder)
    for block in sorted((folder / "msgs").glob("*.blk"), key=_block_number):
        try:
            data = block.read_bytes()
        except OSError as err:
            stream.problems.append(f"{block.name} unreadable: {err.strerror or err}")
            continue
        _read_block(stream, block.name, data)
    return stream


def _read_block(stream: StoredStream, name: str, data: bytes) -> None:
    at = 0
    while at < len(data):
        if len(data) - at < RECORD_HEADER.size:
            stream.problems.append(f"{name}: a cut-off record at byte {at} of {len(data)}")
            return
        length, seq, _ts, subject = RECORD_HEADER.unpack_from(data, at)
        length &= ~HEADERS_BIT
        if length < EMPTY_RECORD or at + length > len(data) or subject > length - EMPTY_RECORD:
            stream.problems.append(f"{name}: an unreadable record at byte {at} of {len(data)}")
            return
        if seq & TOMBSTONE_BIT:
            stream.tombstones += 1
        elif seq and not seq & ERASED_BIT:
            stream.sequences.append(seq)
        at += length


def read_store(root: Path) -> dict[str, StoredStream]:
    return {folder.name: read_stream(folder) for folder in stream_folders(root)}


def meta_readable(folder: Path) -> bool:
    try:
        return isinstance(json.loads((folder / "meta.inf").read_bytes()), dict)
    except (OSError, ValueError):
        return False


def written_by_nats_29(root: Path) -> bool:
    """Whether a nats-server 2.9 (Milvus 2.3) wrote the store last: it keeps one N.idx per block, while
    2.10 and later replace them with msgs/index.db."""
    return any(next((folder / "msgs").glob("*.idx"), None) is not None for folder in stream_folders(root))


def disagreements(root: Path, served: dict[str, tuple[int, int, int]]) -> list[tuple[str, str]]:
    """(stream, warning) where the store's folders and blocks disagree with what a nats-server serves from
    them; `served` maps each stream to (messages, first_seq, last_seq) as the server reports it."""
    found = []
    for name, stream in read_store(root).items():
        for problem in stream.problems:
            found.append((name, f"stream {name}: msgs/{problem}; nats-server drops the messages from there on"))
        if name not in served:
            what = "meta.inf is unreadable" if not meta_readable(stream.folder) else "its config or checksum is bad"
            found.append((name, f"stream {name}: its folder holds {len(stream.sequences)} message(s) but nats-server "
                                f"did not load it ({what}), so it is missing from the list"))
            continue
        messages, first_seq, last_seq = served[name]
        held = stream.held_from(first_seq if messages else last_seq + 1)
        if held != messages and not stream.problems:
            found.append((name, f"stream {name}: its blocks hold {held} message(s) from sequence "
                                f"{first_seq if messages else last_seq + 1} on, but nats-server recovered {messages} "
                                f"(a corrupt .blk file?)"))
    return found
