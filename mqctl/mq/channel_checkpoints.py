"""Milvus's channel checkpoints, whatever the version, through one entry: which state a deployment keeps
(`on_streaming`), where each live vchannel resumes (`live_checkpoints`: what migrate waits for and retention
guards), and the judged report of `channels checkpoints` (`judge_streaming` on 2.6+, `judge_channel_cp` on
2.3-2.5). Callers name etcd once (a MetaReader) and the version when they know it.

- Milvus 2.3-2.5: datacoord's channel checkpoints (`<root>/datacoord-meta/channel-cp/<vchannel>`, a MsgPosition
  whose MsgID is the MQ's own id), judged against the MQ by checkpoints.py.
- Milvus 2.6+: the Streaming Service's state (streaming/state.py: pchannel assignments, WAL checkpoints, vchannel
  meta, and the same datacoord channel checkpoints now carrying their WAL's name and message id), judged by
  streaming/wal_state.py with Woodpecker's meta and files (format from Milvus v2.6.x source, milvus
  pkg/proto/messages.proto and internal/metastore/kv/datacoord; not yet verified on a running 2.6).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING

from mqctl.errors import PreconditionError
from mqctl.mq.checkpoints import LiveCheckpoint

if TYPE_CHECKING:
    from mqctl.backends import Version
    from mqctl.config.resolve.resolution import Resolution
    from mqctl.mq.checkpoints import CheckpointReport
    from mqctl.mq.milvus_meta import ChannelMeta, MetaReader
    from mqctl.mq.model import MQSource
    from mqctl.mq.streaming.state import ChannelCheckpoint, StreamingState
    from mqctl.mq.streaming.wal_state import WalFiles, WalStateJudgement

# the WALs whose positions are one number mqctl's readers seek to (a Woodpecker segment/entry as channels peek
# numbers it); a Pulsar ledger/entry is not: mqctl reads no Pulsar
COUNTED_WALS = ("rocksmq", "kafka", "woodpecker")


def on_streaming(reader: MetaReader, version: Version | None) -> bool:
    """Whether the deployment keeps 2.6's Streaming Service state: by its version when known, else by what etcd
    holds under the meta root."""
    from mqctl.backends import V2_6
    from mqctl.mq.streaming.state import has_streaming_meta

    return version >= V2_6 if version is not None else has_streaming_meta(reader.etcd, reader.root)


def streaming_state(reader: MetaReader) -> StreamingState:
    """The 2.6 Streaming Service state under the reader's meta root."""
    from mqctl.mq.streaming.state import StreamingReader

    return StreamingReader(reader.etcd, reader.root[len(reader.etcd.root) :].strip("/") or "meta").read()


def live_checkpoints(reader: MetaReader, version: Version | None = None) -> list[LiveCheckpoint]:
    """Every live collection's vchannel with where Milvus resumes it, by vchannel, on any version: 2.3-2.5 from the
    channel meta (seek positions), 2.6+ from datacoord's channel checkpoints in the streaming state. A 2.6
    checkpoint on a WAL whose positions mqctl cannot count (Pulsar) is refused with its vchannel, never left out."""
    if not on_streaming(reader, version):
        from mqctl.mq.checkpoints import live_checkpoints as seek_checkpoints

        return seek_checkpoints(reader.read())
    state = streaming_state(reader)
    collections = reader.collections()
    found = []
    for vchannel, checkpoint in sorted(state.channel_checkpoints.items()):
        record = state.vchannels.get(vchannel)
        collection_id = record.collection_id if record is not None else _collection_id(vchannel)
        collection = collections.get(collection_id) if collection_id is not None else None
        if checkpoint.dropped or collection is None:
            continue  # a dropped vchannel, or a collection no longer live: nothing left to resume
        pchannel = record.pchannel if record is not None else vchannel.rsplit("_", 1)[0]
        position = _counted(checkpoint)
        found.append(
            LiveCheckpoint(
                vchannel, pchannel, collection.database, collection.name, position, checkpoint.timestamp, "channel-cp"
            )
        )
    return found


def _counted(checkpoint: ChannelCheckpoint) -> int:
    """The checkpoint's position as the number mqctl's reader of its WAL seeks to."""
    position = checkpoint.position
    if position.wal not in COUNTED_WALS or position.order is None:
        raise PreconditionError(
            f"the channel checkpoint of {checkpoint.vchannel} is a {position.wal} position ({position.text}): mqctl "
            "counts positions on RocksMQ, Kafka and Woodpecker WALs only",
            hint="check these checkpoints with `mqctl channels checkpoints --etcd URL`",
        )
    if position.wal == "woodpecker":
        from mqctl.mq.woodpecker.source import message_id

        return message_id(*position.order[:2])
    return position.order[0]


def _collection_id(vchannel: str) -> int | None:
    """The collection id in a vchannel name (`<pchannel>_<collection id>v<n>`), None when it holds none."""
    tail = vchannel.rsplit("_", 1)[-1]
    head = tail.split("v", 1)[0]
    return int(head) if head.isdigit() else None


def judge_streaming(
    reader: MetaReader,
    resolution: Resolution | None,
    *,
    wal_files: WalFiles | None,
    truncation_lag: dt.timedelta,
) -> WalStateJudgement:
    """The 2.6 report of `channels checkpoints`: the streaming state judged with Woodpecker's meta (under the prefix
    etcd's config or else the config file names) and the files at `wal_files`."""
    from mqctl.mq.streaming.wal_state import judge_wal_state

    etcd_values = reader.etcd.read()

    def configured(key: str) -> str | None:
        item = etcd_values.get(key)
        if item is not None and item.value:
            return str(item.value)
        return (resolution.value(key) or None) if resolution is not None else None

    return judge_wal_state(
        streaming_state(reader),
        reader.etcd,
        configured=configured,
        wal_files=wal_files,
        collections={cid: (c.database, c.name) for cid, c in reader.collections().items()},
        truncation_lag=truncation_lag,
    )


def judge_channel_cp(
    read_meta: Callable[[], ChannelMeta],
    source: MQSource,
    *,
    watch_seconds: float,
    rocksmq_retention_seconds: float,
    milvus_uri: str | None,
    etcd: str,
) -> CheckpointReport:
    """The 2.3-2.5 report of `channels checkpoints`: each vchannel's channel checkpoint against the MQ."""
    from mqctl.mq.checkpoints import checkpoint_report

    return checkpoint_report(
        read_meta,
        source,
        watch_seconds=watch_seconds,
        rocksmq_retention_seconds=rocksmq_retention_seconds,
        milvus_uri=milvus_uri,
        etcd=etcd,
    )
