"""Milvus 2.6 streaming state and Woodpecker meta, encoded by hand from the `.proto` field numbers (raw
protobuf wire format), kept apart from mqctl's declared decoder so a wrong field number shows as a failure.
Where pymilvus ships the real class (common.MessageID, msgpb.MsgPosition) the tests use it.

Sources: milvus-io/milvus pkg/proto/streaming.proto (commit 013ee69816f0) and tinswzy/milvus (commit 823efeddfe7c)
for AlterWALState; zilliztech/woodpecker proto/meta.proto and proto/logstore.proto (v0.1.25); apache/pulsar
PulsarApi.proto MessageIdData.
"""

from __future__ import annotations

import base64
import datetime as dt

import httpx

from tests.helpers.protowire import field_bytes, field_fixed64, field_int

# pymilvus common.WALName numbers
ROCKSMQ, PULSAR, KAFKA, WOODPECKER = 1, 2, 3, 4
MAX_UINT64 = 2**64 - 1


def tso(unix_seconds: float, logical: int = 0) -> int:
    return (int(unix_seconds * 1000) << 18) | logical


# --- message ids ---------------------------------------------------------------------------------------
def base36(value: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, rest = divmod(value, 36)
        out = digits[rest] + out
        if not value:
            return out


def wp_id_bytes(segment: int, entry: int) -> bytes:
    """woodpecker LogMessageIdData: segId 1, entryId 2."""
    return field_int(1, segment) + field_int(2, entry)


def pulsar_id_bytes(ledger: int, entry: int, batch: int = 0) -> bytes:
    """PulsarApi.proto MessageIdData: ledgerId 1, entryId 2, partition 3, batch_index 4."""
    return field_int(1, ledger) + field_int(2, entry) + field_int(4, batch)


def message_id(wal: int, id_text: str) -> bytes:
    """common.MessageID through pymilvus's own class."""
    from pymilvus.grpc_gen import common_pb2

    return common_pb2.MessageID(id=id_text, WAL_name=wal).SerializeToString()


def wp_message_id(segment: int, entry: int) -> bytes:
    return message_id(WOODPECKER, base64.b64encode(wp_id_bytes(segment, entry)).decode())


def rmq_message_id(value: int) -> bytes:
    return message_id(ROCKSMQ, base36(value))


def msg_position(vchannel: str, wal: int, msg_id: bytes, timestamp: int) -> bytes:
    """msgpb.MsgPosition through pymilvus's own class (WAL_name 5 is a 2.6 field)."""
    from pymilvus.grpc_gen import msg_pb2

    return msg_pb2.MsgPosition(
        channel_name=vchannel, msgID=msg_id, timestamp=timestamp, WAL_name=wal
    ).SerializeToString()


# --- streaming.proto --------------------------------------------------------------------------------------
def wal_checkpoint(
    msg_id: bytes,
    time_tick: int,
    *,
    magic: int = 1,
    alter: tuple[int, int, int, dict[str, str]] | None = None,
) -> bytes:
    """WALCheckpoint: message_id 1, time_tick 2, recovery_magic 3, alter_wal_state 6 (AlterWALState:
    target_wal_name 1, time_tick 2, configs 3 (map entries key 1 value 2), stage 4)."""
    out = field_bytes(1, msg_id) + field_int(2, time_tick) + field_int(3, magic)
    if alter is not None:
        target, tt, stage, configs = alter
        state = field_int(1, target) + field_int(2, tt)
        state += b"".join(field_bytes(3, field_bytes(1, k) + field_bytes(2, v)) for k, v in configs.items())
        state += field_int(4, stage)
        out += field_bytes(6, state)
    return out


def pchannel_meta(name: str, term: int, node_id: int, address: str, state: int = 3, assigned_s: int = 0) -> bytes:
    """PChannelMeta: channel 1 (PChannelInfo name 1, term 2, access_mode 3), node 2 (StreamingNodeInfo
    server_id 1, address 2), state 3, histories 4, last_assign_timestamp_seconds 5."""
    channel = field_bytes(1, name) + field_int(2, term)
    node = field_int(1, node_id) + field_bytes(2, address)
    history = (
        field_int(1, term - 1) + field_bytes(2, field_int(1, node_id) + field_bytes(2, address)) if term > 1 else b""
    )
    return (
        field_bytes(1, channel)
        + field_bytes(2, node)
        + field_int(3, state)
        + (field_bytes(4, history) if history else b"")
        + field_int(5, assigned_s)
    )


def vchannel_meta(vchannel: str, state: int, collection_id: int, checkpoint_tt: int) -> bytes:
    """VChannelMeta: vchannel 1, state 2 (normal 1, dropped 2), collection_info 3 (collection_id 1),
    checkpoint_time_tick 4."""
    return (
        field_bytes(1, vchannel)
        + field_int(2, state)
        + field_bytes(3, field_int(1, collection_id))
        + field_int(4, checkpoint_tt)
    )


# --- woodpecker meta.proto ----------------------------------------------------------------------------------
def log_meta(log_id: int, created_s: int, truncated_segment: int = -1, truncated_entry: int = -1) -> bytes:
    """LogMeta: logId 1, max_segment_roll_time_seconds 2, creation_timestamp 6 (fixed64), modification 7,
    truncated_segment_id 8, truncated_entry_id 9."""
    return (
        field_int(1, log_id)
        + field_int(2, 600)
        + field_fixed64(6, created_s)
        + field_fixed64(7, created_s)
        + field_int(8, truncated_segment)
        + field_int(9, truncated_entry)
    )


def segment_meta(
    seg_no: int,
    *,
    state: int,
    created_ms: int,
    completed_ms: int = 0,
    sealed_ms: int = 0,
    last_entry: int = -1,
    size: int = 0,
    quorum_id: int = 1,
    nodes: tuple[str, ...] = (),
) -> bytes:
    """SegmentMetadata: segNo 1, createTime 2, state 4 (Active 0, Completed 2, Sealed 3, Truncated 4),
    completionTime 5, lastEntryId 6, size 7, sealedTime 8, quorum 9 (QuorumInfo id 1, es 2, wq 3, aq 4,
    nodes 5)."""
    quorum = (
        field_int(1, quorum_id)
        + field_int(2, 1)
        + field_int(3, 1)
        + field_int(4, 1)
        + b"".join(field_bytes(5, n) for n in nodes)
    )
    return (
        field_int(1, seg_no)
        + field_int(2, created_ms)
        + field_int(4, state)
        + field_int(5, completed_ms)
        + field_int(6, last_entry)
        + field_int(7, size)
        + field_int(8, sealed_ms)
        + field_bytes(9, quorum)
    )


def put(etcd_url: str, key: str, value: bytes | str) -> None:
    raw = value.encode() if isinstance(value, str) else value
    b64 = base64.b64encode
    response = httpx.post(f"{etcd_url}/v3/kv/put", json={"key": b64(key.encode()).decode(), "value": b64(raw).decode()})
    assert response.status_code == 200, response.text


def collection_info(cid: int, name: str, vchannels: dict[str, str], db_id: int = 1) -> bytes:
    """etcdpb.CollectionInfo: ID 1, schema 2 (CollectionSchema name 1), virtual_channel_names 7,
    physical_channel_names 8, db_id 15."""
    out = field_int(1, cid) + field_bytes(2, field_bytes(1, name))
    out += b"".join(field_bytes(7, v) for v in vchannels) + b"".join(field_bytes(8, p) for p in vchannels.values())
    return out + field_int(15, db_id)


# the moment and pchannel of write_legacy_woodpecker_state's state, as the tests that read it name them
LEGACY_NOW = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.timezone.utc)
LEGACY_PCHANNEL = "by-dev-rootcoord-dml_0"


