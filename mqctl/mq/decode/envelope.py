"""The Milvus 2.6 message envelope: a payload and string properties (format from Milvus v2.6.x source; not yet
verified on a running 2.6).

Properties (milvus pkg/streaming/util/message/properties.go): `_v` version, `_t` message type (decimal of
messages.proto `MessageType`, message_type.go `marshal`), `_tt` time tick (a Milvus TSO in base 36,
encoder.go `EncodeUint64`, set by message_impl.go `WithTimeTick`), `_vc` vchannel, `_h` the type's header,
`_tx` transaction context, `_ch` cipher header (the payload is encrypted: not decoded), `_lc` last confirmed id,
`_bh` broadcast header, `_wt` WAL term. A message carries `_v` when it comes from the streaming service
(`CheckIfMessageFromStreaming`). Type numbers from milvus pkg/proto/messages.proto (stored commit 003b114b9ebd).

The payload is the type's body, marshalled alone (specialized_message.go `unmarshalProtoB`): for the version-1
types the same msgpb requests 2.3-2.5 wrote (TimeTick `msgpb.TimeTickMsg`, Insert `msgpb.InsertRequest`, Delete
`msgpb.DeleteRequest`, Create/DropCollection and Create/DropPartition their msgpb requests, Import
`msgpb.ImportMsg`: pkg/streaming/util/message/codegen/reflect_info.json, stored commit 043fae3476e7); the
version-2 types carry `messagespb` bodies and headers pymilvus does not ship, declared in bodies.py. Each type is
shown under the `commonpb.MsgType` Milvus itself maps it to for its msgstream consumers
(pkg/streaming/util/message/adaptor/message_type.go `messageTypeToCommonpbMsgType`, stored commit 276187679b99).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from mqctl.clock import utc_from_seconds
from mqctl.mq.declared_protos import declare, parse

# RocksMQ written by the 2.6 streaming service: the value of `<topic>/<id>` is this prefix, then an
# `RMQMessageLayout` (payload 1, properties 2 a map<string,string>): milvus pkg/mq/mqimpl/rocksmq/client/
# streaming.go `marshalStreamingMessage` and magic.go (stored commits 5ceaf429897e, 730933ed9b43), the message in
# pkg/proto/messages.proto (stored commit 003b114b9ebd). The RocksMQ server stores the bytes it is given
# (server/rocksmq_impl.go `Produce`), so a 2.5 message (a bare msgpb request) and a 2.6 one can share a topic.
RMQ_STREAMING_MAGIC = b"\xff\xfe\xfd\xfcSTREAM"
_rmq = declare(
    "mqctl.milvus_messages",
    {
        "Property": {"key": (1, "string", False), "value": (2, "string", False)},
        "RMQMessageLayout": {"payload": (1, "bytes", False), "properties": (2, "msg:Property", True)},
        # `_tx` and an insert's `_h`, base64 of these (encoder.go `EncodeProto`; message_impl.go `WithTxnContext`)
        "TxnContext": {"txn_id": (1, "int64", False), "keepalive_milliseconds": (2, "int64", False)},
        "SegmentAssignment": {"segment_id": (1, "int64", False)},
        "PartitionSegmentAssignment": {
            "partition_id": (1, "int64", False),
            "rows": (2, "uint64", False),
            "binary_size": (3, "uint64", False),
            "segment_assignment": (4, "msg:SegmentAssignment", False),
        },
        "InsertMessageHeader": {
            "collection_id": (1, "int64", False),
            "partitions": (2, "msg:PartitionSegmentAssignment", True),
        },
    },
)

MESSAGE_TYPES = {
    0: "Unknown",
    1: "TimeTick",
    2: "Insert",
    3: "Delete",
    4: "Flush",
    5: "CreateCollection",
    6: "DropCollection",
    7: "CreatePartition",
    8: "DropPartition",
    9: "ManualFlush",
    10: "CreateSegment",
    11: "Import",
    12: "SchemaChange",
    13: "AlterCollection",
    14: "AlterLoadConfig",
    15: "DropLoadConfig",
    16: "CreateDatabase",
    17: "AlterDatabase",
    18: "DropDatabase",
    19: "AlterAlias",
    20: "DropAlias",
    21: "RestoreRBAC",
    22: "AlterUser",
    23: "DropUser",
    24: "AlterRole",
    25: "DropRole",
    26: "AlterUserRole",
    27: "DropUserRole",
    28: "AlterPrivilege",
    29: "DropPrivilege",
    30: "AlterPrivilegeGroup",
    31: "DropPrivilegeGroup",
    32: "AlterResourceGroup",
    33: "DropResourceGroup",
    34: "CreateIndex",
    35: "AlterIndex",
    36: "DropIndex",
    37: "FlushAll",
    38: "TruncateCollection",
    47: "AlterRLSMetadata",
    48: "DropRLSMetadata",
    700: "AlterWAL",
    800: "AlterReplicateConfig",
    900: "BeginTxn",
    901: "CommitTxn",
    902: "RollbackTxn",
    999: "Txn",
}


@dataclass
class Envelope:
    streaming: bool  # carries `_v`: written by the 2.6 streaming service
    version: str | None
    type: str  # MessageType name, or "type#N"
    time_tick: int | None
    vchannel: str | None
    encrypted: bool
    in_txn: bool
    txn_id: int | None = None  # from `_tx`, when it decodes

    @property
    def time(self) -> dt.datetime | None:
        return tso_time(self.time_tick)

    @property
    def type_number(self) -> int | None:
        """The `MessageType` number, or None when `_t` is missing or not a number."""
        for number, name in MESSAGE_TYPES.items():
            if name == self.type:
                return number
        return int(self.type[5:]) if self.type.startswith("type#") else None


# MessageType -> the commonpb.MsgType name Milvus's msgstream adaptor gives it (adaptor/message_type.go)
LEGACY_TYPE_NAMES = {
    1: "TimeTick",
    2: "Insert",
    3: "Delete",
    4: "FlushSegment",
    9: "ManualFlush",
    37: "FlushAll",
    10: "CreateSegment",
    5: "CreateCollection",
    6: "DropCollection",
    7: "CreatePartition",
    8: "DropPartition",
    11: "Import",
    12: "AddCollectionField",
    13: "AlterCollection",
    38: "TruncateCollection",
    47: "AlterRLSMetadata",
    48: "DropRLSMetadata",
    700: "AlterWAL",
    34: "CreateIndex",
}
# MessageType -> its version-1 body, a msgpb class pymilvus ships (codegen/reflect_info.json)
BODY_CLASSES = {
    1: "TimeTickMsg",
    2: "InsertRequest",
    3: "DeleteRequest",
    5: "CreateCollectionRequest",
    6: "DropCollectionRequest",
    7: "CreatePartitionRequest",
    8: "DropPartitionRequest",
}
# a MessageType without a commonpb.MsgType gets this offset plus its number, so --type and the JSON keep it apart
UNMAPPED_TYPE_BASE = 100_000


def tso_time(ts: int | None) -> dt.datetime | None:
    """A Milvus TSO `(unix_ms << 18) | logical` as UTC; None for 0 or a value past year 9999."""
    if not ts or not 0 < ts < (1 << 64) - 1:
        return None
    return utc_from_seconds((ts >> 18) / 1000)


def has_envelope(properties: dict[str, str] | None) -> bool:
    """Properties written by the 2.6 streaming service (`_v` and `_t`), not 2.5 NATS headers."""
    return properties is not None and "_v" in properties and "_t" in properties


def in_transaction(properties: dict[str, str] | None) -> bool:
    """Whether the properties carry a transaction context (`_tx`): Envelope.in_txn without reading the rest, for
    readers that pass every message outside a transaction on as it is."""
    return properties is not None and "_tx" in properties


def read_envelope(properties: dict[str, str]) -> Envelope:
    """What the properties say about a message; unknown or malformed values stay visible, never guessed."""
    raw_type = properties.get("_t")
    try:
        number = int(raw_type) if raw_type is not None else 0
        kind = MESSAGE_TYPES.get(number, f"type#{number}")
    except ValueError:
        kind = f"type {raw_type!r}"
    tick = properties.get("_tt")
    try:
        time_tick = int(tick, 36) if tick else None
    except ValueError:
        time_tick = None
    txn = _base64_proto("TxnContext", properties.get("_tx"))
    return Envelope(
        "_v" in properties,
        properties.get("_v"),
        kind,
        time_tick,
        properties.get("_vc"),
        "_ch" in properties,
        in_transaction(properties),
        txn.txn_id if txn is not None else None,
    )


def _base64_proto(name: str, text: str | None) -> Any:
    """A property holding base64 of a marshalled proto (encoder.go `EncodeProto`), parsed; None when absent or not
    that message."""
    import base64
    import binascii

    if not text:
        return None
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return parse(_rmq(name), raw)


def insert_segments(properties: dict[str, str]) -> dict[int, int]:
    """partition id -> the segment the streaming node assigned, from an insert's `_h` (InsertMessageHeader,
    messages.proto); Milvus's adaptor sets the insert's segment from it (adaptor/message.go
    `recoverInsertMsgFromHeader`)."""
    header = _base64_proto("InsertMessageHeader", properties.get("_h"))
    if header is None:
        return {}
    return {
        p.partition_id: p.segment_assignment.segment_id for p in header.partitions if p.segment_assignment.segment_id
    }


def unwrap_rocksmq(value: bytes) -> tuple[bytes, dict[str, str]] | None:
    """(payload, properties) of a RocksMQ value the 2.6 streaming service wrote; None for any other value (a 2.5
    message, or bytes after the prefix that are not an RMQMessageLayout)."""
    if not value.startswith(RMQ_STREAMING_MAGIC):
        return None
    layout = parse(_rmq("RMQMessageLayout"), value[len(RMQ_STREAMING_MAGIC) :])
    if layout is None:
        return None
    return bytes(layout.payload), {p.key: p.value for p in layout.properties}
