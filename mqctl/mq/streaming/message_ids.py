"""WAL positions of Milvus 2.6: which WAL a message id belongs to and where in it it points.

Two encodings exist (format from Milvus v2.6.x source; not yet verified on a running 2.6):

- `common.MessageID` (pymilvus `common_pb2.MessageID`: `id` string 1, `WAL_name` enum 2), used by the streaming
  node's WAL checkpoint. `id` is the WAL's own marshalled form: rocksmq and kafka the uint64 in base 36
  (milvus pkg/streaming/util/message/encoder.go `EncodeUint64`, base 36; read the same way by birdwatcher
  states/etcd/common/wal_recovery_storage.go at 9e8cebe), pulsar the base64 of Pulsar's `MessageIdData`
  (apache/pulsar PulsarApi.proto: ledgerId 1, entryId 2, partition 3, batch_index 4), woodpecker the base64 of
  Woodpecker's `LogMessageIdData` (zilliztech/woodpecker proto/logstore.proto v0.1.25: segId 1, entryId 2;
  milvus pkg/streaming/walimpls/impls/wp/message_id.go).
- `msgpb.MsgPosition.msgID` bytes (datacoord's channel checkpoints), the pre-2.6 wrapper bytes chosen by the
  position's `WAL_name` (milvus pkg/streaming/util/message/adaptor `DeserializeToMQWrapperID`): rocksmq 8 bytes
  little-endian, kafka the offset as 8 bytes little-endian (Milvus's common.Endian; inferred, the kafka
  deserializer body was not read), pulsar the serialized `MessageIdData`, woodpecker the serialized
  `LogMessageIdData` (inferred from `DeserializeWoodpeckerMsgID`).
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from mqctl.mq.declared_protos import declare, parse

# pymilvus common_pb2.WALName numbers -> the mq.type spelling Milvus pins in etcd
WAL_NAMES = {1: "rocksmq", 2: "pulsar", 3: "kafka", 4: "woodpecker"}
UNKNOWN = "unknown"

_declared = declare(
    "mqctl.wal_ids",
    {
        # apache/pulsar pulsar-common/src/main/proto/PulsarApi.proto MessageIdData
        "PulsarMessageIdData": {
            "ledgerId": (1, "uint64", False),
            "entryId": (2, "uint64", False),
            "partition": (3, "int32", False),
            "batch_index": (4, "int32", False),
        },
        # zilliztech/woodpecker proto/logstore.proto (v0.1.25) LogMessageIdData
        "LogMessageIdData": {"segId": (1, "int64", False), "entryId": (2, "int64", False)},
    },
)


@dataclass(frozen=True)
class WalPosition:
    """A decoded WAL position; `order` compares positions of the same WAL (None: not comparable)."""

    wal: str  # rocksmq | pulsar | kafka | woodpecker | unknown
    text: str  # as Milvus tools print it: an offset, ledger/entry/batch, or segment/entry
    order: tuple[int, ...] | None
    raw: str = ""

    @property
    def segment(self) -> int | None:
        return self.order[0] if self.wal == "woodpecker" and self.order else None

    @property
    def entry(self) -> int | None:
        return self.order[1] if self.wal == "woodpecker" and self.order else None


def wal_name(number: int) -> str:
    return WAL_NAMES.get(number, UNKNOWN if number == 0 else f"wal#{number}")


def _b64(text: str) -> bytes | None:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def _from_bytes(wal: str, data: bytes, raw: str) -> WalPosition | None:
    if wal in ("rocksmq", "kafka"):
        if len(data) < 8:
            return None
        value = int.from_bytes(data[:8], "little")
        return WalPosition(wal, str(value), (value,), raw)
    if wal == "pulsar":
        pid = parse(_declared("PulsarMessageIdData"), data)
        if pid is None or not data:
            return None
        return WalPosition(
            wal, f"{pid.ledgerId}/{pid.entryId}/{pid.batch_index}", (pid.ledgerId, pid.entryId, pid.batch_index), raw
        )
    if wal == "woodpecker":
        wid = parse(_declared("LogMessageIdData"), data)
        if wid is None:
            return None
        return WalPosition(wal, f"{wid.segId}/{wid.entryId}", (wid.segId, wid.entryId), raw)
    return None


def from_message_id(wal: str, text: str) -> WalPosition:
    """A `common.MessageID.id` of the given WAL; unknown WAL names are guessed in birdwatcher's order."""
    if wal in ("rocksmq", "kafka"):
        try:
            value = int(text, 36)
        except ValueError:
            return WalPosition(wal, f"{text}[undecodable]", None, text)
        return WalPosition(wal, str(value), (value,), text)
    if wal in ("pulsar", "woodpecker"):
        data = _b64(text)
        found = _from_bytes(wal, data, text) if data is not None else None
        return found or WalPosition(wal, f"{text}[undecodable]", None, text)
    for guess in ("pulsar", "woodpecker"):
        data = _b64(text)
        found = _from_bytes(guess, data, text) if data else None
        if found is not None and any(found.order or ()):
            return WalPosition(UNKNOWN, f"{found.text} (as {guess}?)", None, text)
    return WalPosition(UNKNOWN, text, None, text)


def from_position_bytes(wal: str, data: bytes) -> WalPosition:
    """A `MsgPosition.msgID` under the position's own WAL name."""
    raw = data.hex()
    found = _from_bytes(wal, data, raw)
    return found or WalPosition(wal, f"0x{raw}" if data else "", None, raw)


def parse_message_id(data: bytes) -> tuple[str, str] | None:
    """A serialized `common.MessageID` as (WAL name, id text), with pymilvus's own class."""
    from mqctl.milvus.protos import pb2

    message = parse(pb2("common_pb2").MessageID, data)
    if message is None:
        return None
    return wal_name(message.WAL_name), message.id
