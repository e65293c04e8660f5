"""Milvus 2.6's WAL checkpoints judged once: the streaming state in etcd, Woodpecker's own meta and (where the WAL
is a Woodpecker folder or bucket) its segment files, read and handed to `assess_streaming`.

`channels checkpoints --etcd` on a 2.6 deployment and the doctor's DR402 ask the same question of the same bytes;
both call `judge_wal_state`, which differ only in what a part that cannot be read means to them: the command
stops with that part's error, the doctor reports it and judges what it could read. Callers resolve where things are
(etcd, the meta root, the WAL location) at their entry point and pass them down."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mqctl.errors import MqctlError
from mqctl.mq.streaming.checkpoint_model import DEFAULT_TRUNCATION_LAG, StreamingCheckpointReport
from mqctl.mq.streaming.checkpoints import assess_streaming
from mqctl.mq.streaming.state import StreamingState

if TYPE_CHECKING:
    from mqctl.config.resolve.sources import EtcdConfig
    from mqctl.mq.woodpecker.meta import WoodpeckerMeta
    from mqctl.mq.woodpecker.segment_model import Segment
    from mqctl.mq.woodpecker.storage import S3Access

WOODPECKER_META = "woodpecker-meta"  # Woodpecker's LogMeta/SegmentMetadata in etcd
WOODPECKER_FILES = "woodpecker-files"  # the segment files of the WAL folder or bucket


@dataclass(frozen=True)
class WalFiles:
    """Where the Woodpecker WAL's segment files are: a folder or an s3:// URL, and how to reach a bucket."""

    location: str
    access: S3Access | None = None


@dataclass
class WalStateJudgement:
    """The report, and the parts that could not be read (WOODPECKER_META, WOODPECKER_FILES) with their error: the
    report then judges without them."""

    report: StreamingCheckpointReport
    unread: dict[str, MqctlError] = field(default_factory=dict)
    segments: list[Segment] | None = None  # the segment files read, when a location was given and read
    woodpecker: WoodpeckerMeta | None = None  # Woodpecker's meta, when read


def judge_wal_state(
    state: StreamingState,
    etcd: EtcdConfig,
    *,
    configured: Callable[[str], str | None],
    wal_files: WalFiles | None = None,
    collections: dict[int, tuple[str, str]] | None = None,
    truncation_lag: dt.timedelta = DEFAULT_TRUNCATION_LAG,
) -> WalStateJudgement:
    """Read Woodpecker's meta (under `woodpecker.meta.prefix` as `configured` says it) and the files at
    `wal_files`, then judge `state` with them. `configured(key)`: the value Milvus runs with, or None."""
    from mqctl.mq.streaming.wal_files import read_wal_folder
    from mqctl.mq.woodpecker.meta import read_woodpecker_meta

    unread: dict[str, MqctlError] = {}
    try:
        woodpecker = read_woodpecker_meta(etcd, configured("woodpecker.meta.prefix"))
    except MqctlError as err:
        unread[WOODPECKER_META], woodpecker = err, None
    segments = None
    if wal_files is not None:
        try:
            segments = read_wal_folder(wal_files.location, wal_files.access)
        except MqctlError as err:
            unread[WOODPECKER_FILES] = err
    report = assess_streaming(
        state,
        woodpecker,
        collections=collections,
        woodpecker_storage=configured("woodpecker.storage.type"),
        wal_files=segments,
        truncation_lag=truncation_lag,
        etcd=etcd.shown,
    )
    return WalStateJudgement(report, unread, segments, woodpecker)
