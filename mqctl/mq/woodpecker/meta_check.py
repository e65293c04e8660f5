"""The segment files against Woodpecker's own record of them in etcd: a `SegmentMetadata` in state Completed or
Sealed carries the segment's LastEntryId (meta.py), which the files must reach. Fewer entries, or no files at all
for a closed segment between segments that are stored, is data lost that no CRC can show (the failure
milvus#52341 and zilliztech/woodpecker#242/#243 report for 3.0: a sealed segment whose footer or blocks fall short of
what etcd says)."""

from __future__ import annotations

from dataclasses import dataclass

from mqctl.mq.woodpecker.meta import WoodpeckerMeta
from mqctl.mq.woodpecker.segment_model import Segment

CLOSED = ("completed", "sealed")


@dataclass(frozen=True)
class Shortfall:
    """A closed segment etcd records whose files hold fewer entries than its LastEntryId (or none at all)."""

    log_id: int
    segment_id: int
    message: str
    no_files: bool  # no file holds the segment (it lies between stored segments and was not truncated)


def meta_shortfalls(last_entries: dict[int, dict[int, int | None]], meta: WoodpeckerMeta) -> list[Shortfall]:
    """Each closed segment etcd records (Completed or Sealed, with a LastEntryId) that the files fall short of.
    `last_entries`: per log id, per stored segment id, its last readable entry id (None: none readable). Logs without
    any file are left alone (another folder, or a bucket not read)."""
    found: list[Shortfall] = []
    for log in meta.logs.values():
        files = last_entries.get(log.id)
        if not files:
            continue
        oldest = min(files)
        for recorded in log.segments:
            if recorded.state not in CLOSED or recorded.last_entry < 0:
                continue
            said = f"etcd records segment {recorded.id} of log {log.name!r} as {recorded.state} with last entry "
            if recorded.id not in files:
                if recorded.id > oldest and recorded.id > log.truncated_segment:
                    message = (
                        f"{said}{recorded.last_entry}; no file holds it: entries 0..{recorded.last_entry} are lost"
                    )
                    found.append(Shortfall(log.id, recorded.id, message, True))
                continue
            last = files[recorded.id]
            if last is None or last < recorded.last_entry:
                start = 0 if last is None else last + 1
                held = "no entry" if last is None else f"entries up to {last}"
                message = f"{said}{recorded.last_entry}; the files hold {held}: entries {start}..{recorded.last_entry} are missing"
                found.append(Shortfall(log.id, recorded.id, message, False))
    return found


@dataclass(frozen=True)
class SealedShort:
    """A segment etcd records as Completed or Sealed whose files have no footer, or whose footer's last-add-confirmed
    (LAC, footer version 6) is below etcd's LastEntryId: the 3.0 hazard of milvus #52341 (a reader before Woodpecker
    v0.1.37 loops on "no record extract", tSafe stalls; zilliztech/woodpecker #242, fixed by #243 in v0.1.37)."""

    log_id: int
    segment_id: int
    message: str


HAZARD_SEALED_SHORT = "CP119"


def sealed_short(segments: list[Segment], meta: WoodpeckerMeta | None) -> list[SealedShort]:
    """Each closed segment etcd records whose stored files have no footer or a footer LAC below its LastEntryId."""
    if meta is None:
        return []
    stored = {(s.log_id, s.segment_id): s for s in segments if s.state not in ("misnamed", "missing")}
    found: list[SealedShort] = []
    for log in meta.logs.values():
        for recorded in log.segments:
            segment = stored.get((log.id, recorded.id))
            if segment is None or recorded.state not in CLOSED:
                continue
            said = f"{HAZARD_SEALED_SHORT}: etcd records segment {recorded.id} of log {log.name!r} as {recorded.state}"
            if segment.footer is None and segment.state != "finalized":
                found.append(
                    SealedShort(
                        log.id,
                        recorded.id,
                        f"{said} (last entry {recorded.last_entry}) but its files have no footer: readers before "
                        "Woodpecker v0.1.37 loop on 'no record extract' there (milvus #52341)",
                    )
                )
            elif (
                segment.footer is not None
                and segment.footer.lac is not None
                and segment.footer.lac < recorded.last_entry
            ):
                found.append(
                    SealedShort(
                        log.id,
                        recorded.id,
                        f"{said} with last entry {recorded.last_entry} but its footer's LAC is {segment.footer.lac}: "
                        f"entries {segment.footer.lac + 1}..{recorded.last_entry} are not readable (zilliztech/woodpecker "
                        "#242, milvus #52341)",
                    )
                )
    return found


def check_against_meta(segments: list[Segment], meta: WoodpeckerMeta | None) -> list[Segment]:
    """`segments` with a Problem added to each whose readable entries stop before etcd's LastEntryId, plus a
    placeholder segment (state "missing") for each closed segment etcd records that has no files although a stored
    segment of its log precedes it and it was not truncated (meta_shortfalls)."""
    if meta is None:
        return segments
    stored: dict[tuple[int, int], Segment] = {}
    for segment in segments:
        if segment.state not in ("misnamed", "missing"):
            stored[(segment.log_id, segment.segment_id)] = segment
    last_entries: dict[int, dict[int, int | None]] = {}
    for (log_id, segment_id), segment in stored.items():
        last_entries.setdefault(log_id, {})[segment_id] = segment.last_entry
    added: list[Segment] = []
    for short in sealed_short(list(stored.values()), meta):
        found = stored[(short.log_id, short.segment_id)]
        found.problem(found.path, short.message, loses_entries=False)
    for shortfall in meta_shortfalls(last_entries, meta):
        if shortfall.no_files:
            where = f"log {shortfall.log_id} segment {shortfall.segment_id}"
            missing = Segment(shortfall.log_id, shortfall.segment_id, "none", where, "missing", None)
            missing.problem(missing.path, shortfall.message)
            added.append(missing)
        else:
            found = stored[(shortfall.log_id, shortfall.segment_id)]
            found.problem(found.path, shortfall.message)
    return sorted([*segments, *added], key=lambda s: (s.log_id, s.segment_id))
