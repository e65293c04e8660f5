"""Woodpecker logs as MQ channels: the MQSource `channels list/show/peek` and replay read, over the segment files
below a folder (the local `wp` folder or a directory copy of the bucket) or an `s3://BUCKET/PREFIX` read straight
from MinIO/S3 (storage.py; layouts in segments.py). Read-only.
Format from Woodpecker v0.1.x / Milvus v2.6.x source; not yet verified on a running 2.6.

A channel is one Woodpecker log: named after its pchannel when Woodpecker's etcd meta is given (Milvus names each
log after its pchannel, milvus pkg/streaming/walimpls/impls/wp/opener.go), else after its log id. Woodpecker
numbers entries per segment (a message id is `segId/entryId`, milvus pkg/streaming/walimpls/impls/wp/
message_id.go), so a message's id here is `segment * 10**10 + entry`: ordered like Woodpecker's ids, readable in
decimal (segment 3, entry 17 is 30000000017), and written `3/17` wherever an id is accepted.

Each message is the entry's payload with its properties as headers, the 2.6 envelope decode/messages.py reads
(Milvus appends payload and properties, milvus pkg/streaming/walimpls/impls/wp/wal.go `Append`; Woodpecker keeps them
as a LogMessageLayout, woodpecker/log/log_message.go `MarshalMessage`, v0.1.25).
Corruption (a record or block CRC that does not match) ends the reading of its segment there: `channels`
commands read on and warn with log, segment, block and offset; a strict source (replay) stops with that line as
soon as it reads the segment, so no replay silently skips stored messages.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from mqctl.backends import BACKENDS
from mqctl.errors import InputError, PreconditionError
from mqctl.mq.model import ChannelBounds, ChannelExtras, ChannelInfo, RawMessage, WalSegment, path_is_dir
from mqctl.mq.woodpecker.read_ahead import close_files, read_ahead
from mqctl.mq.woodpecker.s3_url import is_s3_url
from mqctl.mq.woodpecker.segment_model import Entry, Problem, Segment, SegmentSummary, UnreadableFile, check_log
from mqctl.mq.woodpecker.storage import S3Access, SegmentFiles, SegmentPlace, open_segment_files, read_place

if TYPE_CHECKING:
    from mqctl.config.resolve.sources import EtcdConfig
    from mqctl.mq.retention_model import ConfiguredRetention, RetentionReport
    from mqctl.mq.woodpecker.meta import WoodpeckerMeta

ENTRY_SPAN = 10**10  # message id = segment * ENTRY_SPAN + entry
POSITION = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
VERIFICATION = "format from Woodpecker v0.1.x / Milvus v2.6.x source; not yet verified on a running 2.6"


def message_id(segment: int, entry: int) -> int:
    return segment * ENTRY_SPAN + entry


def position_of(message: int) -> str:
    """`segment/entry` of a message id, as Milvus prints a Woodpecker message id."""
    segment, entry = divmod(message, ENTRY_SPAN)
    return f"{segment}/{entry}"


def parse_position(text: str) -> int | None:
    """The message id of `segment/entry`, or None when `text` is not one."""
    match = POSITION.match(text)
    if match is None:
        return None
    segment, entry = int(match.group(1)), int(match.group(2))
    if entry >= ENTRY_SPAN:
        raise InputError(f"{text!r}: entry {entry} is past what a message id holds ({ENTRY_SPAN - 1})")
    return message_id(segment, entry)


def log_names(etcd: EtcdConfig, meta_prefix: str | None = None) -> dict[int, str]:
    """Log id -> log name (the pchannel) from Woodpecker's etcd meta, under either prefix (meta.py)."""
    from mqctl.mq.woodpecker.meta import read_woodpecker_meta

    return {log.id: name for name, log in read_woodpecker_meta(etcd, meta_prefix).logs.items()}


def _summary(segment: Segment) -> SegmentSummary:
    entries = segment.entries
    return SegmentSummary(
        segment.segment_id,
        segment.layout,
        segment.state,
        segment.blocks,
        len(entries),
        sum(len(e.payload) for e in entries),
        entries[0].entry_id if entries else None,
        entries[-1].entry_id if entries else None,
        segment.footer,
        segment.problems,
        "whole",
        entries[0] if entries else None,
        entries[-1] if entries else None,
    )


