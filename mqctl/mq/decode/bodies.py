"""What a Milvus 2.6 message of a version-2 type says: its `messagespb` header (`_h`, base64 of the marshalled header,
encoder.go `EncodeProto`) and body (the payload), declared here from their field numbers since pymilvus does not ship
them (format from Milvus v2.6.x source; not yet verified on a running 2.6).

Field numbers: the data table body_fields.py (milvus pkg/proto/messages.proto, stored commit 003b114b9ebd). Which
header and body each type carries: pkg/streaming/util/message/codegen/reflect_info.json, stored commit 043fae3476e7 (every version-2 type below has exactly one version there). Fields typed
with a pymilvus message (`schema.CollectionSchema`, `milvus.GrantEntity`, `common.ReplicateConfiguration`, ...) are
kept as bytes and parsed with pymilvus's own class. Import's body is version 1, `msgpb.ImportMsg`, which pymilvus
ships.

A header or body that does not parse as declared (not protobuf, a declared field with another wire type, or fields
where messages.proto declares none) makes the message undecodable, with the reason: nothing is guessed. Secrets are
never shown: AlterUser's body (`internal.CredentialInfo`) is not parsed, of a replicate configuration only the
cluster ids are shown (not their connection parameters), and in properties and configs the value of a key that names a
secret is masked (mqctl.secrets).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from mqctl.milvus.protos import pb2
from mqctl.mq.decode.body_fields import SEGMENT_LEVELS
from mqctl.mq.decode.body_model import (
    BodyFacts,
    Layout,
    Parts,
    Undecodable,
    declared,
    ids_text,
    joined,
    or_none,
    pairs_text,
    pymilvus_message,
    tso_text,
)


def read_body(number: int, type_name: str, payload: bytes, header_text: str | None) -> BodyFacts | None:
    """The facts of a version-2 message (and Import), or None for a type read elsewhere (version-1 bodies through
    pymilvus) or not declared. Raises Undecodable when its header or body is not what messages.proto declares."""
    layout = LAYOUTS.get(number)
    if layout is None:
        return None
    header = _header(type_name, layout.header, header_text)
    body = _body(type_name, layout.body, payload)
    return layout.facts(Parts(type_name, header, body))


def _header(type_name: str, class_name: str | None, text: str | None) -> Any:
    if class_name is None or not text:
        return None
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise Undecodable(f"{type_name} header (_h) is not base64") from None
    return declared(f"{type_name} header (_h)", class_name, raw)


def _body(type_name: str, class_name: str | None, payload: bytes) -> Any:
    if class_name is None:
        return None
    if class_name.startswith("msgpb."):
        return pymilvus_message(f"{type_name} body", "msg_pb2", class_name[6:], payload)
    return declared(f"{type_name} body", class_name, payload)


# --- per type ------------------------------------------------------------------------------------------------------


def _flush(parts: Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    return BodyFacts(
        collection_id=or_none(h.collection_id),
        partition_id=or_none(h.partition_id),
        segment_id=or_none(h.segment_id),
        detail=f"flush segment {h.segment_id}" if h.segment_id else None,
    )


def _manual_flush(parts: Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    segments = list(h.segment_ids)
    return BodyFacts(
        collection_id=or_none(h.collection_id),
        segment_id=segments[0] if len(segments) == 1 else None,
        detail=joined(
            f"flush_ts {tso_text(h.flush_ts)}" if h.flush_ts else None,
            f"segments {ids_text(segments)}" if segments else "no segments",
        ),
    )


def _create_segment(parts: Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    return BodyFacts(
        collection_id=or_none(h.collection_id),
        partition_id=or_none(h.partition_id),
        segment_id=or_none(h.segment_id),
        detail=joined(
            f"segment {h.segment_id}",
            f"storage version {h.storage_version}",
            f"level {SEGMENT_LEVELS.get(h.level, h.level)}",
            f"max {h.max_segment_size} bytes" if h.max_segment_size else None,
            f"max {h.max_rows} rows" if h.max_rows else None,
        ),
    )


def _import(parts: Parts) -> BodyFacts:
    b = parts.body  # msgpb.ImportMsg
    return BodyFacts(
        collection=b.collection_name or None,
        collection_id=or_none(b.collectionID),
        partition_id=b.partitionIDs[0] if len(b.partitionIDs) == 1 else None,
        detail=joined(
            f"job {b.jobID}" if b.jobID else None,
            f"{len(b.files)} file{'s' if len(b.files) != 1 else ''}",
            f"partitions {ids_text(b.partitionIDs)}" if len(b.partitionIDs) > 1 else None,
        ),
    )


def _schema_text(raw: bytes, what: str) -> tuple[str | None, str]:
    """(collection name, a line on the schema: its field count and the field added last)."""
    schema = pymilvus_message(what, "schema_pb2", "CollectionSchema", raw)
    fields = list(schema.fields)
    newest = max(fields, key=lambda f: f.fieldID, default=None)
    dtype = pb2("schema_pb2").DataType
    text = f"schema: {len(fields)} fields"
    if schema.version:
        text += f", version {schema.version}"
    if newest is not None:
        kind = dtype.Name(newest.data_type) if newest.data_type in dtype.values() else str(newest.data_type)
        text += f", newest field {newest.name} (id {newest.fieldID}, {kind})"
    return schema.name or None, text


def _schema_change(parts: Parts) -> BodyFacts:
    h, b = parts.header, parts.body
    name, text = _schema_text(b.schema, f"{parts.type_name} body schema") if b.schema else (None, None)
    flushed = list(h.flushed_segment_ids) if h is not None else []
    return BodyFacts(
        collection=name,
        collection_id=or_none(h.collection_id) if h is not None else None,
        detail=joined(text, f"flushed segments {ids_text(flushed)}" if flushed else None),
    )


def _alter_collection(parts: Parts) -> BodyFacts:
    h, u = parts.header, parts.body.updates
    paths = list(h.update_mask.paths) if h is not None else []
    name, schema = _schema_text(u.schema, f"{parts.type_name} body schema") if u.schema else (None, None)
    level = pb2("common_pb2").ConsistencyLevel
    load = u.alter_load_config if u.HasField("alter_load_config") else None
    flushed = list(h.flushed_segment_ids) if h is not None else []
    return BodyFacts(
        collection=u.collection_name or name,
        collection_id=or_none(h.collection_id) if h is not None else None,
        detail=joined(
            f"updates {', '.join(paths)}" if paths else None,
            f"name {u.collection_name}" if u.collection_name and "collection_name" in paths else None,
            f"database {u.db_name}" if u.db_name and "db" in paths else None,
            schema,
            f"properties {pairs_text(u.properties)}" if u.properties else None,
            f"consistency {level.Name(u.consistency_level)}"
            if "consistency_level" in paths and u.consistency_level in level.values()
            else None,
            f"replicas {load.replica_number} in {', '.join(load.resource_groups) or 'default'}" if load else None,
            f"flushed segments {ids_text(flushed)}" if flushed else None,
        ),
    )


def _alter_load_config(parts: Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    groups = sorted({r.resource_group_name for r in h.replicas if r.resource_group_name})
    return BodyFacts(
        collection_id=or_none(h.collection_id),
        detail=joined(
            f"partitions {ids_text(h.partition_ids)}" if h.partition_ids else None,
            f"{len(h.load_fields)} fields" if h.load_fields else None,
            f"{len(h.replicas)} replicas" + (f" in {', '.join(groups)}" if groups else ""),
        ),
    )


def _collection_only(parts: Parts) -> BodyFacts:
    h = parts.header
    return BodyFacts(collection_id=or_none(h.collection_id)) if h is not None else BodyFacts()


def _database(parts: Parts) -> BodyFacts:
    """Create/Alter/DropDatabase: the header names the database; Create and Alter bodies carry properties, Alter's a
    load config too (DropDatabaseMessageBody is empty)."""
    h, b = parts.header, parts.body
    fields = b.DESCRIPTOR.fields_by_name if b is not None else {}
    properties = list(b.properties) if "properties" in fields else []
    load = b.alter_load_config if "alter_load_config" in fields and b.HasField("alter_load_config") else None
    return BodyFacts(
        detail=joined(
            f"database {h.db_name} (id {h.db_id})" if h is not None else None,
            f"properties {pairs_text(properties)}" if properties else None,
            f"replicas {load.replica_number} in {', '.join(load.resource_groups) or 'default'} for "
            f"{len(load.collection_ids)} collections"
            if load
            else None,
        )
    )


def _alter_alias(parts: Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    return BodyFacts(
        collection=h.collection_name or None,
        collection_id=or_none(h.collection_id),
        detail=f"alias {h.alias} -> {h.collection_name or h.collection_id}"
        + (f" (database {h.db_name})" if h.db_name else ""),
    )


def _drop_alias(parts: Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    return BodyFacts(detail=f"alias {h.alias}" + (f" (database {h.db_name})" if h.db_name else ""))


def _entity_name(raw: bytes, class_name: str, what: str) -> str:
    return str(pymilvus_message(what, "milvus_pb2", class_name, raw).name) if raw else "?"


def _alter_user(parts: Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    return BodyFacts(detail=f"user {_entity_name(h.user_entity, 'UserEntity', f'{parts.type_name} user_entity')}")


def _drop_user(parts: Parts) -> BodyFacts:
    return BodyFacts(detail=f"user {parts.header.user_name}") if parts.header is not None else BodyFacts()


def _alter_role(parts: Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    return BodyFacts(detail=f"role {_entity_name(h.role_entity, 'RoleEntity', f'{parts.type_name} role_entity')}")


def _drop_role(parts: Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    return BodyFacts(detail=f"role {h.role_name}" + (" (force)" if h.force_drop else ""))


def _user_role(parts: Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    binding = h.role_binding
    user = _entity_name(binding.user_entity, "UserEntity", f"{parts.type_name} user_entity")
    role = _entity_name(binding.role_entity, "RoleEntity", f"{parts.type_name} role_entity")
    return BodyFacts(detail=f"user {user}, role {role}")


def _restore_rbac(parts: Parts) -> BodyFacts:
    b = parts.body
    if not b.rbac_meta:
        return BodyFacts(detail="nothing to restore")
    meta = pymilvus_message(f"{parts.type_name} rbac_meta", "milvus_pb2", "RBACMeta", b.rbac_meta)
    return BodyFacts(
        detail=f"{len(meta.users)} users, {len(meta.roles)} roles, {len(meta.grants)} grants, "
        f"{len(meta.privilege_groups)} privilege groups"
    )


def _privilege(parts: Parts) -> BodyFacts:
    h = parts.header
    if h is None or not h.entity:
        return BodyFacts()
    grant = pymilvus_message(f"{parts.type_name} entity", "milvus_pb2", "GrantEntity", h.entity)
    target = f"{grant.object.name}:{grant.object_name}" if grant.object.name else grant.object_name
    return BodyFacts(
        detail=joined(
            f"role {grant.role.name}",
            f"privilege {grant.grantor.privilege.name}" if grant.grantor.privilege.name else None,
            f"on {target}" if target else None,
            f"database {grant.db_name}" if grant.db_name else None,
        )
    )


def _privilege_group(parts: Parts) -> BodyFacts:
    h = parts.header
    if h is None or not h.privilege_group_info:
        return BodyFacts()
    info = pymilvus_message(
        f"{parts.type_name} privilege_group_info", "milvus_pb2", "PrivilegeGroupInfo", h.privilege_group_info
    )
    privileges = [p.name for p in info.privileges]
    return BodyFacts(
        detail=joined(
            f"privilege group {info.group_name}", f"privileges {ids_text(privileges)}" if privileges else None
        )
    )


def _alter_resource_group(parts: Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    return BodyFacts(detail=f"resource groups {ids_text(sorted(e.key for e in h.resource_group_configs))}")


def _drop_resource_group(parts: Parts) -> BodyFacts:
    h = parts.header
    return BodyFacts(detail=f"resource group {h.resource_group_name}") if h is not None else BodyFacts()


def _create_index(parts: Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    return BodyFacts(
        collection_id=or_none(h.collection_id),
        detail=f"index {h.index_name or '?'} (id {h.index_id}) on field {h.field_id}",
    )


def _index_ids(parts: Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    every = "all indexes" if parts.type_name == "DropIndex" else "no index"
    return BodyFacts(
        collection_id=or_none(h.collection_id),
        detail=f"indexes {ids_text(h.index_ids)}" if h.index_ids else every,
    )


def _truncate(parts: Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    segments = list(h.segment_ids)
    return BodyFacts(
        collection_id=or_none(h.collection_id),
        detail=f"segments {ids_text(segments)}" if segments else "no segments",
    )


def _alter_wal(parts: Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    names = pb2("common_pb2").WALName
    target = names.Name(h.target_wal_name) if h.target_wal_name in names.values() else f"WALName {h.target_wal_name}"
    return BodyFacts(detail=joined(f"target {target}", f"config {pairs_text(h.config)}" if h.config else None))


def _alter_replicate_config(parts: Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    clusters: list[str] = []
    if h.replicate_configuration:
        config = pymilvus_message(
            f"{parts.type_name} replicate_configuration",
            "common_pb2",
            "ReplicateConfiguration",
            h.replicate_configuration,
        )
        clusters = [c.cluster_id for c in config.clusters]  # never connection_param: it holds a token
    return BodyFacts(
        detail=joined(
            f"clusters {ids_text(clusters)}" if clusters else "no clusters",
            "pchannels added" if h.is_pchannel_increasing else None,
            "force promote" if h.force_promote else None,
            "ignored" if h.ignore else None,
        )
    )


def _begin_txn(parts: Parts) -> BodyFacts:
    h = parts.header
    if h is None or not h.keepalive_milliseconds:
        return BodyFacts()
    return BodyFacts(detail=f"keepalive {h.keepalive_milliseconds} ms")


def _txn(parts: Parts) -> BodyFacts:
    from collections import Counter

    from mqctl.mq.decode.envelope import MESSAGE_TYPES

    kinds: Counter[str] = Counter()
    for inner in parts.body.messages:
        raw = next((p.value for p in inner.properties if p.key == "_t"), None)
        number = int(raw) if raw is not None and raw.isdigit() else None
        kinds[MESSAGE_TYPES.get(number, f"type {raw}") if number is not None else f"type {raw}"] += 1
    total = sum(kinds.values())
    listed = ", ".join(f"{name} ×{count}" if count > 1 else name for name, count in kinds.items())
    return BodyFacts(detail=f"{total} messages" + (f": {listed}" if listed else ""))


def _alter_rls(parts: Parts) -> BodyFacts:
    h, b = parts.header, parts.body
    detail = None
    if b.HasField("policy"):
        detail = f"policy {b.policy.policy_name} (id {b.policy.policy_id})"
    elif b.HasField("principal"):
        detail = f"principal {b.principal.principal_name}"
    return BodyFacts(collection_id=or_none(h.collection_id) if h is not None else None, detail=detail)


def _drop_rls(parts: Parts) -> BodyFacts:
    h, b = parts.header, parts.body
    detail = (
        f"policy {b.policy_name}" if b.policy_name else (f"principal {b.principal_name}" if b.principal_name else None)
    )
    return BodyFacts(collection_id=or_none(h.collection_id) if h is not None else None, detail=detail)


def _nothing(parts: Parts) -> BodyFacts:
    return BodyFacts()


# MessageType (envelope.MESSAGE_TYPES) -> its header and body (reflect_info.json) and what to show of them
LAYOUTS: dict[int, Layout] = {
    4: Layout("FlushMessageHeader", "FlushMessageBody", _flush),
    9: Layout("ManualFlushMessageHeader", "ManualFlushMessageBody", _manual_flush),
    10: Layout("CreateSegmentMessageHeader", "CreateSegmentMessageBody", _create_segment),
    11: Layout("ImportMessageHeader", "msgpb.ImportMsg", _import),
    12: Layout("SchemaChangeMessageHeader", "SchemaChangeMessageBody", _schema_change),
    13: Layout("AlterCollectionMessageHeader", "AlterCollectionMessageBody", _alter_collection),
    14: Layout("AlterLoadConfigMessageHeader", "AlterLoadConfigMessageBody", _alter_load_config),
    15: Layout("DropLoadConfigMessageHeader", "DropLoadConfigMessageBody", _collection_only),
    16: Layout("CreateDatabaseMessageHeader", "CreateDatabaseMessageBody", _database),
    17: Layout("AlterDatabaseMessageHeader", "AlterDatabaseMessageBody", _database),
    18: Layout("DropDatabaseMessageHeader", "DropDatabaseMessageBody", _database),
    19: Layout("AlterAliasMessageHeader", "AlterAliasMessageBody", _alter_alias),
    20: Layout("DropAliasMessageHeader", "DropAliasMessageBody", _drop_alias),
    21: Layout("RestoreRBACMessageHeader", "RestoreRBACMessageBody", _restore_rbac),
    22: Layout("AlterUserMessageHeader", None, _alter_user),  # body: internal.CredentialInfo, never read
    23: Layout("DropUserMessageHeader", "DropUserMessageBody", _drop_user),
    24: Layout("AlterRoleMessageHeader", "AlterRoleMessageBody", _alter_role),
    25: Layout("DropRoleMessageHeader", "DropRoleMessageBody", _drop_role),
    26: Layout("AlterUserRoleMessageHeader", "AlterUserRoleMessageBody", _user_role),
    27: Layout("DropUserRoleMessageHeader", "DropUserRoleMessageBody", _user_role),
    28: Layout("AlterPrivilegeMessageHeader", "AlterPrivilegeMessageBody", _privilege),
    29: Layout("DropPrivilegeMessageHeader", "DropPrivilegeMessageBody", _privilege),
    30: Layout("AlterPrivilegeGroupMessageHeader", "AlterPrivilegeGroupMessageBody", _privilege_group),
    31: Layout("DropPrivilegeGroupMessageHeader", "DropPrivilegeGroupMessageBody", _privilege_group),
    32: Layout("AlterResourceGroupMessageHeader", "AlterResourceGroupMessageBody", _alter_resource_group),
    33: Layout("DropResourceGroupMessageHeader", "DropResourceGroupMessageBody", _drop_resource_group),
    34: Layout("CreateIndexMessageHeader", None, _create_index),  # body index.FieldIndex: the header says enough
    35: Layout("AlterIndexMessageHeader", None, _index_ids),  # body index.FieldIndex list, not read
    36: Layout("DropIndexMessageHeader", "DropIndexMessageBody", _index_ids),
    37: Layout("FlushAllMessageHeader", "FlushAllMessageBody", _nothing),  # FlushAll
    38: Layout("TruncateCollectionMessageHeader", "TruncateCollectionMessageBody", _truncate),
    47: Layout("AlterRLSMetadataMessageHeader", "AlterRLSMetadataMessageBody", _alter_rls),
    48: Layout("DropRLSMetadataMessageHeader", "DropRLSMetadataMessageBody", _drop_rls),
    700: Layout("AlterWALMessageHeader", "AlterWALMessageBody", _alter_wal),
    800: Layout("AlterReplicateConfigMessageHeader", "AlterReplicateConfigMessageBody", _alter_replicate_config),
    900: Layout("BeginTxnMessageHeader", "BeginTxnMessageBody", _begin_txn),
    901: Layout(
        "CommitTxnMessageHeader", "CommitTxnMessageBody", _nothing
    ),  # CommitTxn: the transaction id is in `_tx`
    902: Layout("RollbackTxnMessageHeader", "RollbackTxnMessageBody", _nothing),  # RollbackTxn
    999: Layout("TxnMessageHeader", "TxnMessageBody", _txn),
}
