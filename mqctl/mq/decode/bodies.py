"""What a Milvus 2.6 message of a version-2 type says: its `messagespb` header (`_h`, base64 of the marshalled header,
encoder.go `EncodeProto`) and body (the payload), declared here from their field numbers since pymilvus does not ship
them (format from Milvus v2.6.x source; not yet verified on a running 2.6).

Field numbers: milvus pkg/proto/messages.proto, stored commit 003b114b9ebd (003b114b9ebdebca01713e80142d216845822b27),
unless a line says otherwise. Which header and body each type carries: pkg/streaming/util/message/codegen/
reflect_info.json, stored commit 043fae3476e7 (every version-2 type below has exactly one version there). Fields typed
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
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mqctl.mq.declared_protos import declare, misread_fields, parse, unknown_field_numbers
from mqctl.pymilvus_modules import pb2

_STRING_MAP = {"key": (1, "string", False), "value": (2, "string", False)}  # map<string,string> entry; KeyValuePair
_DB_HEADER = {"db_name": (1, "string", False), "db_id": (2, "int64", False)}
_INDEX_IDS = {"collection_id": (1, "int64", False), "index_ids": (2, "int64", True)}
_RLS_HEADER = {
    "db_id": (1, "int64", False),
    "collection_id": (2, "int64", False),
    "cache_expirations": (3, "bytes", False),  # CacheExpirations, not read
}

EMPTY_MESSAGES = (
    "FlushMessageBody",
    "ManualFlushMessageBody",
    "CreateSegmentMessageBody",
    "BeginTxnMessageBody",
    "CommitTxnMessageBody",
    "RollbackTxnMessageBody",
    "CommitTxnMessageHeader",
    "RollbackTxnMessageHeader",
    "TxnMessageHeader",
    "ImportMessageHeader",
    "AlterLoadConfigMessageBody",
    "DropLoadConfigMessageBody",
    "DropDatabaseMessageBody",
    "AlterAliasMessageBody",
    "DropAliasMessageBody",
    "DropUserMessageBody",
    "AlterRoleMessageBody",
    "DropRoleMessageBody",
    "AlterUserRoleMessageBody",
    "DropUserRoleMessageBody",
    "RestoreRBACMessageHeader",
    "AlterPrivilegeMessageBody",
    "DropPrivilegeMessageBody",
    "AlterPrivilegeGroupMessageBody",
    "DropPrivilegeGroupMessageBody",
    "AlterResourceGroupMessageBody",
    "DropResourceGroupMessageBody",
    "DropIndexMessageBody",
    "FlushAllMessageHeader",
    "FlushAllMessageBody",
    "TruncateCollectionMessageBody",
    "AlterWALMessageBody",
    "AlterReplicateConfigMessageBody",
)
_messagespb = declare(
    "mqctl.milvus_message_bodies",
    {
        "StringEntry": _STRING_MAP,
        # google/protobuf/field_mask.proto: `repeated string paths = 1`
        "FieldMask": {"paths": (1, "string", True)},
        "Message": {"payload": (1, "bytes", False), "properties": (2, "msg:StringEntry", True)},
        # the messages of messages.proto declared without fields (`message FlushMessageBody {}`, ...)
        **{name: {} for name in EMPTY_MESSAGES},
        "FlushMessageHeader": {
            "collection_id": (1, "int64", False),
            "partition_id": (2, "int64", False),
            "segment_id": (3, "int64", False),
        },
        "ManualFlushMessageHeader": {
            "collection_id": (1, "int64", False),
            "flush_ts": (2, "uint64", False),
            "segment_ids": (3, "int64", True),
        },
        "CreateSegmentMessageHeader": {
            "collection_id": (1, "int64", False),
            "partition_id": (2, "int64", False),
            "segment_id": (3, "int64", False),
            "storage_version": (4, "int64", False),
            "max_segment_size": (5, "uint64", False),
            "max_rows": (6, "uint64", False),
            "level": (7, "int32", False),  # data.SegmentLevel, an enum
        },
        "BeginTxnMessageHeader": {"keepalive_milliseconds": (1, "int64", False)},
        "TxnMessageBody": {"messages": (1, "msg:Message", True)},
        "SchemaChangeMessageHeader": {"collection_id": (1, "int64", False), "flushed_segment_ids": (2, "int64", True)},
        "SchemaChangeMessageBody": {"schema": (1, "bytes", False)},  # schema.CollectionSchema
        "AlterCollectionMessageHeader": {
            "db_id": (1, "int64", False),
            "collection_id": (2, "int64", False),
            "update_mask": (3, "msg:FieldMask", False),
            "cache_expirations": (4, "bytes", False),  # CacheExpirations, not read
            "flushed_segment_ids": (5, "int64", True),
        },
        "AlterCollectionMessageBody": {"updates": (1, "msg:AlterCollectionMessageUpdates", False)},
        "AlterCollectionMessageUpdates": {
            "db_id": (1, "int64", False),
            "db_name": (2, "string", False),
            "collection_name": (3, "string", False),
            "description": (4, "string", False),
            "schema": (5, "bytes", False),  # schema.CollectionSchema
            "consistency_level": (6, "int32", False),  # common.ConsistencyLevel, an enum
            "properties": (7, "msg:StringEntry", True),  # common.KeyValuePair: key 1, value 2
            "alter_load_config": (8, "msg:AlterLoadConfigOfAlterCollection", False),
        },
        "AlterLoadConfigOfAlterCollection": {
            "replica_number": (1, "int32", False),
            "resource_groups": (2, "string", True),
        },
        "AlterLoadConfigMessageHeader": {
            "db_id": (1, "int64", False),
            "collection_id": (2, "int64", False),
            "partition_ids": (3, "int64", True),
            "load_fields": (4, "msg:LoadFieldConfig", True),
            "replicas": (5, "msg:LoadReplicaConfig", True),
            "user_specified_replica_mode": (6, "bool", False),
            "use_local_replica_config": (7, "bool", False),
        },
        "LoadFieldConfig": {"field_id": (1, "int64", False), "index_id": (2, "int64", False)},
        "LoadReplicaConfig": {
            "replica_id": (1, "int64", False),
            "resource_group_name": (2, "string", False),
            "priority": (3, "int32", False),  # common.LoadPriority, an enum
        },
        "DropLoadConfigMessageHeader": {"db_id": (1, "int64", False), "collection_id": (2, "int64", False)},
        "CreateDatabaseMessageHeader": _DB_HEADER,
        "AlterDatabaseMessageHeader": _DB_HEADER,
        "DropDatabaseMessageHeader": _DB_HEADER,
        "CreateDatabaseMessageBody": {"properties": (1, "msg:StringEntry", True)},
        "AlterDatabaseMessageBody": {
            "properties": (1, "msg:StringEntry", True),
            "alter_load_config": (2, "msg:AlterLoadConfigOfAlterDatabase", False),
        },
        "AlterLoadConfigOfAlterDatabase": {
            "collection_ids": (1, "int64", True),
            "replica_number": (2, "int32", False),
            "resource_groups": (3, "string", True),
        },
        "AlterAliasMessageHeader": {
            "db_id": (1, "int64", False),
            "db_name": (2, "string", False),
            "collection_id": (3, "int64", False),
            "collection_name": (4, "string", False),
            "alias": (5, "string", False),
        },
        "DropAliasMessageHeader": {
            "db_id": (1, "int64", False),
            "db_name": (2, "string", False),
            "alias": (3, "string", False),
        },
        "AlterUserMessageHeader": {"user_entity": (1, "bytes", False)},  # milvus.UserEntity
        "DropUserMessageHeader": {"user_name": (1, "string", False)},
        "AlterRoleMessageHeader": {"role_entity": (1, "bytes", False)},  # milvus.RoleEntity
        "DropRoleMessageHeader": {"role_name": (1, "string", False), "force_drop": (2, "bool", False)},
        "RoleBinding": {"user_entity": (1, "bytes", False), "role_entity": (2, "bytes", False)},
        "AlterUserRoleMessageHeader": {"role_binding": (1, "msg:RoleBinding", False)},
        "DropUserRoleMessageHeader": {"role_binding": (1, "msg:RoleBinding", False)},
        "RestoreRBACMessageBody": {"rbac_meta": (1, "bytes", False)},  # milvus.RBACMeta
        "AlterPrivilegeMessageHeader": {"entity": (1, "bytes", False)},  # milvus.GrantEntity
        "DropPrivilegeMessageHeader": {"entity": (1, "bytes", False)},
        "AlterPrivilegeGroupMessageHeader": {"privilege_group_info": (1, "bytes", False)},  # milvus.PrivilegeGroupInfo
        "DropPrivilegeGroupMessageHeader": {"privilege_group_info": (1, "bytes", False)},
        # map<string, rg.ResourceGroupConfig> resource_group_configs = 3: entries of key 1, value 2
        "ResourceGroupConfigEntry": {"key": (1, "string", False), "value": (2, "bytes", False)},
        "AlterResourceGroupMessageHeader": {"resource_group_configs": (3, "msg:ResourceGroupConfigEntry", True)},
        "DropResourceGroupMessageHeader": {"resource_group_name": (1, "string", False)},
        "CreateIndexMessageHeader": {
            "db_id": (1, "int64", False),
            "collection_id": (2, "int64", False),
            "field_id": (3, "int64", False),
            "index_id": (4, "int64", False),
            "index_name": (5, "string", False),
        },
        "AlterIndexMessageHeader": _INDEX_IDS,
        "DropIndexMessageHeader": _INDEX_IDS,
        "AlterWALMessageHeader": {
            "target_wal_name": (1, "int32", False),  # common.WALName, an enum
            "config": (2, "msg:StringEntry", True),  # map<string, string>
        },
        "TruncateCollectionMessageHeader": {
            "db_id": (1, "int64", False),
            "collection_id": (2, "int64", False),
            "segment_ids": (3, "int64", True),
        },
        "AlterReplicateConfigMessageHeader": {
            "replicate_configuration": (1, "bytes", False),  # common.ReplicateConfiguration
            "is_pchannel_increasing": (2, "bool", False),
            "force_promote": (3, "bool", False),
            "ignore": (4, "bool", False),
        },
        "AlterRLSMetadataMessageHeader": _RLS_HEADER,
        "DropRLSMetadataMessageHeader": _RLS_HEADER,
        "AlterRLSMetadataMessageBody": {  # oneof metadata
            "policy": (1, "msg:RLSPolicyMetadata", False),
            "principal": (2, "msg:RLSPrincipalMetadata", False),
        },
        "RLSPolicyMetadata": {"policy_id": (1, "int64", False), "policy_name": (2, "string", False)},
        "RLSPrincipalMetadata": {"principal_name": (1, "string", False)},
        "DropRLSMetadataMessageBody": {"policy_name": (1, "string", False), "principal_name": (2, "string", False)},
    },
)

# data.SegmentLevel: milvus pkg/proto/data_coord.proto, stored commit 0075eb681944
SEGMENT_LEVELS = {0: "Legacy", 1: "L0", 2: "L1", 3: "L2"}
LIST_PREVIEW = 5


@dataclass
class BodyFacts:
    """What a header and body say, in the columns of a decoded message; `detail` is the rest, one line."""

    collection: str | None = None
    collection_id: int | None = None
    partition_id: int | None = None
    segment_id: int | None = None
    detail: str | None = None


class Undecodable(Exception):
    """A header or body is not the declared message; the text says which and why."""


@dataclass
class _Parts:
    """The parsed header and body of one message (None where the type has none declared, or `_h` is absent)."""

    type_name: str
    header: Any
    body: Any


@dataclass(frozen=True)
class _Layout:
    header: str | None  # declared class of `_h`
    body: str | None  # declared class of the payload; "msgpb.X" for a pymilvus class
    facts: Callable[[_Parts], BodyFacts]


def read_body(number: int, type_name: str, payload: bytes, header_text: str | None) -> BodyFacts | None:
    """The facts of a version-2 message (and Import), or None for a type read elsewhere (version-1 bodies through
    pymilvus) or not declared. Raises Undecodable when its header or body is not what messages.proto declares."""
    layout = LAYOUTS.get(number)
    if layout is None:
        return None
    header = _header(type_name, layout.header, header_text)
    body = _body(type_name, layout.body, payload)
    return layout.facts(_Parts(type_name, header, body))


def _header(type_name: str, class_name: str | None, text: str | None) -> Any:
    if class_name is None or not text:
        return None
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise Undecodable(f"{type_name} header (_h) is not base64") from None
    return _declared(f"{type_name} header (_h)", class_name, raw)


def _body(type_name: str, class_name: str | None, payload: bytes) -> Any:
    if class_name is None:
        return None
    if class_name.startswith("msgpb."):
        return _pymilvus(f"{type_name} body", "msg_pb2", class_name[6:], payload)
    return _declared(f"{type_name} body", class_name, payload)


def _declared(what: str, class_name: str, raw: bytes) -> Any:
    return _checked(what, class_name, parse(_messagespb(class_name), raw), raw, " (messages.proto)")


def _pymilvus(what: str, module: str, class_name: str, raw: bytes) -> Any:
    """A pymilvus message: an Import body, or a field kept as bytes."""
    return _checked(what, class_name, parse(getattr(pb2(module), class_name), raw), raw, "")


def _checked(what: str, class_name: str, message: Any, raw: bytes, source: str) -> Any:
    """`message` when the bytes were that message; Undecodable when they did not parse, held a known field with
    another wire type, or held fields and none of them known (protobuf skips unknown fields silently)."""
    if message is None:
        raise Undecodable(f"{what} does not parse as {class_name}{source}")
    misread = misread_fields(message)
    if misread:
        raise Undecodable(f"{what} is not a {class_name}: {', '.join(misread)} has another wire type")
    if raw and not message.ListFields() and unknown_field_numbers(message):
        numbers = ", ".join(str(n) for n in unknown_field_numbers(message))
        if not message.DESCRIPTOR.fields:
            raise Undecodable(f"{what} holds field(s) {numbers}, but {class_name} has none{source}")
        raise Undecodable(f"{what} holds none of the fields of {class_name}{source}, only field(s) {numbers}")
    return message


def _ids(values: Iterable[int | str]) -> str:
    items = list(values)
    shown = ", ".join(str(v) for v in items[:LIST_PREVIEW])
    return shown + (f" … (+{len(items) - LIST_PREVIEW})" if len(items) > LIST_PREVIEW else "")


def _pairs(entries: Iterable[Any]) -> str:
    """`key=value, ...`; the value of a key that names a secret (password, token...) masked, any URL password too."""
    from mqctl.secrets import REDACTED, is_secret_key, mask_url_passwords

    return ", ".join(f"{e.key}={REDACTED if is_secret_key(e.key) else mask_url_passwords(e.value)}" for e in entries)


def _line(*parts: str | None) -> str | None:
    """The non-empty parts joined with "; ", None when there are none."""
    text = "; ".join(p for p in parts if p)
    return text or None


def _tso_text(ts: int) -> str:
    from mqctl.mq.decode.envelope import tso_time

    when = tso_time(ts)
    return f"{when.isoformat().replace('+00:00', 'Z')} (TSO {ts})" if when else f"TSO {ts}"


def _or_none(value: int) -> int | None:
    return value or None


# --- per type ------------------------------------------------------------------------------------------------------


def _flush(parts: _Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    return BodyFacts(
        collection_id=_or_none(h.collection_id),
        partition_id=_or_none(h.partition_id),
        segment_id=_or_none(h.segment_id),
        detail=f"flush segment {h.segment_id}" if h.segment_id else None,
    )


def _manual_flush(parts: _Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    segments = list(h.segment_ids)
    return BodyFacts(
        collection_id=_or_none(h.collection_id),
        segment_id=segments[0] if len(segments) == 1 else None,
        detail=_line(
            f"flush_ts {_tso_text(h.flush_ts)}" if h.flush_ts else None,
            f"segments {_ids(segments)}" if segments else "no segments",
        ),
    )


def _create_segment(parts: _Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    return BodyFacts(
        collection_id=_or_none(h.collection_id),
        partition_id=_or_none(h.partition_id),
        segment_id=_or_none(h.segment_id),
        detail=_line(
            f"segment {h.segment_id}",
            f"storage version {h.storage_version}",
            f"level {SEGMENT_LEVELS.get(h.level, h.level)}",
            f"max {h.max_segment_size} bytes" if h.max_segment_size else None,
            f"max {h.max_rows} rows" if h.max_rows else None,
        ),
    )


def _import(parts: _Parts) -> BodyFacts:
    b = parts.body  # msgpb.ImportMsg
    return BodyFacts(
        collection=b.collection_name or None,
        collection_id=_or_none(b.collectionID),
        partition_id=b.partitionIDs[0] if len(b.partitionIDs) == 1 else None,
        detail=_line(
            f"job {b.jobID}" if b.jobID else None,
            f"{len(b.files)} file{'s' if len(b.files) != 1 else ''}",
            f"partitions {_ids(b.partitionIDs)}" if len(b.partitionIDs) > 1 else None,
        ),
    )


def _schema_text(raw: bytes, what: str) -> tuple[str | None, str]:
    """(collection name, a line on the schema: its field count and the field added last)."""
    schema = _pymilvus(what, "schema_pb2", "CollectionSchema", raw)
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


def _schema_change(parts: _Parts) -> BodyFacts:
    h, b = parts.header, parts.body
    name, text = _schema_text(b.schema, f"{parts.type_name} body schema") if b.schema else (None, None)
    flushed = list(h.flushed_segment_ids) if h is not None else []
    return BodyFacts(
        collection=name,
        collection_id=_or_none(h.collection_id) if h is not None else None,
        detail=_line(text, f"flushed segments {_ids(flushed)}" if flushed else None),
    )


def _alter_collection(parts: _Parts) -> BodyFacts:
    h, u = parts.header, parts.body.updates
    paths = list(h.update_mask.paths) if h is not None else []
    name, schema = _schema_text(u.schema, f"{parts.type_name} body schema") if u.schema else (None, None)
    level = pb2("common_pb2").ConsistencyLevel
    load = u.alter_load_config if u.HasField("alter_load_config") else None
    flushed = list(h.flushed_segment_ids) if h is not None else []
    return BodyFacts(
        collection=u.collection_name or name,
        collection_id=_or_none(h.collection_id) if h is not None else None,
        detail=_line(
            f"updates {', '.join(paths)}" if paths else None,
            f"name {u.collection_name}" if u.collection_name and "collection_name" in paths else None,
            f"database {u.db_name}" if u.db_name and "db" in paths else None,
            schema,
            f"properties {_pairs(u.properties)}" if u.properties else None,
            f"consistency {level.Name(u.consistency_level)}"
            if "consistency_level" in paths and u.consistency_level in level.values()
            else None,
            f"replicas {load.replica_number} in {', '.join(load.resource_groups) or 'default'}" if load else None,
            f"flushed segments {_ids(flushed)}" if flushed else None,
        ),
    )


def _alter_load_config(parts: _Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    groups = sorted({r.resource_group_name for r in h.replicas if r.resource_group_name})
    return BodyFacts(
        collection_id=_or_none(h.collection_id),
        detail=_line(
            f"partitions {_ids(h.partition_ids)}" if h.partition_ids else None,
            f"{len(h.load_fields)} fields" if h.load_fields else None,
            f"{len(h.replicas)} replicas" + (f" in {', '.join(groups)}" if groups else ""),
        ),
    )


def _collection_only(parts: _Parts) -> BodyFacts:
    h = parts.header
    return BodyFacts(collection_id=_or_none(h.collection_id)) if h is not None else BodyFacts()


def _database(parts: _Parts) -> BodyFacts:
    """Create/Alter/DropDatabase: the header names the database; Create and Alter bodies carry properties, Alter's a
    load config too (DropDatabaseMessageBody is empty)."""
    h, b = parts.header, parts.body
    fields = b.DESCRIPTOR.fields_by_name if b is not None else {}
    properties = list(b.properties) if "properties" in fields else []
    load = b.alter_load_config if "alter_load_config" in fields and b.HasField("alter_load_config") else None
    return BodyFacts(
        detail=_line(
            f"database {h.db_name} (id {h.db_id})" if h is not None else None,
            f"properties {_pairs(properties)}" if properties else None,
            f"replicas {load.replica_number} in {', '.join(load.resource_groups) or 'default'} for "
            f"{len(load.collection_ids)} collections"
            if load
            else None,
        )
    )


def _alter_alias(parts: _Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    return BodyFacts(
        collection=h.collection_name or None,
        collection_id=_or_none(h.collection_id),
        detail=f"alias {h.alias} -> {h.collection_name or h.collection_id}"
        + (f" (database {h.db_name})" if h.db_name else ""),
    )


def _drop_alias(parts: _Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    return BodyFacts(detail=f"alias {h.alias}" + (f" (database {h.db_name})" if h.db_name else ""))


def _entity_name(raw: bytes, class_name: str, what: str) -> str:
    return str(_pymilvus(what, "milvus_pb2", class_name, raw).name) if raw else "?"


def _alter_user(parts: _Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    return BodyFacts(detail=f"user {_entity_name(h.user_entity, 'UserEntity', f'{parts.type_name} user_entity')}")


def _drop_user(parts: _Parts) -> BodyFacts:
    return BodyFacts(detail=f"user {parts.header.user_name}") if parts.header is not None else BodyFacts()


def _alter_role(parts: _Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    return BodyFacts(detail=f"role {_entity_name(h.role_entity, 'RoleEntity', f'{parts.type_name} role_entity')}")


def _drop_role(parts: _Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    return BodyFacts(detail=f"role {h.role_name}" + (" (force)" if h.force_drop else ""))


def _user_role(parts: _Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    binding = h.role_binding
    user = _entity_name(binding.user_entity, "UserEntity", f"{parts.type_name} user_entity")
    role = _entity_name(binding.role_entity, "RoleEntity", f"{parts.type_name} role_entity")
    return BodyFacts(detail=f"user {user}, role {role}")


def _restore_rbac(parts: _Parts) -> BodyFacts:
    b = parts.body
    if not b.rbac_meta:
        return BodyFacts(detail="nothing to restore")
    meta = _pymilvus(f"{parts.type_name} rbac_meta", "milvus_pb2", "RBACMeta", b.rbac_meta)
    return BodyFacts(
        detail=f"{len(meta.users)} users, {len(meta.roles)} roles, {len(meta.grants)} grants, "
        f"{len(meta.privilege_groups)} privilege groups"
    )


def _privilege(parts: _Parts) -> BodyFacts:
    h = parts.header
    if h is None or not h.entity:
        return BodyFacts()
    grant = _pymilvus(f"{parts.type_name} entity", "milvus_pb2", "GrantEntity", h.entity)
    target = f"{grant.object.name}:{grant.object_name}" if grant.object.name else grant.object_name
    return BodyFacts(
        detail=_line(
            f"role {grant.role.name}",
            f"privilege {grant.grantor.privilege.name}" if grant.grantor.privilege.name else None,
            f"on {target}" if target else None,
            f"database {grant.db_name}" if grant.db_name else None,
        )
    )


def _privilege_group(parts: _Parts) -> BodyFacts:
    h = parts.header
    if h is None or not h.privilege_group_info:
        return BodyFacts()
    info = _pymilvus(
        f"{parts.type_name} privilege_group_info", "milvus_pb2", "PrivilegeGroupInfo", h.privilege_group_info
    )
    privileges = [p.name for p in info.privileges]
    return BodyFacts(
        detail=_line(f"privilege group {info.group_name}", f"privileges {_ids(privileges)}" if privileges else None)
    )


def _alter_resource_group(parts: _Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    return BodyFacts(detail=f"resource groups {_ids(sorted(e.key for e in h.resource_group_configs))}")


def _drop_resource_group(parts: _Parts) -> BodyFacts:
    h = parts.header
    return BodyFacts(detail=f"resource group {h.resource_group_name}") if h is not None else BodyFacts()


def _create_index(parts: _Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    return BodyFacts(
        collection_id=_or_none(h.collection_id),
        detail=f"index {h.index_name or '?'} (id {h.index_id}) on field {h.field_id}",
    )


def _index_ids(parts: _Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    every = "all indexes" if parts.type_name == "DropIndex" else "no index"
    return BodyFacts(
        collection_id=_or_none(h.collection_id),
        detail=f"indexes {_ids(h.index_ids)}" if h.index_ids else every,
    )


def _truncate(parts: _Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    segments = list(h.segment_ids)
    return BodyFacts(
        collection_id=_or_none(h.collection_id),
        detail=f"segments {_ids(segments)}" if segments else "no segments",
    )


def _alter_wal(parts: _Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    names = pb2("common_pb2").WALName
    target = names.Name(h.target_wal_name) if h.target_wal_name in names.values() else f"WALName {h.target_wal_name}"
    return BodyFacts(detail=_line(f"target {target}", f"config {_pairs(h.config)}" if h.config else None))


def _alter_replicate_config(parts: _Parts) -> BodyFacts:
    h = parts.header
    if h is None:
        return BodyFacts()
    clusters: list[str] = []
    if h.replicate_configuration:
        config = _pymilvus(
            f"{parts.type_name} replicate_configuration",
            "common_pb2",
            "ReplicateConfiguration",
            h.replicate_configuration,
        )
        clusters = [c.cluster_id for c in config.clusters]  # never connection_param: it holds a token
    return BodyFacts(
        detail=_line(
            f"clusters {_ids(clusters)}" if clusters else "no clusters",
            "pchannels added" if h.is_pchannel_increasing else None,
            "force promote" if h.force_promote else None,
            "ignored" if h.ignore else None,
        )
    )


def _begin_txn(parts: _Parts) -> BodyFacts:
    h = parts.header
    if h is None or not h.keepalive_milliseconds:
        return BodyFacts()
    return BodyFacts(detail=f"keepalive {h.keepalive_milliseconds} ms")


def _txn(parts: _Parts) -> BodyFacts:
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


def _alter_rls(parts: _Parts) -> BodyFacts:
    h, b = parts.header, parts.body
    detail = None
    if b.HasField("policy"):
        detail = f"policy {b.policy.policy_name} (id {b.policy.policy_id})"
    elif b.HasField("principal"):
        detail = f"principal {b.principal.principal_name}"
    return BodyFacts(collection_id=_or_none(h.collection_id) if h is not None else None, detail=detail)


def _drop_rls(parts: _Parts) -> BodyFacts:
    h, b = parts.header, parts.body
    detail = (
        f"policy {b.policy_name}" if b.policy_name else (f"principal {b.principal_name}" if b.principal_name else None)
    )
    return BodyFacts(collection_id=_or_none(h.collection_id) if h is not None else None, detail=detail)


def _nothing(parts: _Parts) -> BodyFacts:
    return BodyFacts()


# MessageType (envelope.MESSAGE_TYPES) -> its header and body (reflect_info.json) and what to show of them
LAYOUTS: dict[int, _Layout] = {
    4: _Layout("FlushMessageHeader", "FlushMessageBody", _flush),
    9: _Layout("ManualFlushMessageHeader", "ManualFlushMessageBody", _manual_flush),
    10: _Layout("CreateSegmentMessageHeader", "CreateSegmentMessageBody", _create_segment),
    11: _Layout("ImportMessageHeader", "msgpb.ImportMsg", _import),
    12: _Layout("SchemaChangeMessageHeader", "SchemaChangeMessageBody", _schema_change),
    13: _Layout("AlterCollectionMessageHeader", "AlterCollectionMessageBody", _alter_collection),
    14: _Layout("AlterLoadConfigMessageHeader", "AlterLoadConfigMessageBody", _alter_load_config),
    15: _Layout("DropLoadConfigMessageHeader", "DropLoadConfigMessageBody", _collection_only),
    16: _Layout("CreateDatabaseMessageHeader", "CreateDatabaseMessageBody", _database),
    17: _Layout("AlterDatabaseMessageHeader", "AlterDatabaseMessageBody", _database),
    18: _Layout("DropDatabaseMessageHeader", "DropDatabaseMessageBody", _database),
    19: _Layout("AlterAliasMessageHeader", "AlterAliasMessageBody", _alter_alias),
    20: _Layout("DropAliasMessageHeader", "DropAliasMessageBody", _drop_alias),
    21: _Layout("RestoreRBACMessageHeader", "RestoreRBACMessageBody", _restore_rbac),
    22: _Layout("AlterUserMessageHeader", None, _alter_user),  # body: internal.CredentialInfo, never read
    23: _Layout("DropUserMessageHeader", "DropUserMessageBody", _drop_user),
    24: _Layout("AlterRoleMessageHeader", "AlterRoleMessageBody", _alter_role),
    25: _Layout("DropRoleMessageHeader", "DropRoleMessageBody", _drop_role),
    26: _Layout("AlterUserRoleMessageHeader", "AlterUserRoleMessageBody", _user_role),
    27: _Layout("DropUserRoleMessageHeader", "DropUserRoleMessageBody", _user_role),
    28: _Layout("AlterPrivilegeMessageHeader", "AlterPrivilegeMessageBody", _privilege),
    29: _Layout("DropPrivilegeMessageHeader", "DropPrivilegeMessageBody", _privilege),
    30: _Layout("AlterPrivilegeGroupMessageHeader", "AlterPrivilegeGroupMessageBody", _privilege_group),
    31: _Layout("DropPrivilegeGroupMessageHeader", "DropPrivilegeGroupMessageBody", _privilege_group),
    32: _Layout("AlterResourceGroupMessageHeader", "AlterResourceGroupMessageBody", _alter_resource_group),
    33: _Layout("DropResourceGroupMessageHeader", "DropResourceGroupMessageBody", _drop_resource_group),
    34: _Layout("CreateIndexMessageHeader", None, _create_index),  # body index.FieldIndex: the header says enough
    35: _Layout("AlterIndexMessageHeader", None, _index_ids),  # body index.FieldIndex list, not read
    36: _Layout("DropIndexMessageHeader", "DropIndexMessageBody", _index_ids),
    37: _Layout("FlushAllMessageHeader", "FlushAllMessageBody", _nothing),  # FlushAll
    38: _Layout("TruncateCollectionMessageHeader", "TruncateCollectionMessageBody", _truncate),
    47: _Layout("AlterRLSMetadataMessageHeader", "AlterRLSMetadataMessageBody", _alter_rls),
    48: _Layout("DropRLSMetadataMessageHeader", "DropRLSMetadataMessageBody", _drop_rls),
    700: _Layout("AlterWALMessageHeader", "AlterWALMessageBody", _alter_wal),
    800: _Layout("AlterReplicateConfigMessageHeader", "AlterReplicateConfigMessageBody", _alter_replicate_config),
    900: _Layout("BeginTxnMessageHeader", "BeginTxnMessageBody", _begin_txn),
    901: _Layout(
        "CommitTxnMessageHeader", "CommitTxnMessageBody", _nothing
    ),  # CommitTxn: the transaction id is in `_tx`
    902: _Layout("RollbackTxnMessageHeader", "RollbackTxnMessageBody", _nothing),  # RollbackTxn
    999: _Layout("TxnMessageHeader", "TxnMessageBody", _txn),
}
