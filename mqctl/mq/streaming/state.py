"""What a Milvus 2.6+ keeps in etcd about its WAL, read-only through etcd's v3 JSON gateway.

Keys under `<etcd.rootPath>/<etcd.metaSubPath>/` (format from Milvus v2.6.x source; not yet verified on a
running 2.6):

- `streamingcoord-meta/pchannel/<pchannel>`: streaming.PChannelMeta, which streaming node holds the pchannel's
  WAL, at which term, in which state (milvus internal/metastore/kv/streamingcoord/constant.go; birdwatcher
  states/etcd/common/wal_distribution.go at 9e8cebe);
- `streamingnode-meta/wal/<pchannel>/consume-checkpoint`: streaming.WALCheckpoint, where the streaming node
  recovers the WAL from, with the AlterWAL state while a WAL switch runs (milvus
  internal/metastore/kv/streamingnode/constant.go and kv_catalog.go; birdwatcher
  states/etcd/common/wal_recovery_storage.go at 9e8cebe);
- `streamingnode-meta/wal/<pchannel>/vchannel/<vchannel>`: streaming.VChannelMeta (state, collection,
  checkpoint time tick); `.../vchannel/<vchannel>/schema/<tt>` and `.../segment-assign/<id>` are skipped;
- `datacoord-meta/channel-cp/<vchannel>`: msgpb.MsgPosition with `WAL_name` 5 (pymilvus ships it);
  `timestamp == 2^64-1` is the dropped-channel sentinel (milvus pkg/util/funcutil
  `DroppedChannelCheckpointTimestamp`, milvus PR #50002; birdwatcher PR #527).

And `<etcd.rootPath>/config/mqtype`: the mq.type pinned at first boot (mqctl.config.resolve.pinning).

Field numbers (streaming.proto): milvus-io/milvus pkg/proto/streaming.proto as stored at commit 013ee69816f0
for PChannelInfo, StreamingNodeInfo, PChannelAssignmentLog, PChannelMeta, VChannelMeta,
CollectionInfoOfVChannel and WALCheckpoint 1-5; `WALCheckpoint.alter_wal_state` 6, `AlterWALState` and
`AlterWALStage` from the same file in tinswzy/milvus at commit 823efeddfe7c (the branch of the AlterWAL
change, milvus PR #45286). The release tag that carries each field was not checked.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mqctl.config.resolve.sources import EtcdConfig

from mqctl.clock import utc_from_seconds
from mqctl.mq.declared_protos import declare, parse
from mqctl.mq.milvus_meta import MetaRange
from mqctl.mq.streaming.message_ids import WalPosition, from_message_id, from_position_bytes, parse_message_id, wal_name

PCHANNELS = "streamingcoord-meta/pchannel/"
WAL = "streamingnode-meta/wal/"
CONSUME_CHECKPOINT = "consume-checkpoint"
VCHANNEL_DIR = "vchannel"
CHANNEL_CP = "datacoord-meta/channel-cp/"
DROPPED_CHECKPOINT_TS = 2**64 - 1  # funcutil.DroppedChannelCheckpointTimestamp (math.MaxUint64)

PCHANNEL_STATES = {0: "unknown", 1: "uninitialized", 2: "assigning", 3: "assigned", 4: "unavailable"}
ACCESS_MODES = {0: "rw", 1: "ro"}
VCHANNEL_STATES = {0: "unknown", 1: "normal", 2: "dropped"}
ALTER_WAL_STAGES = {0: "none", 1: "flushing", 2: "advance-checkpoint"}

declared = declare(
    "mqctl.streaming",
    {
        "PChannelInfo": {"name": (1, "string", False), "term": (2, "int64", False), "access_mode": (3, "int32", False)},
        "StreamingNodeInfo": {"server_id": (1, "int64", False), "address": (2, "string", False)},
        "PChannelAssignmentLog": {
            "term": (1, "int64", False),
            "node": (2, "msg:StreamingNodeInfo", False),
            "access_mode": (3, "int32", False),
        },
        "PChannelMeta": {
            "channel": (1, "msg:PChannelInfo", False),
            "node": (2, "msg:StreamingNodeInfo", False),
            "state": (3, "int32", False),
            "histories": (4, "msg:PChannelAssignmentLog", True),
            "last_assign_timestamp_seconds": (5, "uint64", False),
        },
        "ConfigEntry": {"key": (1, "string", False), "value": (2, "string", False)},  # map<string, string>
        "AlterWALState": {
            "target_wal_name": (1, "int32", False),  # common.WALName
            "time_tick": (2, "uint64", False),
            "configs": (3, "msg:ConfigEntry", True),
            "stage": (4, "int32", False),
        },
        "WALCheckpoint": {
            "message_id": (1, "bytes", False),  # common.MessageID, parsed with pymilvus
            "time_tick": (2, "uint64", False),
            "recovery_magic": (3, "int64", False),
            "replicate_config": (4, "bytes", False),
            "replicate_checkpoint": (5, "bytes", False),
            "alter_wal_state": (6, "msg:AlterWALState", False),
        },
        "CollectionInfoOfVChannel": {"collection_id": (1, "int64", False)},
        "VChannelMeta": {
            "vchannel": (1, "string", False),
            "state": (2, "int32", False),
            "collection_info": (3, "msg:CollectionInfoOfVChannel", False),
            "checkpoint_time_tick": (4, "uint64", False),
        },
    },
)


def tso_time(ts: int | None) -> dt.datetime | None:
    """A Milvus TSO `(unix_ms << 18) | logical` as UTC; None for 0, the sentinel, or a value past year 9999."""
    if not ts or ts == DROPPED_CHECKPOINT_TS:
        return None
    try:
        return dt.datetime.fromtimestamp((ts >> 18) / 1000, dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


@dataclass
class AlterWAL:
    stage: str  # none | flushing | advance-checkpoint
    target: str  # WAL name the switch goes to
    time_tick: int
    configs: dict[str, str]


@dataclass
class WalCheckpoint:
    """A streaming node's WAL checkpoint of one pchannel."""

    pchannel: str
    position: WalPosition | None
    time_tick: int
    recovery_magic: int
    alter_wal: AlterWAL | None
    replicated: bool  # carries a replicate checkpoint (CDC target)

    @property
    def time(self) -> dt.datetime | None:
        return tso_time(self.time_tick)


