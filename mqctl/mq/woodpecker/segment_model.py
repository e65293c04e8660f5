"""The shapes of a Woodpecker segment as read: its entries, footer, state and the problems found in it
and the checks across the segments of a log (check_log); segments.py decodes the bytes, segment_files.py finds
and reads the files."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field


class SegmentCorruption(Exception):
    def __init__(self, what: str, offset: int, block: int | None):
        super().__init__(what)
        self.what, self.offset, self.block = what, offset, block


class UnreadableFile(Exception):
    """A segment file that is not read: not a regular file, or past the size cap. `what` says which and why."""

    def __init__(self, what: str):
        super().__init__(what)
        self.what = what


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
    size: int = 0  # the footer's total size field (stored data bytes as the writer counted them)
    index_offset: int = 0  # where the index records start (the local layout's data.log)
    index_length: int = 0  # their bytes


@dataclass
class Problem:
    """Corruption found, with where: log, segment, block, file and byte offset."""

    log_id: int
    segment_id: int
    block: int | None
    file: str
    offset: int
    what: str
    lost_from: int | None = None  # for a lost segment: the first segment id lost (else after the last readable entry)
    loses_entries: bool = True  # False: a stray file or folder beside whole data (nothing unread because of it)

    def __str__(self) -> str:
        block = f" block {self.block}" if self.block is not None else ""
        return f"log {self.log_id} segment {self.segment_id}{block}: {self.file} at byte {self.offset}: {self.what}"


@dataclass
class Segment:
    log_id: int
    segment_id: int
    layout: str  # local | object
    path: str
    state: str  # finalized (footer) | active | fenced | misnamed | missing
    footer: Footer | None
    entries: list[Entry] = field(default_factory=list)
    blocks: int = 0
    problems: list[Problem] = field(default_factory=list)
    spans: list[tuple[int, int, int]] = field(default_factory=list)  # (block, first entry, last entry) read
    next_entry: int | None = None  # the entry id the next block must start at

    @property
    def first_entry(self) -> int | None:
        return self.entries[0].entry_id if self.entries else None

    @property
    def last_entry(self) -> int | None:
        return self.entries[-1].entry_id if self.entries else None

    def problem(
        self, file: str, what: str, *, block: int | None = None, offset: int = 0, loses_entries: bool = True
    ) -> Problem:
        found = Problem(self.log_id, self.segment_id, block, file, offset, what, loses_entries=loses_entries)
        self.problems.append(found)
        return found

    def at_risk_from(self) -> tuple[int, int] | None:
        """(segment, entry) of the first entry that may be lost by what its problems say, None when none is: a
        checkpoint at or before it needs entries the files do not hold."""
        lost = [p for p in self.problems if p.loses_entries]
        if not lost:
            return None
        gaps = [p.lost_from for p in lost if p.lost_from is not None]
        if gaps:
            return min(gaps), 0
        last = self.last_entry
        return self.segment_id, 0 if last is None else last + 1


@dataclass
class SegmentSummary:
    """What is kept of a segment: counts, its first and last entry id, its footer and problems. `read` says how it
    was found: "footer" (its footer and index only, the data blocks not read) or "whole" (every block read and
    CRC-checked). `first`/`last` hold those entries when they were read; `payload_bytes` is None from a footer
    (the sum of payloads is not known without reading every entry)."""

    segment_id: int
    layout: str
    state: str
    blocks: int
    entries: int
    payload_bytes: int | None
    first_id: int | None
    last_id: int | None
    footer: Footer | None
    problems: list[Problem]
    read: str = "whole"
    first: Entry | None = None
    last: Entry | None = None
    spans: list[tuple[int, int, int, int, int]] = field(
        default_factory=list
    )  # index: (block, offset, size, first, last)


def check_log(segments: list[Segment]) -> None:
    """Cross-segment checks of the segments of one or more logs (sorted or not): a segment without footer that another
    segment of its log follows was completed and then cut short or lost its footer (Woodpecker finalizes a segment
    before it opens the next; a fenced one was closed by a new writer), and a gap in segment ids is a lost segment.
    Each adds a Problem to the segment concerned; a segment already damaged is not flagged twice."""
    by_log: dict[int, list[Segment]] = {}
    for segment in segments:
        if segment.state not in ("misnamed", "missing"):
            by_log.setdefault(segment.log_id, []).append(segment)
    for group in by_log.values():
        group.sort(key=lambda s: s.segment_id)
        for current, following in itertools.pairwise(group):
            if current.state == "active" and not current.problems:
                last = current.last_entry
                current.problem(
                    current.path,
                    f"no footer, yet segment {following.segment_id} follows: a completed segment cut short or whose "
                    f"footer is lost; entries after {'the start' if last is None else last} may be missing",
                )
            if following.segment_id != current.segment_id + 1:
                gap = (
                    f"segment {current.segment_id + 1}"
                    if following.segment_id == current.segment_id + 2
                    else f"segments {current.segment_id + 1}..{following.segment_id - 1}"
                )
                lost = following.problem(
                    following.path,
                    f"{gap} of log {following.log_id} missing between segments {current.segment_id} and "
                    f"{following.segment_id}: their entries are lost",
                )
                lost.lost_from = current.segment_id + 1
