"""The segment files against Woodpecker's own record of them in etcd: a `SegmentMetadata` in state Completed or
Sealed carries the segment's LastEntryId (meta.py), which the files must reach. Fewer entries, or no files at all
for a closed segment between segments that are stored, is data lost that no CRC can show (the failure
milvus#52341 and zilliztech/woodpecker#242/#243 report for 3.0: a sealed segment whose footer or blocks fall short of
what etcd says)."""

from __future__ import annotations

from mqctl.mq.woodpecker.meta import WoodpeckerMeta
from mqctl.mq.woodpecker.segments import Segment

CLOSED = ("completed", "sealed")


def check_against_meta(segments: list[Segment], meta: WoodpeckerMeta | None) -> list[Segment]:
    """`segments` with a Problem added to each whose readable entries stop before etcd's LastEntryId, plus a
    placeholder segment (state "missing") for each closed segment etcd records that has no files although a stored
    segment of its log precedes it and it was not truncated. Logs without any file are left alone (another folder,
    or a bucket not read)."""
    if meta is None:
        return segments
    stored: dict[int, dict[int, Segment]] = {}
    for segment in segments:
        if segment.state not in ("misnamed", "missing"):
            stored.setdefault(segment.log_id, {})[segment.segment_id] = segment
    added: list[Segment] = []
    for log in meta.logs.values():
        files = stored.get(log.id)
        if not files:
            continue
        oldest = min(files)
        for recorded in log.segments:
            if recorded.state not in CLOSED or recorded.last_entry < 0:
                continue
            said = f"etcd records segment {recorded.id} of log {log.name!r} as {recorded.state} with last entry "
            found = files.get(recorded.id)
            if found is None:
                if recorded.id > oldest and recorded.id > log.truncated_segment:
                    missing = Segment(
                        log.id, recorded.id, "none", f"log {log.id} segment {recorded.id}", "missing", None
                    )
                    missing.problem(
                        missing.path,
                        f"{said}{recorded.last_entry}; no file holds it: entries 0..{recorded.last_entry} are lost",
                    )
                    added.append(missing)
                continue
            last = found.last_entry
            if last is None or last < recorded.last_entry:
                start = 0 if last is None else last + 1
                found.problem(
                    found.path,
                    f"{said}{recorded.last_entry}; the files hold "
                    + ("no entry" if last is None else f"entries up to {last}")
                    + f": entries {start}..{recorded.last_entry} are missing",
                )
    return sorted([*segments, *added], key=lambda s: (s.log_id, s.segment_id))