@dataclass
class PChannelAssignment:
    """The streaming coordinator's view of one pchannel."""

    pchannel: str
    term: int
    access_mode: str
    state: str
    node_id: int | None
    node_address: str | None
    last_assigned: dt.datetime | None
    history_addresses: list[str] = field(default_factory=list)


@dataclass
class VChannelRecord:
    vchannel: str
    pchannel: str
    state: str
    collection_id: int | None
    checkpoint_time_tick: int


@dataclass
class ChannelCheckpoint:
    """datacoord's channel checkpoint of one vchannel, with the WAL its position belongs to."""

    vchannel: str
    wal: str
    position: WalPosition
    timestamp: int

    @property
    def dropped(self) -> bool:
        return self.timestamp == DROPPED_CHECKPOINT_TS

    @property
    def time(self) -> dt.datetime | None:
        return tso_time(self.timestamp)


@dataclass
class StreamingState:
    meta_root: str
    pinned_mq: str | None  # <root>/config/mqtype, None when absent
    pinned_key: str
    pchannels: dict[str, PChannelAssignment]
    wal_checkpoints: dict[str, WalCheckpoint]
    vchannels: dict[str, VChannelRecord]
    channel_checkpoints: dict[str, ChannelCheckpoint]
    undecodable: list[str] = field(default_factory=list)  # keys whose value did not parse

    @property
    def found(self) -> bool:
        return bool(self.pchannels or self.wal_checkpoints or self.vchannels)


def has_streaming_meta(etcd: EtcdConfig, meta_root: str) -> bool:
    """Whether etcd holds 2.6 streaming state under `meta_root` (the sign of a 2.6+ deployment)."""
    sub = meta_root[len(etcd.root) :].strip("/") if meta_root.startswith(etcd.root) else meta_root
    prefix = f"{sub}/" if sub else ""
    return any(etcd.count_under(f"{prefix}{part}") for part in (PCHANNELS, WAL))


