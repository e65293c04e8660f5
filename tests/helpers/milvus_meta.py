"""Milvus meta written into a real etcd, encoded here by hand from Milvus's field numbers (independently of
mqctl's decoder): channel positions, collections and segments."""

from __future__ import annotations

import base64

import httpx

from tests.helpers.protowire import field_bytes, field_int


def position(vchannel: str, msg_id: int, ts: int) -> bytes:
    """msgpb.MsgPosition: channel_name 1, msgID 2 (8 bytes little-endian), msgGroup 3, timestamp 4."""
    return field_bytes(1, vchannel) + field_bytes(2, msg_id.to_bytes(8, "little")) + field_int(4, ts)


def collection_info(
    cid: int,
    name: str,
    vchannels: dict[str, str],
    *,
    created: int = 0,
    db_id: int = 1,
    state: int = 0,
    starts: dict[str, int] | None = None,
) -> bytes:
    """etcdpb.CollectionInfo: ID 1, schema 2 (name 1), create_time 3, vchannels 7, pchannels 8,
    start_positions 11 (KeyDataPair key 1, data 2), state 13, db_id 15."""
    out = field_int(1, cid) + field_bytes(2, field_bytes(1, name)) + field_int(3, created)
    out += b"".join(field_bytes(7, v) for v in vchannels) + b"".join(field_bytes(8, p) for p in vchannels.values())
    out += b"".join(
        field_bytes(11, field_bytes(1, p) + field_bytes(2, i.to_bytes(8, "little"))) for p, i in (starts or {}).items()
    )
    return out + field_int(13, state) + field_int(15, db_id)


def segment_info(
    sid: int, cid: int, vchannel: str, *, dml: bytes = b"", start: bytes = b"", state: int = 2, importing: bool = False
) -> bytes:
    """datapb.SegmentInfo: ID 1, collectionID 2, insert_channel 4, state 6, start_position 9, dml_position 10,
    is_importing 17."""
    out = field_int(1, sid) + field_int(2, cid) + field_bytes(4, vchannel) + field_int(6, state)
    out += (field_bytes(9, start) if start else b"") + (field_bytes(10, dml) if dml else b"")
    return out + field_int(17, int(importing))


def put(etcd_url: str, key: str, value: bytes) -> None:
    """Write one key through etcd's v3 JSON gateway."""
    b64 = base64.b64encode
    response = httpx.post(
        f"{etcd_url}/v3/kv/put", json={"key": b64(key.encode()).decode(), "value": b64(value).decode()}
    )
    assert response.status_code == 200, response.text


def write_collection_checkpoints(etcd_url: str, root: str, vchannels: dict[str, int]) -> None:
    """A collection `c` (id 9) with one vchannel per entry, each checkpoint at that timestamp."""
    put(
        etcd_url,
        f"{root}/meta/root-coord/database/collection-info/1/9",
        collection_info(9, "c", {v: "by-dev-rootcoord-dml_0" for v in vchannels}),
    )
    for vchannel, ts in vchannels.items():
        put(etcd_url, f"{root}/meta/datacoord-meta/channel-cp/{vchannel}", position(vchannel, 40, ts))
