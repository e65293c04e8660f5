"""What Milvus 2.2–2.5 keeps in etcd about channels: collections and their channels (root-coord), channel
checkpoints and segment positions (datacoord). Read-only, through etcd's v3 JSON gateway.

Key layout under `<etcd.rootPath>/<etcd.metaSubPath>/` (read in Milvus's source, the same in 2.3, 2.4, 2.5):
- `datacoord-meta/channel-cp/<vchannel>`: msgpb.MsgPosition, the position datacoord seeks a channel's
  consumers to on recovery;
- `datacoord-meta/s/<collection>/<partition>/<segment>`: datapb.SegmentInfo (start and dml positions);
- `root-coord/database/collection-info/<db>/<collection>` (2.2: `root-coord/collection/<collection>`):
  etcdpb.CollectionInfo with the vchannel -> pchannel pairs and the collection's start positions;
- `root-coord/database/db-info/<db>`: etcdpb.DatabaseInfo.
2.6 streaming keeps WAL checkpoints under `streamingnode-meta/wal/...` instead: mqctl.mq.streaming reads those.
The etcdpb/datapb classes are not in pymilvus, so the few fields read are declared below (message-typed
fields as bytes, parsed with pymilvus's own classes).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mqctl.config.resolve.sources import DEFAULT_ETCD_ROOT
from mqctl.errors import PreconditionError

if TYPE_CHECKING:
    from mqctl.config.resolve.resolution import Resolution
    from mqctl.config.resolve.sources import EtcdConfig
    from mqctl.milvus.client import MilvusTarget

CHANNEL_CP = "datacoord-meta/channel-cp/"
SEGMENTS = "datacoord-meta/s/"
COLLECTIONS = "root-coord/database/collection-info/"
LEGACY_COLLECTIONS = "root-coord/collection/"  # 2.2, and collections without a database id
DATABASES = "root-coord/database/db-info/"
STREAMING_WAL = "streamingnode-meta/wal/"
TOMBSTONE = b"\xe2\x9b\xbc"  # root-coord's snapshot KV writes this over a dropped key
COLLECTION_DROPPING = 2  # etcdpb.CollectionState: Created 0, Creating 1, Dropping 2, Dropped 3
SEGMENT_DROPPED = 6  # commonpb.SegmentState
DEFAULT_DB_ID = 1

# field name -> (number, type, repeated); "bytes" stands for a nested message parsed later
_FIELDS = {
    "CollectionInfo": {
        "ID": (1, "int64", False),
        "schema": (2, "bytes", False),
        "create_time": (3, "uint64", False),
        "virtual_channel_names": (7, "string", True),
        "physical_channel_names": (8, "string", True),
        "start_positions": (11, "bytes", True),
        "state": (13, "int32", False),
        "db_id": (15, "int64", False),
    },
    "DatabaseInfo": {"name": (2, "string", False), "id": (3, "int64", False), "state": (4, "int32", False)},
    "SegmentInfo": {
        "ID": (1, "int64", False),
        "collectionID": (2, "int64", False),
        "partitionID": (3, "int64", False),
        "insert_channel": (4, "string", False),
        "num_of_rows": (5, "int64", False),
        "state": (6, "int32", False),
        "start_position": (9, "bytes", False),
        "dml_position": (10, "bytes", False),
        "is_importing": (17, "bool", False),
        "is_fake": (18, "bool", False),
    },
}


@functools.cache
def _meta_class(name: str) -> Any:
    """A protobuf class with the fields of `_FIELDS[name]`: wire-compatible with Milvus's own message."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    proto = descriptor_pb2.FileDescriptorProto(
        name=f"mqctl_milvus_meta_{name}.proto", package="mqctl.milvus_meta", syntax="proto3"
    )
    message = proto.message_type.add(name=name)
    kinds = descriptor_pb2.FieldDescriptorProto
    for field_name, (number, kind, repeated) in _FIELDS[name].items():
        message.field.add(
            name=field_name,
            number=number,
            type=getattr(kinds, f"TYPE_{kind.upper()}"),
            label=kinds.LABEL_REPEATED if repeated else kinds.LABEL_OPTIONAL,
        )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"mqctl.milvus_meta.{name}"))


def _parse(name: str, data: bytes) -> Any:
    from google.protobuf.message import DecodeError

    message = _meta_class(name)()
    try:
        message.ParseFromString(data)
    except DecodeError:
        return None
    return message


@dataclass
class Position:
    """A msgpb.MsgPosition: where in its pchannel a vchannel's consumer resumes."""

    vchannel: str
    msg_id: bytes
    timestamp: int  # Milvus TSO
    origin: str  # channel-cp | segment-dml | segment-start | collection-start

    @property
    def id(self) -> int:
        """The MQ position: NATS stream sequence or RocksMQ message id (both 8 bytes little-endian: Milvus nmq_id.go, rmq_id.go)."""
        return int.from_bytes(self.msg_id[:8], "little")