def _wal_checkpoint(pchannel: str, data: bytes) -> WalCheckpoint | None:
    cp = parse(declared("WALCheckpoint"), data)
    if cp is None:
        return None
    position = None
    if cp.message_id:
        pair = parse_message_id(cp.message_id)
        if pair is not None:
            position = from_message_id(*pair)
    alter = None
    if cp.HasField("alter_wal_state"):
        state = cp.alter_wal_state
        alter = AlterWAL(
            ALTER_WAL_STAGES.get(state.stage, f"stage#{state.stage}"),
            wal_name(state.target_wal_name),
            state.time_tick,
            {entry.key: entry.value for entry in state.configs},
        )
    return WalCheckpoint(pchannel, position, cp.time_tick, cp.recovery_magic, alter, bool(cp.replicate_checkpoint))


def _pchannel(name: str, data: bytes) -> PChannelAssignment | None:
    meta = parse(declared("PChannelMeta"), data)
    if meta is None:
        return None
    node = meta.node if meta.HasField("node") else None
    stamp = meta.last_assign_timestamp_seconds
    return PChannelAssignment(
        meta.channel.name or name,
        meta.channel.term,
        ACCESS_MODES.get(meta.channel.access_mode, str(meta.channel.access_mode)),
        PCHANNEL_STATES.get(meta.state, str(meta.state)),
        node.server_id if node is not None else None,
        node.address if node is not None else None,
        utc_from_seconds(stamp) if stamp else None,
        [h.node.address for h in meta.histories if h.node.address],
    )


def _channel_checkpoint(vchannel: str, data: bytes) -> ChannelCheckpoint | None:
    from mqctl.milvus.protos import pb2

    message = parse(pb2("msg_pb2").MsgPosition, data)
    if message is None:
        return None
    wal = wal_name(message.WAL_name)
    return ChannelCheckpoint(
        message.channel_name or vchannel, wal, from_position_bytes(wal, bytes(message.msgID)), message.timestamp
    )


class StreamingReader(MetaRange):
    """Reads the 2.6 streaming state of one Milvus (an EtcdConfig for its JSON gateway)."""

    def detected(self) -> bool:
        return has_streaming_meta(self.etcd, self.root)

    def pinned_mq(self) -> tuple[str | None, str]:
        item = self.etcd.read().get("mq.type")
        return (item.value.strip() or None, item.key) if item is not None else (None, f"{self.etcd.root}/config/mqtype")

    def read(self) -> StreamingState:
        undecodable: list[str] = []
        pchannels: dict[str, PChannelAssignment] = {}
        for name, value in self._range(PCHANNELS):
            assignment = _pchannel(name, value)
            if assignment is None:
                undecodable.append(f"{self.root}/{PCHANNELS}{name}")
            else:
                pchannels[assignment.pchannel] = assignment
        checkpoints: dict[str, WalCheckpoint] = {}
        vchannels: dict[str, VChannelRecord] = {}
        for key, value in self._range(WAL):
            parts = key.split("/")
            pchannel = parts[0]
            if parts[1:] == [CONSUME_CHECKPOINT]:
                cp = _wal_checkpoint(pchannel, value)
                if cp is None:
                    undecodable.append(f"{self.root}/{WAL}{key}")
                else:
                    checkpoints[pchannel] = cp
            elif len(parts) == 3 and parts[1] == VCHANNEL_DIR:
                meta = parse(declared("VChannelMeta"), value)
                if meta is None:
                    undecodable.append(f"{self.root}/{WAL}{key}")
                    continue
                vchannel = meta.vchannel or parts[2]
                vchannels[vchannel] = VChannelRecord(
                    vchannel,
                    pchannel,
                    VCHANNEL_STATES.get(meta.state, str(meta.state)),
                    meta.collection_info.collection_id or None,
                    meta.checkpoint_time_tick,
                )
        channel_cps: dict[str, ChannelCheckpoint] = {}
        for vchannel, value in self._range(CHANNEL_CP):
            position = _channel_checkpoint(vchannel, value)
            if position is None:
                undecodable.append(f"{self.root}/{CHANNEL_CP}{vchannel}")
            else:
                channel_cps[vchannel] = position
        pinned, pinned_key = self.pinned_mq()
        return StreamingState(
            self.root, pinned, pinned_key, pchannels, checkpoints, vchannels, channel_cps, undecodable
        )
