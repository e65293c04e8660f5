"""A natsmq store read from disk without a server: which streams its folders hold and the sequences in
their message blocks, to check what a nats-server recovers from them (read-only, standard library only).

Layout: nats-server's file store, which Milvus embeds (pkg/mq/msgstream/mqwrapper/nmq/nmq_server.go),
`<storeDir>/jetstream/$G/streams/<stream>/{meta.inf, msgs/N.blk, obs/}`. A block is a run of records: length
(uint32, high bit: has headers), sequence (uint64), timestamp (int64), subject length (uint16), subject,
[headers], payload, 8-byte checksum, all little-endian. nats-server marks erased records with bit 63 and, from
2.10, writes delete tombstones with bit 62 of the sequence. A server before 2.9.22 does not know tombstones
and reads one as a message with sequence 2^62+N (nats-server commit 8841432, "Allow 2.10 tombstones to be
skipped ... on downgrade from 2.10 to 2.9"; Milvus 2.3 embeds 2.9.17).
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

from mqctl.mq.nats.model import StreamDetails
from mqctl.sorting import ascii_int

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
    runs: list[list[int]] = field(default_factory=list)  # [first, last] of each run of consecutive sequences
    tombstones: int = 0
    problems: list[str] = field(default_factory=list)
    delivered: int = 0  # the highest stream sequence a consumer of the stream was given (from obs/*/o.dat)
    oldest_ns: int | None = None  # the store time (Unix ns) of the oldest message the blocks hold

    @property
    def messages(self) -> int:
        return self.held_from(0)

    def held_from(self, first_seq: int) -> int:
        """Messages the blocks hold at or after first_seq (a server drops older ones by its limits)."""
        return sum(max(0, last - max(first, first_seq) + 1) for first, last in self.runs)

    def add(self, seq: int) -> None:
        if self.runs and self.runs[-1][1] + 1 == seq:
            self.runs[-1][1] = seq
        else:
            self.runs.append([seq, seq])


def stream_folders(root: Path) -> list[Path]:
    base = root / "jetstream" / ACCOUNT / "streams"
    try:
        return sorted(p for p in base.iterdir() if p.is_dir())
    except OSError:
        return []


def _block_number(path: Path) -> int:
    return ascii_int(path.stem) or 0


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
    stream.delivered = max((_delivered(state) for state in folder.glob("obs/*/o.dat")), default=0)
    return stream


CONSUMER_STATE_MAGIC = 22


def _delivered(state_file: Path) -> int:
    """The delivered stream sequence in a consumer's o.dat: magic, version, then uvarints for the ack floor
    (consumer, stream) and the delivered (consumer, stream) sequences; 0 when unreadable."""
    try:
        data = state_file.read_bytes()
    except OSError:
        return 0
    if len(data) < 3 or data[0] != CONSUMER_STATE_MAGIC:
        return 0
    values, value, shift = [], 0, 0
    for byte in data[2:]:
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            values.append(value)
            value, shift = 0, 0
            if len(values) == 4:
                return values[3]
    return 0


def _read_block(stream: StoredStream, name: str, data: bytes) -> None:
    at = 0
    while at < len(data):
        if len(data) - at < RECORD_HEADER.size:
            stream.problems.append(f"{name}: a cut-off record at byte {at} of {len(data)}")
            return
        length, seq, stamp, subject = RECORD_HEADER.unpack_from(data, at)
        length &= ~HEADERS_BIT
        if length < EMPTY_RECORD or at + length > len(data) or subject > length - EMPTY_RECORD:
            stream.problems.append(f"{name}: an unreadable record at byte {at} of {len(data)}")
            return
        if seq & TOMBSTONE_BIT:
            stream.tombstones += 1
        elif seq and not seq & ERASED_BIT:
            stream.add(seq)
            if stream.oldest_ns is None or stamp < stream.oldest_ns:
                stream.oldest_ns = stamp
        at += length


def read_store(root: Path) -> dict[str, StoredStream]:
    return {folder.name: read_stream(folder) for folder in stream_folders(root)}


def meta_readable(folder: Path) -> bool:
    try:
        return isinstance(json.loads((folder / "meta.inf").read_bytes()), dict)
    except (OSError, ValueError, RecursionError):
        return False


def written_by_nats_29(root: Path) -> bool:
    """Whether a nats-server 2.9 (Milvus 2.3) wrote the store last: it keeps one N.idx per block, while
    2.10 and later replace them with msgs/index.db."""
    return any(next((folder / "msgs").glob("*.idx"), None) is not None for folder in stream_folders(root))


def disagreements(root: Path, served: dict[str, StreamDetails]) -> list[tuple[str | None, str]]:
    """(stream, warning) where the store's folders and blocks disagree with what a nats-server serves from
    them; `served` maps each stream name to its StreamDetails as the server reports them."""
    streams_dir = root / "jetstream" / ACCOUNT / "streams"
    if streams_dir.exists() and not streams_dir.is_dir():
        return [(None, f"{streams_dir} is not a folder, so no stream can be read from this store")]
    found: list[tuple[str | None, str]] = []
    for name, stream in read_store(root).items():
        for problem in stream.problems:
            found.append((name, f"stream {name}: msgs/{problem}; nats-server drops the messages from there on"))
        details = served.get(name)
        if details is None:
            found.append(
                (
                    name,
                    f"stream {name}: its folder holds {stream.messages} message(s) but nats-server "
                    f"did not load it ({_why_not_loaded(stream.folder)}), so it is missing from the list",
                )
            )
            continue
        if stream.problems:
            continue
        first = details.first_seq if details.messages else details.last_seq + 1
        held = stream.held_from(first)
        if held != details.messages:
            found.append(
                (
                    name,
                    f"stream {name}: its blocks hold {held} message(s) from sequence {first} on, but "
                    f"nats-server recovered {details.messages} (a corrupt .blk file?)",
                )
            )
        elif details.last_seq < stream.delivered:
            found.append(
                (
                    name,
                    f"stream {name}: its consumers were given messages up to sequence {stream.delivered}, "
                    f"but nats-server recovered the stream only up to {details.last_seq} (message blocks "
                    f"and index deleted or cut short?)",
                )
            )
        elif first > 1 and not _limited(details):
            found.append(
                (
                    name,
                    f"stream {name}: sequences 1 to {first - 1} are gone although no limit of the stream "
                    f"removes messages (max_age, max_bytes and max_msgs unlimited): message blocks deleted "
                    f"or emptied? (or a purge, or limits raised since)",
                )
            )
    return found


def _why_not_loaded(folder: Path) -> str:
    if not meta_readable(folder):
        return "meta.inf is unreadable"
    if (folder / "msgs").exists() and not (folder / "msgs").is_dir():
        return "msgs is not a folder"
    return "its config or checksum is bad"


def _limited(details: StreamDetails) -> bool:
    """Whether a stream has a limit that removes messages by itself (Milvus never deletes one otherwise)."""
    return details.max_age_seconds > 0 or details.max_bytes > 0 or details.max_msgs > 0
