"""Fetching a bucket's objects ahead of the reader (storage.S3Prefix): once told which objects are read next, in
order, READ_AHEAD threads fetch them; no more than READ_AHEAD are in flight or waiting to be read at any time, each
is fetched once, and an object read out of that order is fetched directly while the ones planned before it, which
the reader skipped, are dropped."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING, Protocol

from mqctl.mq.woodpecker.segments import BLOCK, Data

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

# S3 objects fetched ahead of the reader at once, at most (in flight, or fetched and not yet read): the cap on
# concurrent GETs, and with the per-object cap (segments.max_file_bytes) the bound on the bytes held ahead
READ_AHEAD = 8


class Place(Protocol):
    """A segment's folder and files (storage.SegmentPlace)."""

    @property
    def layout(self) -> str: ...
    @property
    def folder(self) -> str: ...
    @property
    def files(self) -> frozenset[str]: ...
    @property
    def problem(self) -> str | None: ...


def read_ahead(files: object, places: Iterable[Place], *, footers_only: Collection[str] = ()) -> None:
    """Tell segment files which segments are read next, in order: a bucket (storage.S3Prefix, whose `ahead` is a
    ReadAhead) fetches their objects ahead (of the folders in `footers_only`: only their `footer.blk`, for a summary from footers);
    a folder needs no telling."""
    ahead = getattr(files, "ahead", None)
    if isinstance(ahead, ReadAhead):
        ahead.plan(
            (f"{p.folder}/{name}", name)
            for p in places
            if p.problem is None
            for name in (["footer.blk"] if p.folder in footers_only and "footer.blk" in p.files else planned_names(p))
        )


def close_files(files: object) -> None:
    """Stop a bucket's fetches ahead (those not read are dropped)."""
    ahead = getattr(files, "ahead", None)
    if isinstance(ahead, ReadAhead):
        ahead.close()


def planned_names(place: Place) -> list[str]:
    """The files of a segment in the order segments.py reads them, as far as the names tell: `data.log`; or
    `footer.blk`, then the blocks by number. segments.py reads the merged `m_N.blk` when the footer says compacted,
    which is not known before the footer is read: a segment with a footer and merged blocks is planned with them
    (compaction uploads the merged blocks, then the footer that names them, then deletes the plain ones:
    zilliztech/woodpecker v0.1.35 server/storage/objectstorage/writer_impl.go `Compact`; so they are what is read:
    every finalized segment of a compacted 3.0 WAL), any other with its `N.blk`. A guess that proves wrong costs
    fetches, not correctness: what the reader asks for outside the plan is fetched when asked."""
    files = place.files
    if place.layout == "local":
        return ["data.log"] if "data.log" in files else []
    plain: list[tuple[int, str]] = []
    merged: list[tuple[int, str]] = []
    for name in files:
        if match := BLOCK.fullmatch(name):
            (merged if match.group(1) else plain).append((int(match.group(2)), name))
    finalized = "footer.blk" in files
    blocks = merged if finalized and merged else plain
    return (["footer.blk"] if finalized else []) + [name for _, name in sorted(blocks)]


class ReadAhead:
    """The objects planned and fetched ahead by `fetch(key, name)`, in reading order."""

    def __init__(self, fetch: Callable[[str, str], Data]):
        self.fetch = fetch
        self.planned: deque[tuple[str, str]] = deque()  # (key, file name) to fetch ahead, in reading order
        self.known: set[str] = set()  # the keys planned or fetched ahead, not yet read or dropped
        self.fetching: dict[str, Future[Data]] = {}  # fetched ahead (or being fetched), in reading order
        self._pool: ThreadPoolExecutor | None = None

    def plan(self, objects: Iterable[tuple[str, str]]) -> None:
        """(key, name) of the objects read next, in order: those not planned yet join the end of the plan."""
        for key, name in objects:
            if key not in self.known:
                self.known.add(key)
                self.planned.append((key, name))
        self._top_up()

    def _top_up(self) -> None:
        from concurrent.futures import ThreadPoolExecutor

        while self.planned and len(self.fetching) < READ_AHEAD:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(READ_AHEAD, thread_name_prefix="mqctl-s3-ahead")
            key, name = self.planned.popleft()
            self.fetching[key] = self._pool.submit(self.fetch, key, name)

    def take(self, key: str) -> Future[Data] | None:
        """The fetch ahead of `key` (None when it was not planned); what was planned before it is dropped."""
        if key not in self.known:
            return None
        while self.fetching:
            first, future = next(iter(self.fetching.items()))
            del self.fetching[first]
            self.known.discard(first)
            if first == key:
                self._top_up()
                return future
            future.cancel()
        while self.planned:  # read before its turn came: fetched now, like the ones skipped before it
            first, _ = self.planned.popleft()
            self.known.discard(first)
            if first == key:
                break
        self._top_up()
        return None

    def close(self) -> None:
        """Drop what was planned and fetched ahead; the threads end with their current object."""
        self.planned.clear()
        self.known.clear()
        for future in self.fetching.values():
            future.cancel()
        self.fetching.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