def _warning(problem: Problem) -> str:
    """One line per problem, saying what it costs: the rest of the segment, whole segments, or nothing."""
    if not problem.loses_entries:
        return f"Woodpecker segment: {problem}"
    if problem.lost_from is not None:
        return f"lost Woodpecker segment(s): {problem}"
    return f"corrupt Woodpecker segment: {problem}; its entries after it are not read"


class WoodpeckerSource:
    """An MQSource over Woodpecker segment files. A segment is read (and its CRCs checked) when first needed and only
    its summary is kept; reading its messages reads it again, so memory holds one segment at a time."""

    mq: ClassVar[str] = BACKENDS["woodpecker"].name
    supports_store_times: ClassVar[bool] = False  # the files keep no store time per entry; `_tt` gives the time
    sequential_ids: ClassVar[bool] = False  # ids jump from one segment to the next

    def __init__(
        self,
        path: str | Path,
        *,
        names: dict[int, str] | None = None,
        strict: bool = False,
        access: S3Access | None = None,
        meta: WoodpeckerMeta | None = None,
        verify: bool = False,
    ):
        """`meta`: Woodpecker's own record in etcd; it names the logs (unless `names` does) and each closed
        segment's LastEntryId is checked against the files (data_warnings). `verify`: summaries read every
        segment whole and check every CRC; else a finalized segment is summarized from its footer and index
        (footers.py) and only the blocks holding a log's first and last entry are read."""
        text = str(path)
        self.strict = strict
        self.verify = verify
        self.meta = meta
        self.names = dict(names or ({log.id: name for name, log in meta.logs.items()} if meta else {}))
        hint = "give the local Woodpecker folder (<localStorage.path>/wp), a directory copy of the bucket, or s3://BUCKET/PREFIX"
        if not is_s3_url(text) and "://" not in text:
            local = Path(text).expanduser()
            if not path_is_dir(local):
                what = "is not a folder" if local.exists() else "does not exist"
                raise InputError(f"Woodpecker folder {local} {what}", hint=hint)
        self.files: SegmentFiles = open_segment_files(text, access)
        self.path = self.files.description
        self.description = f"woodpecker:{self.path}"
        self._layout: dict[int, list[tuple[int, SegmentPlace]]] = {}
        self._places: dict[tuple[int, int], SegmentPlace] = {}  # one lookup per segment: listing stays linear
        self._misnamed: list[Segment] = []  # folders with non-canonical names: reported, never read as segments
        try:
            for place in self.files.places():
                if place.problem is not None:
                    self._misnamed.append(read_place(self.files, place))
                    continue
                self._layout.setdefault(place.log_id, []).append((place.segment_id, place))
                self._places[(place.log_id, place.segment_id)] = place
        except OSError as err:
            raise PreconditionError(f"cannot read {err.filename or self.path}: {err.strerror}") from None
        if not self._layout and not self._misnamed:
            raise InputError(
                f"no Woodpecker segment below {self.path} (no <logId>/<segId> folder with data.log or *.blk)",
                hint=hint,
            )
        for segments in self._layout.values():
            segments.sort(key=lambda item: item[0])
        # the segment after each one (None for the last of its log): a segment without footer that another follows,
        # or a gap before it, is a Problem (segment_model.check_log)
        self._neighbours: dict[tuple[int, int], tuple[int | None, int | None]] = {}
        for log_id, segments in self._layout.items():
            ids = [segment_id for segment_id, _ in segments]
            for i, segment_id in enumerate(ids):
                before = ids[i - 1] if i else None
                after = ids[i + 1] if i + 1 < len(ids) else None
                self._neighbours[(log_id, segment_id)] = (before, after)
        self._summaries: dict[tuple[int, int], SegmentSummary] = {}

    # names ---------------------------------------------------------------------------------------------------
    def channel_name(self, log_id: int) -> str:
        return self.names.get(log_id, str(log_id))

    def channel_names(self) -> list[str]:
        """The channels, in the order list_channels gives them, from the listing alone (no segment read)."""
        return [self.channel_name(i) for i in sorted(self._layout, key=lambda i: (self.channel_name(i), i))]

    def log_id(self, channel: str) -> int:
        for log_id in self._layout:
            if self.channel_name(log_id) == channel:
                return log_id
        known = ", ".join(self.channel_name(log_id) for log_id in sorted(self._layout))
        raise InputError(f"no Woodpecker log {channel!r} in {self.description}", hint=f"known: {known}")

    # segments ------------------------------------------------------------------------------------------------
    def read_segment(self, log_id: int, segment_id: int) -> Segment:
        """One segment with its entries, read (CRCs checked) now: entries are never kept beyond the caller's use,
        so a WAL of many segments is read one segment at a time."""
        place = self._places[(log_id, segment_id)]
        try:
            found = read_place(self.files, place)
        except OSError as err:
            raise PreconditionError(f"cannot read {err.filename or place.folder}: {err.strerror}") from None
        self._check_neighbours(found, place)
        self._strict_check(found.problems)
        for entry in found.entries:
            if entry.entry_id >= ENTRY_SPAN or entry.entry_id < 0:
                raise PreconditionError(
                    f"log {log_id} segment {segment_id}: entry id {entry.entry_id} is outside 0..{ENTRY_SPAN - 1}",
                    hint="this does not look like a Woodpecker segment mqctl can read",
                )
        self._summaries[(log_id, segment_id)] = _summary(found)
        return found

    @property
    def read_kind(self) -> str:
        """How summaries are read: "verified" (every object read, every CRC checked) or "footers" (finalized
        segments from their footer and index, the data blocks not read)."""
        return "verified" if self.verify else "footers"

    def summary(self, log_id: int, segment_id: int) -> SegmentSummary:
        found = self._summaries.get((log_id, segment_id))
        if found is None:
            quick = None if self.verify else self._footer_summary(log_id, segment_id)
            if quick is None:
                self.read_segment(log_id, segment_id)
                return self._summaries[(log_id, segment_id)]
            self._checked(log_id, quick)
            found = self._summaries[(log_id, segment_id)] = quick
        return found

    def _footer_summary(self, log_id: int, segment_id: int) -> SegmentSummary | None:
        """The summary of a finalized segment from its footer and index (footers.py), None when the segment has no
        footer (or its data.log cannot be read in ranges): it is then read whole."""
        from mqctl.mq.woodpecker.footers import TAIL, local_summary, object_summary

        place = self._places[(log_id, segment_id)]
        try:
            if place.layout == "object":
                if "footer.blk" not in place.files:
                    return None
                return object_summary(
                    place.files,
                    lambda name: self.files.read(place, name),
                    log_id,
                    segment_id,
                    lambda name: self.files.shown(place, name),
                )
            ranged = getattr(self.files, "read_range", None)
            if ranged is None or "data.log" not in place.files:
                return None
            size, tail = ranged(place, "data.log", None, TAIL)
            return local_summary(
                size,
                tail,
                lambda start, length: ranged(place, "data.log", start, length)[1],
                log_id,
                segment_id,
                self.files.shown(place, "data.log"),
            )
        except UnreadableFile:
            return None  # the whole read names it as a Problem
        except OSError as err:
            raise PreconditionError(f"cannot read {err.filename or place.folder}: {err.strerror}") from None

    def _checked(self, log_id: int, summary: SegmentSummary) -> None:
        """The cross-segment checks (a gap before it) and, for a strict source, its first problem as an error."""
        place = self._places[(log_id, summary.segment_id)]
        found = Segment(log_id, summary.segment_id, place.layout, self.files.shown(place), summary.state, None)
        found.problems = summary.problems
        self._check_neighbours(found, place)
        self._strict_check(summary.problems)
        for entry_id in (summary.first_id, summary.last_id):
            if entry_id is not None and not 0 <= entry_id < ENTRY_SPAN:
                raise PreconditionError(
                    f"log {log_id} segment {summary.segment_id}: entry id {entry_id} is outside 0..{ENTRY_SPAN - 1}",
                    hint="this does not look like a Woodpecker segment mqctl can read",
                )

    def _check_neighbours(self, found: Segment, place: SegmentPlace) -> None:
        """check_log of `found` beside the segments before and after it in its log (a gap, a footer-less segment
        another follows), whether it was read whole or summarized from its footer."""
        before, after = self._neighbours[(found.log_id, found.segment_id)]
        neighbours = [
            Segment(found.log_id, other, place.layout, "", "finalized", None)
            for other in (before, after)
            if other is not None
        ]
        check_log([*neighbours, found])

    def _strict_check(self, problems: list[Problem]) -> None:
        if problems and self.strict:
            raise PreconditionError(
                f"corrupt Woodpecker segment: {problems[0]}",
                hint="`mqctl channels list --woodpecker PATH --verify` shows every damaged segment; replay from a copy "
                "without it, or restore the file",
            )

    def end_entry(self, log_id: int, summary: SegmentSummary, *, last: bool) -> Entry | None:
        """The first (or last) entry of a segment: kept from a whole read, else read from the one block holding
        it (the object, or that range of data.log) and kept."""
        from mqctl.mq.woodpecker.footers import block_names, end_entry

        kept = summary.last if last else summary.first
        if kept is not None or summary.read == "whole" or summary.footer is None:
            return kept
        place = self._places[(log_id, summary.segment_id)]
        ranged = getattr(self.files, "read_range", None)
        if place.layout == "object":
            chosen, _ = block_names(place.files, summary.footer.compacted)

            def fetch(number: int, start: int, size: int) -> bytes | bytearray:
                return self.files.read(place, chosen[number])

            def shown(number: int) -> str:
                return self.files.shown(place, chosen[number])

        else:
            assert ranged is not None

            def fetch(number: int, start: int, size: int) -> bytes | bytearray:
                # block 0 with the segment's header record before it
                got: bytes | bytearray = ranged(
                    place, "data.log", 0 if number == 0 else start, start + size if number == 0 else size
                )[1]
                return got

            def shown(number: int) -> str:
                return self.files.shown(place, "data.log")

        try:
            entry = end_entry(summary, log_id, fetch, shown, last=last)
        except OSError as err:
            raise PreconditionError(f"cannot read {err.filename or place.folder}: {err.strerror}") from None
        self._strict_check(summary.problems)
        if last:
            summary.last = entry
        else:
            summary.first = entry
        return entry

    def summaries(self, log_id: int) -> list[SegmentSummary]:
        self._read_ahead([log_id])
        return [self.summary(log_id, segment_id) for segment_id, _ in self._layout[log_id]]

    def _read_ahead(self, log_ids: list[int], segments: tuple[int, int | None] | None = None) -> None:
        """Name the segments read next, in reading order, so that a bucket fetches their objects ahead
        (storage.read_ahead): those of `log_ids` not summarized yet, or those from `segments[0]` to `segments[1]`
        (None: to the end) when iter_messages reads them."""
        places, footers = [], set[str]()
        for log_id in log_ids:
            for segment_id, place in self._layout[log_id]:
                if segments is None:
                    wanted = (log_id, segment_id) not in self._summaries
                    if wanted and not self.verify and place.layout == "object" and "footer.blk" in place.files:
                        footers.add(place.folder)
                else:
                    wanted = segments[0] <= segment_id and (segments[1] is None or segment_id <= segments[1])
                if wanted:
                    places.append(place)
        read_ahead(self.files, places, footers_only=footers)

    def _first_last(self, log_id: int) -> tuple[SegmentSummary, SegmentSummary] | None:
        """The segments holding the log's first and its last entry (from the summaries: no entry read)."""
        summaries = self.summaries(log_id)
        first = next((s for s in summaries if s.first_id is not None), None)
        last = next((s for s in reversed(summaries) if s.last_id is not None), None)
        return (first, last) if first is not None and last is not None else None

    # MQSource ------------------------------------------------------------------------------------------------
    def list_channels(self, *, message_times: bool = True) -> list[ChannelInfo]:
        """Every log: entries, payload bytes, first/last id, and times from the `_tt` time ticks."""
        from mqctl.mq.decode.envelope import read_envelope

        channels = []
        order = sorted(self._layout, key=lambda i: (self.channel_name(i), i))
        self._read_ahead(order)
        for log_id in order:
            summaries = self.summaries(log_id)
            ends = self._first_last(log_id)
            sizes = [s.payload_bytes for s in summaries]
            info = ChannelInfo(
                self.channel_name(log_id),
                sum(s.entries for s in summaries),
                None if None in sizes else sum(size or 0 for size in sizes),  # None: read from footers
            )
            if ends is not None:
                first, last = ends
                assert first.first_id is not None and last.last_id is not None
                info.first_id = message_id(first.segment_id, first.first_id)
                info.last_id = message_id(last.segment_id, last.last_id)
                if message_times:
                    first_entry = self.end_entry(log_id, first, last=False)
                    last_entry = self.end_entry(log_id, last, last=True)
                    info.first_time = read_envelope(first_entry.properties).time if first_entry else None
                    info.last_time = read_envelope(last_entry.properties).time if last_entry else None
            channels.append(info)
        return channels

    def iter_messages(
        self, channel: str, start_id: int | None = None, end_id: int | None = None
    ) -> Generator[RawMessage, None, None]:
        log_id = self.log_id(channel)
        first_segment = start_id // ENTRY_SPAN if start_id is not None else None
        last_segment = end_id // ENTRY_SPAN if end_id is not None else None
        self._read_ahead([log_id], (first_segment or 0, last_segment))
        for segment_id, _ in self._layout[log_id]:
            if (first_segment is not None and segment_id < first_segment) or (
                last_segment is not None and segment_id > last_segment
            ):
                continue
            segment = self.read_segment(log_id, segment_id)
            for entry in segment.entries:
                number = message_id(segment_id, entry.entry_id)
                if start_id is not None and number < start_id:
                    continue
                if end_id is not None and number > end_id:
                    return
                yield RawMessage(channel, number, entry.payload, entry.properties)

    def id_range(self, channel: str) -> tuple[int, int] | None:
        ends = self._first_last(self.log_id(channel))
        if ends is None:
            return None
        first, last = ends
        assert first.first_id is not None and last.last_id is not None
        return message_id(first.segment_id, first.first_id), message_id(last.segment_id, last.last_id)

    def channel_bounds(self, names: set[str]) -> dict[str, ChannelBounds]:
        found = {}
        for log_id in self._layout:
            name = self.channel_name(log_id)
            if name in names:
                first, last = self.id_range(name) or (None, None)
                found[name] = ChannelBounds(first, last)
        return found

    def channel_extras(self, name: str) -> ChannelExtras:
        """The log's segments: layout, state, blocks, entries, footer version and LAC."""
        rows = []
        for summary in self.summaries(self.log_id(name)):
            footer = summary.footer
            rows.append(
                WalSegment(
                    summary.segment_id,
                    summary.layout,
                    "corrupt" if summary.problems else summary.state,
                    summary.blocks,
                    summary.entries,
                    summary.first_id,
                    summary.last_id,
                    footer.version if footer else None,
                    footer.lac if footer else None,
                )
            )
        return ChannelExtras(segments=rows)

    def store_identity(self) -> str | None:
        """The logs (ids and names) below the folder, hashed: another folder gives another identity."""
        lines = sorted(f"{log_id}={self.channel_name(log_id)}" for log_id in self._layout)
        return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]

    def data_warnings(self, *, read_so_far: bool = False) -> list[tuple[str | None, str]]:
        """Corrupt segments (log, segment, block, file, offset): what follows the damage in a segment is not
        counted or read. `read_so_far` (a peek): only those of the segments already read, reading no other,
        unless etcd's meta is given (its LastEntryIds are checked against every segment)."""
        found: list[tuple[str | None, str]] = [
            (None, f"Woodpecker folder not read: {problem}")
            for misnamed in self._misnamed
            for problem in misnamed.problems
        ]
        only_read = read_so_far and self.meta is None
        for log_id in sorted(self._layout):
            summaries = (
                [self._summaries[(log_id, s)] for s, _ in self._layout[log_id] if (log_id, s) in self._summaries]
                if only_read
                else self.summaries(log_id)
            )
            for summary in summaries:
                found += [(self.channel_name(log_id), _warning(problem)) for problem in summary.problems]
        if self.meta is not None:
            from mqctl.mq.woodpecker.meta_check import meta_shortfalls

            last_entries = {
                log_id: {s.segment_id: s.last_id for s in self.summaries(log_id)} for log_id in self._layout
            }
            found += [
                (self.channel_name(short.log_id), f"lost Woodpecker entries: {short.message}")
                for short in meta_shortfalls(last_entries, self.meta)
            ]
        return found

    def retention_report(self, configured: ConfiguredRetention, now: dt.datetime) -> RetentionReport:
        raise PreconditionError(
            "retention of a Woodpecker WAL is not read yet (Woodpecker truncates after the WAL checkpoint, not by age)",
            hint="see `mqctl channels checkpoints --etcd URL --woodpecker PATH` for the truncation point (CP113)",
        )

    def close(self) -> None:
        self._summaries.clear()
        close_files(self.files)

    def __enter__(self) -> WoodpeckerSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