def parse_position(data: bytes, origin: str, vchannel: str = "") -> Position | None:
    """A serialized MsgPosition, or None when it does not parse or carries no message id."""
    from google.protobuf.message import DecodeError

    from mqctl.milvus.protos import pb2

    message = pb2("msg_pb2").MsgPosition()
    try:
        message.ParseFromString(data)
    except DecodeError:
        return None
    if not message.msgID:
        return None
    return Position(message.channel_name or vchannel, bytes(message.msgID), message.timestamp, origin)


@dataclass
class CollectionMeta:
    id: int
    name: str
    database: str
    db_id: int
    created_ts: int
    channels: dict[str, str]  # vchannel -> pchannel
    start_positions: dict[str, bytes] = field(default_factory=dict)  # pchannel -> msgID at creation


@dataclass
class ChannelMeta:
    """Everything etcd says about the vchannels of one Milvus."""

    meta_root: str  # e.g. by-dev/meta
    collections: dict[int, CollectionMeta]
    checkpoints: dict[str, Position]  # vchannel -> datacoord channel checkpoint
    segment_positions: dict[str, Position]  # vchannel -> earliest segment dml/start position (fallback)

    def vchannels(self) -> dict[str, CollectionMeta | None]:
        """Every vchannel of a live collection, plus checkpoints left by dropped collections (None)."""
        found: dict[str, CollectionMeta | None] = {}
        for collection in self.collections.values():
            for vchannel in collection.channels:
                found[vchannel] = collection
        for vchannel in self.checkpoints:
            found.setdefault(vchannel, None)
        return found

    def seek_position(self, vchannel: str) -> Position | None:
        """The position datacoord hands a consumer of `vchannel`, with its fallbacks in datacoord's order
        (handler.go GetChannelSeekPosition): channel checkpoint, earliest segment position, collection start."""
        if vchannel in self.checkpoints:
            return self.checkpoints[vchannel]
        if vchannel in self.segment_positions:
            return self.segment_positions[vchannel]
        for collection in self.collections.values():
            if vchannel in collection.channels:
                msg_id = collection.start_positions.get(collection.channels[vchannel])
                if msg_id:
                    return Position(vchannel, msg_id, collection.created_ts, "collection-start")
        return None


def physical_channel(vchannel: str) -> str:
    """The pchannel of a vchannel as Milvus's funcutil.ToPhysicalChannel derives it (`..._<collection>v<N>`)."""
    return vchannel.rsplit("_", 1)[0] if "_" in vchannel else vchannel


class MetaRange:
    """The keys under `<rootPath>/<metaSubPath>/` of one Milvus in etcd (an EtcdConfig for its JSON gateway),
    deleted keys' tombstones left out: what the 2.5 meta reader and the 2.6 streaming reader both read."""

    def __init__(self, etcd: EtcdConfig, meta_sub_path: str = "meta"):
        self.etcd = etcd
        self.root = f"{etcd.root}/{meta_sub_path.strip('/')}".strip("/")

    def _range(self, sub: str) -> list[tuple[str, bytes]]:
        prefix = f"{self.root}/{sub}"
        return [(key[len(prefix) :], value) for key, value in self.etcd.get_prefix(prefix) if value != TOMBSTONE]


