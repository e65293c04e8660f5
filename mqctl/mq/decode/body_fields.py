"""Data table: the field numbers of Milvus 2.6's `messagespb` headers and bodies (and the few messages they
embed), as declared_protos.declare takes them: message name -> field name -> (number, type, repeated). bodies.py
declares them and reads each message type with them.

Field numbers: milvus pkg/proto/messages.proto, stored commit 003b114b9ebd (003b114b9ebdebca01713e80142d216845822b27),
unless a line says otherwise. Which header and body each type carries: pkg/streaming/util/message/codegen/
reflect_info.json, stored commit 043fae3476e7.
"""

from __future__ import annotations

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
FIELDS: dict[str, dict[str, tuple[int, str, bool]]] = {
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
}

# data.SegmentLevel: milvus pkg/proto/data_coord.proto, stored commit 0075eb681944
SEGMENT_LEVELS = {0: "Legacy", 1: "L0", 2: "L1", 3: "L2"}
