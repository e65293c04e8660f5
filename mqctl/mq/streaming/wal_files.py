"""What `mqctl channels woodpecker PATH` reports: the segments below a Woodpecker folder (local `wp` folder or a
directory copy of the bucket) or an `s3://BUCKET/PREFIX` read straight from MinIO/S3, named after their pchannels when Woodpecker's etcd meta is given, and the entries
of one log with their 2.6 envelope. Format from Woodpecker v0.1.x / Milvus v2.6.x source; not yet verified on a
running 2.6."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mqctl.mq.woodpecker.meta import WoodpeckerMeta

from mqctl.errors import InputError, PreconditionError
from mqctl.mq.decode.envelope import read_envelope
from mqctl.mq.streaming import VERIFICATION
from mqctl.mq.woodpecker.s3_url import is_s3_url, parse_s3_url
from mqctl.mq.woodpecker.segment_model import Segment
from mqctl.mq.woodpecker.storage import S3Access, open_segment_files, read_all


@dataclass
class SegmentRow:
    log_id: int
    log: str | None  # the pchannel, from Woodpecker's etcd meta
    segment: int
    layout: str
    state: str
    blocks: int
    entries: int
    first_entry: int | None
    last_entry: int | None
    first_time: dt.datetime | None  # from the `_tt` time ticks
    last_time: dt.datetime | None
    footer_version: int | None
    lac: int | None
    compacted: bool | None
    problems: list[str] = field(default_factory=list)


@dataclass
class EntryRow:
    position: str  # segment/entry, as Milvus prints a Woodpecker message id
    segment: int
    entry: int
    type: str
    time: dt.datetime | None
    vchannel: str | None
    bytes: int
    encrypted: bool
    in_txn: bool
    streaming: bool


@dataclass
class WoodpeckerReport:
    path: str
    verification: str
    segments: list[SegmentRow]
    entries: list[EntryRow] | None = None  # with --log
    log: str | None = None

    @property
    def corrupt(self) -> bool:
        return any(row.problems for row in self.segments)


Counted = tuple[int, dt.datetime | None, dt.datetime | None]  # a segment's entries, first and last `_tt` time


def _counted(segment: Segment) -> Counted:
    times = [t for e in segment.entries if (t := read_envelope(e.properties).time) is not None]
    return len(segment.entries), min(times) if times else None, max(times) if times else None


def _row(segment: Segment, names: dict[int, str], counted: Counted | None = None) -> SegmentRow:
    entries, first_time, last_time = counted or _counted(segment)
    footer = segment.footer
    return SegmentRow(
        segment.log_id,
        names.get(segment.log_id),
        segment.segment_id,
        segment.layout,
        segment.state,
        segment.blocks,
        entries,
        segment.first_entry,
        segment.last_entry,
        first_time,
        last_time,
        footer.version if footer else None,
        footer.lac if footer else None,
        footer.compacted if footer else None,
        [str(p) for p in segment.problems],
    )


def woodpecker_report(
    location: str | Path,
    *,
    names: dict[int, str] | None = None,
    log: str | None = None,
    limit: int = 20,
    access: S3Access | None = None,
    meta: WoodpeckerMeta | None = None,
) -> WoodpeckerReport:
    """Segments below `location` (a folder or an s3:// URL); with `log` (a log id or, with `names`, a pchannel) also
    its first `limit` entries. With Woodpecker's etcd `meta`, the logs are named after it and each closed segment's
    LastEntryId is checked against the files (meta_check.py)."""
    from mqctl.mq.woodpecker.meta_check import check_against_meta

    names = names or ({log.id: name for name, log in meta.logs.items()} if meta else {})
    by_name = {name: log_id for log_id, name in names.items()}
    wanted = None if log is None else by_name.get(log) if log in by_name else (int(log) if log.isdigit() else None)
    counted: dict[int, Counted] = {}  # by id(segment): a misnamed folder may repeat a log and segment id
    shown = 0

    def keep_little(segment: Segment) -> None:
        """Counted as it is read; then only its first and last entry are kept, unless its entries are among the
        `limit` shown: the memory of a report does not grow with the WAL's entries."""
        nonlocal shown
        counted[id(segment)] = _counted(segment)
        if segment.log_id == wanted and shown < limit:
            shown += len(segment.entries)
        elif len(segment.entries) > 2:
            segment.entries = [segment.entries[0], segment.entries[-1]]

    segments = check_against_meta(read_wal_folder(str(location), access, keep_little), meta)
    path = _shown(str(location))
    rows = [_row(s, names, counted.get(id(s))) for s in segments]
    report = WoodpeckerReport(str(path), VERIFICATION, rows)
    if log is None:
        return report
    log_id = wanted
    if log_id is None or not any(s.log_id == log_id for s in segments):
        known = sorted({names.get(s.log_id, str(s.log_id)) for s in segments})
        raise InputError(f"no Woodpecker log {log!r} below {path}", hint=f"known: {', '.join(known) or 'none'}")
    report.log = names.get(log_id, str(log_id))
    report.entries = []
    for segment in segments:
        if segment.log_id != log_id:
            continue
        for entry in segment.entries:
            if len(report.entries) >= limit:
                return report
            envelope = read_envelope(entry.properties)
            report.entries.append(
                EntryRow(
                    f"{entry.segment_id}/{entry.entry_id}",
                    entry.segment_id,
                    entry.entry_id,
                    envelope.type,
                    envelope.time,
                    envelope.vchannel,
                    len(entry.payload),
                    envelope.encrypted,
                    envelope.in_txn,
                    envelope.streaming,
                )
            )
    return report


def _shown(location: str) -> str:
    return str(parse_s3_url(location)) if is_s3_url(location) else str(Path(location))


def read_wal_folder(
    location: str, access: S3Access | None = None, each: Callable[[Segment], None] | None = None
) -> list[Segment]:
    """The segments below a folder or an `s3://BUCKET/PREFIX` given on the command line (`each`: see read_all)."""
    hint = "give the local `wp` folder, a directory copy of the bucket, or s3://BUCKET/PREFIX"
    if not is_s3_url(location) and "://" not in location:
        path = Path(location)
        if not path.exists():
            raise InputError(f"{path}: no such folder", hint=hint)
        if not path.is_dir():
            raise InputError(f"{path}: not a folder", hint=hint)
    files = open_segment_files(location, access)
    try:
        return read_all(files, each)
    except OSError as err:
        raise PreconditionError(f"cannot read {err.filename or location}: {err.strerror}") from None