class MetaReader(MetaRange):
    """Reads the channel meta of one Milvus 2.2-2.5 from etcd."""

    def refuse_streaming(self) -> None:
        if self._range(STREAMING_WAL):
            raise PreconditionError(
                f"etcd at {self.etcd.shown} holds Milvus 2.6+ streaming WAL checkpoints "
                f"({self.root}/{STREAMING_WAL}...): the 2.2-2.5 reading does not apply",
                hint="drop --milvus-version (or give 2.6.x): `mqctl channels checkpoints --etcd URL` reads the 2.6 "
                "state",
            )

    def databases(self) -> dict[int, str]:
        names = {DEFAULT_DB_ID: "default"}
        for _, value in self._range(DATABASES):
            info = _parse("DatabaseInfo", value)
            if info is not None and info.name:
                names[info.id] = info.name
        return names

    def collections(self) -> dict[int, CollectionMeta]:
        databases = self.databases()
        found: dict[int, CollectionMeta] = {}
        for sub in (LEGACY_COLLECTIONS, COLLECTIONS):
            for _, value in self._range(sub):
                info = _parse("CollectionInfo", value)
                if info is None or not info.ID or info.state >= COLLECTION_DROPPING:
                    continue
                schema = _schema_name(info.schema)
                db_id = info.db_id or DEFAULT_DB_ID
                starts = {}
                for raw in info.start_positions:
                    pair = _key_data(raw)
                    if pair is not None:
                        starts[pair[0]] = pair[1]
                found[info.ID] = CollectionMeta(
                    info.ID,
                    schema,
                    databases.get(db_id, str(db_id)),
                    db_id,
                    info.create_time,
                    dict(zip(info.virtual_channel_names, info.physical_channel_names)),
                    starts,
                )
        return found

    def channel_checkpoints(self) -> dict[str, Position]:
        """Every vchannel's channel checkpoint. A value that is no MsgPosition with a message id (truncated or
        random bytes) is an error, not "no checkpoint": a report or a guard that skipped it would call a
        vchannel safe whose seek position nobody can tell."""
        found = {}
        damaged = []
        for vchannel, value in self._range(CHANNEL_CP):
            position = parse_position(value, "channel-cp", vchannel)
            if position is not None:
                found[vchannel] = position
            elif value:
                damaged.append(f"{self.root}/{CHANNEL_CP}{vchannel} ({len(value)} bytes)")
        if damaged:
            raise PreconditionError(
                f"etcd at {self.etcd.shown}: channel checkpoint(s) that do not decode as a MsgPosition with a "
                f"message id: {', '.join(damaged)}",
                hint="the key is damaged: restore etcd from a backup, or let Milvus write it anew "
                "(FlushAll moves every channel checkpoint); nothing can be said of those vchannels until then",
            )
        return found

    def segment_positions(self) -> dict[str, Position]:
        """Per vchannel the earliest dml (else start) position of its live segments, as datacoord's
        getEarliestSegmentDMLPos (importing and dropped segments skipped)."""
        earliest: dict[str, Position] = {}
        for _, value in self._range(SEGMENTS):
            segment = _parse("SegmentInfo", value)
            if segment is None or segment.is_importing or segment.is_fake or segment.state == SEGMENT_DROPPED:
                continue
            position = (
                parse_position(segment.dml_position, "segment-dml", segment.insert_channel)
                if segment.dml_position
                else None
            ) or (
                parse_position(segment.start_position, "segment-start", segment.insert_channel)
                if segment.start_position
                else None
            )
            if position is None:
                continue
            known = earliest.get(segment.insert_channel)
            if known is None or position.timestamp < known.timestamp:
                earliest[segment.insert_channel] = position
        return earliest

    def read(self, *, collections: dict[int, CollectionMeta] | None = None) -> ChannelMeta:
        """All of it; `collections` from elsewhere (Milvus itself) replaces root-coord's."""
        self.refuse_streaming()
        return ChannelMeta(
            self.root,
            self.collections() if collections is None else collections,
            self.channel_checkpoints(),
            self.segment_positions(),
        )


def _schema_name(data: bytes) -> str:
    from google.protobuf.message import DecodeError

    from mqctl.milvus.protos import pb2

    schema = pb2("schema_pb2").CollectionSchema()
    try:
        schema.ParseFromString(data)
    except DecodeError:
        return ""
    return str(schema.name)


def _key_data(data: bytes) -> tuple[str, bytes] | None:
    from google.protobuf.message import DecodeError

    from mqctl.milvus.protos import pb2

    pair = pb2("common_pb2").KeyDataPair()
    try:
        pair.ParseFromString(data)
    except DecodeError:
        return None
    return pair.key, bytes(pair.data)


def collections_from_milvus(target: MilvusTarget) -> dict[int, CollectionMeta]:
    """The collections of every database as Milvus describes them (vchannels, pchannels, start positions)."""
    from mqctl.milvus.client import connect
    from mqctl.milvus.protos import pb2

    request = pb2("milvus_pb2").DescribeCollectionRequest
    main = connect(target)
    try:
        databases = main.list_databases()
    finally:
        main.close()
    found: dict[int, CollectionMeta] = {}
    for database in databases:
        client = connect(target, db=database)
        try:
            handler = client._get_connection()
            for name in client.list_collections():
                answer = handler._stub.DescribeCollection(request(db_name=database, collection_name=name), timeout=30)
                if answer.status.code == 0 and answer.status.error_code == 0 and answer.collectionID:
                    found[answer.collectionID] = CollectionMeta(
                        answer.collectionID,
                        name,
                        database,
                        answer.db_id or DEFAULT_DB_ID,
                        answer.created_timestamp,
                        dict(zip(answer.virtual_channel_names, answer.physical_channel_names)),
                        {pair.key: bytes(pair.data) for pair in answer.start_positions},
                    )
        finally:
            client.close()
    return found


def meta_reader(url: str | None, root: str | None, resolution: Resolution | None = None) -> MetaReader:
    """The reader for --etcd/--etcd-root; with --config, what the config leaves out comes from it
    (etcd.endpoints' first entry, etcd.rootPath, etcd.metaSubPath), as Milvus itself reads them."""
    from mqctl.config.resolve.sources import EtcdConfig
    from mqctl.errors import InputError

    def configured(key: str) -> str | None:
        return (resolution.value(key) or None) if resolution is not None else None

    url = url or (configured("etcd.endpoints") or "").split(",")[0].strip() or None
    if not url:
        raise InputError(
            "no etcd to read channel checkpoints from",
            hint="pass --etcd http://HOST:2379 (or --config with etcd.endpoints)",
        )
    return MetaReader(
        EtcdConfig(url, root or configured("etcd.rootPath") or DEFAULT_ETCD_ROOT),
        configured("etcd.metaSubPath") or "meta",
    )