def write_legacy_woodpecker_state(etcd_url: str, now: float, pchannel: str) -> None:
    """Woodpecker's meta of one log under the legacy top-level `woodpecker/` prefix (two truncated segments, one
    sealed with a loopback placeholder quorum, one active), a stale copy under `by-dev/woodpecker/`, and the 2.6
    streaming state naming the pchannel's WAL woodpecker: the legacy prefix wins (detectEffectiveMetadataPrefix)."""
    put(etcd_url, "by-dev/config/mqtype", "woodpecker")
    put(
        etcd_url,
        f"by-dev/meta/streamingcoord-meta/pchannel/{pchannel}",
        pchannel_meta(pchannel, 1, 3, "10.1.0.3:22222"),
    )
    put(
        etcd_url,
        f"by-dev/meta/streamingnode-meta/wal/{pchannel}/consume-checkpoint",
        wal_checkpoint(wp_message_id(3, 0), tso(now - 5)),
    )
    put(etcd_url, f"woodpecker/logs/{pchannel}", log_meta(5, int(now - 3600), 2, 10))
    real = ("10.1.0.7:18080", "10.1.0.8:18080")
    for seg in (0, 1):
        put(
            etcd_url,
            f"woodpecker/logs/{pchannel}/segments/{seg}",
            segment_meta(seg, state=4, created_ms=int((now - 3000) * 1000), last_entry=9, nodes=real),
        )
    put(
        etcd_url,
        f"woodpecker/logs/{pchannel}/segments/2",
        segment_meta(
            2,
            state=3,
            created_ms=int((now - 900) * 1000),
            sealed_ms=int((now - 600) * 1000),
            last_entry=10,
            quorum_id=-1,
            nodes=("127.0.0.1:59456",),
        ),
    )
    put(
        etcd_url,
        f"woodpecker/logs/{pchannel}/segments/3",
        segment_meta(3, state=0, created_ms=int((now - 600) * 1000), nodes=real),
    )
    put(etcd_url, "woodpecker/logidgen", "5")
    # a stale copy under the configured prefix: Woodpecker ignores it while legacy keys exist
    put(etcd_url, f"by-dev/woodpecker/logs/{pchannel}", log_meta(99, int(now - 60)))
