"""Headers (`_h`, base64) and bodies of Milvus 2.6 version-2 messages, written by hand from the field numbers of milvus
pkg/proto/messages.proto (stored commit 003b114b9ebd) with tests/helpers/protowire.py, apart from mqctl's declared
classes: a wrong field number on either side shows as a failure. Fields typed with a pymilvus message
(schema.CollectionSchema, milvus.GrantEntity, ...) are that class's bytes, as Milvus marshals them."""

from __future__ import annotations

import base64

from tests.helpers.protowire import field_bool, field_bytes, field_int, field_packed


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def string_map(number: int, pairs: dict[str, str]) -> bytes:
    """A map<string,string> (or repeated common.KeyValuePair): entries of key 1, value 2."""
    return b"".join(field_bytes(number, field_bytes(1, k) + field_bytes(2, v)) for k, v in pairs.items())


def flush_header(collection_id: int, partition_id: int, segment_id: int) -> bytes:
    return field_int(1, collection_id) + field_int(2, partition_id) + field_int(3, segment_id)


def manual_flush_header(collection_id: int, flush_ts: int, segment_ids: list[int]) -> bytes:
    return field_int(1, collection_id) + field_int(2, flush_ts) + field_packed(3, segment_ids)


def create_segment_header(
    collection_id: int,
    partition_id: int,
    segment_id: int,
    storage_version: int,
    max_size: int,
    max_rows: int,
    level: int,
) -> bytes:
    return (
        field_int(1, collection_id)
        + field_int(2, partition_id)
        + field_int(3, segment_id)
        + field_int(4, storage_version)
        + field_int(5, max_size)
        + field_int(6, max_rows)
        + field_int(7, level)
    )


def schema_change(collection_id: int, flushed: list[int], schema: bytes) -> tuple[bytes, bytes]:
    """(header, body): SchemaChangeMessageHeader {collection_id 1, flushed_segment_ids 2}, body {schema 1}."""
    return field_int(1, collection_id) + field_packed(2, flushed), field_bytes(1, schema)


def alter_collection(
    collection_id: int,
    paths: list[str],
    *,
    name: str = "",
    schema: bytes = b"",
    properties: dict[str, str] | None = None,
) -> tuple[bytes, bytes]:
    """(header, body): AlterCollectionMessageHeader {db_id 1, collection_id 2, update_mask 3 (FieldMask paths 1)},
    AlterCollectionMessageBody {updates 1: AlterCollectionMessageUpdates {collection_name 3, schema 5,
    properties 7}}."""
    mask = b"".join(field_bytes(1, p) for p in paths)
    header = field_int(1, 1) + field_int(2, collection_id) + field_bytes(3, mask)
    updates = (field_bytes(3, name) if name else b"") + (field_bytes(5, schema) if schema else b"")
    updates += string_map(7, properties or {})
    return header, field_bytes(1, updates)


def database_header(name: str, db_id: int) -> bytes:
    return field_bytes(1, name) + field_int(2, db_id)


def create_index_header(collection_id: int, field_id: int, index_id: int, name: str) -> bytes:
    return (
        field_int(1, 1)
        + field_int(2, collection_id)
        + field_int(3, field_id)
        + field_int(4, index_id)
        + field_bytes(5, name)
    )


def index_ids_header(collection_id: int, index_ids: list[int]) -> bytes:
    """AlterIndexMessageHeader / DropIndexMessageHeader: collection_id 1, index_ids 2."""
    return field_int(1, collection_id) + field_packed(2, index_ids)


def truncate_header(collection_id: int, segment_ids: list[int]) -> bytes:
    return field_int(1, 1) + field_int(2, collection_id) + field_packed(3, segment_ids)


def alter_wal_header(target: int, config: dict[str, str]) -> bytes:
    """AlterWALMessageHeader: target_wal_name 1 (common.WALName), config 2 (map<string,string>)."""
    return field_int(1, target) + string_map(2, config)


def begin_txn_header(keepalive_ms: int) -> bytes:
    return field_int(1, keepalive_ms)


def txn_body(messages: list[tuple[bytes, dict[str, str]]]) -> bytes:
    """TxnMessageBody: messages 1, each a Message {payload 1, properties 2 (map<string,string>)}."""
    return b"".join(field_bytes(1, field_bytes(1, payload) + string_map(2, props)) for payload, props in messages)


def alias_header(collection_id: int, collection: str, alias: str) -> bytes:
    return (
        field_int(1, 1)
        + field_bytes(2, "default")
        + field_int(3, collection_id)
        + field_bytes(4, collection)
        + field_bytes(5, alias)
    )


def drop_role_header(role: str, force: bool) -> bytes:
    return field_bytes(1, role) + field_bool(2, force)


def user_role_header(user: str, role: str) -> bytes:
    """AlterUserRoleMessageHeader: role_binding 1 = RoleBinding {user_entity 1, role_entity 2} (milvus.UserEntity
    and milvus.RoleEntity: name 1)."""
    return field_bytes(1, field_bytes(1, field_bytes(1, user)) + field_bytes(2, field_bytes(1, role)))


def resource_groups_header(names: list[str]) -> bytes:
    """AlterResourceGroupMessageHeader: resource_group_configs 3, map<string, rg.ResourceGroupConfig> (an empty
    config each)."""
    return b"".join(field_bytes(3, field_bytes(1, name) + field_bytes(2, b"")) for name in names)
