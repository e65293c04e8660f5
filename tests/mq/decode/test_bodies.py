"""The messagespb headers and bodies of Milvus 2.6 version-2 messages, written by tests/helpers/messagespb.py from
messages.proto field numbers (apart from mqctl's declared classes), decoded through the envelope."""

from __future__ import annotations

import pytest

from mqctl.mq.decode import messages
from mqctl.mq.decode.model import DecodedMessage
from tests.helpers import messagespb as pb
from tests.helpers.protowire import field_bytes, field_int
from tests.helpers.streaming_meta import base36, tso

TICK = tso(1_763_000_000)


def _decode(kind: int, header: bytes | None = None, body: bytes = b"", **extra: str) -> DecodedMessage:
    properties = {"_v": "2", "_t": str(kind), "_tt": base36(TICK), "_vc": "by-dev-rootcoord-dml_0_5v0", **extra}
    if header is not None:
        properties["_h"] = pb.b64(header)
    return messages.decode(body, properties)


def _schema(name: str, fields: list[tuple[int, str, int]]) -> bytes:
    from pymilvus.grpc_gen import schema_pb2

    schema = schema_pb2.CollectionSchema(name=name)
    for field_id, field_name, data_type in fields:
        schema.fields.add(fieldID=field_id, name=field_name, data_type=data_type)
    return schema.SerializeToString()


def test_flush_names_collection_partition_and_segment():
    msg = _decode(4, pb.flush_header(5, 7, 4001))
    assert (msg.type, msg.error) == ("FlushSegment", None)
    assert (msg.collection_id, msg.partition_id, msg.segment_id) == (5, 7, 4001)
    assert msg.detail == "flush segment 4001"
    assert msg.shard == "by-dev-rootcoord-dml_0_5v0" and msg.tso == TICK


def test_manual_flush_gives_its_segments_and_flush_ts():
    flush_ts = tso(1_763_000_100)
    msg = _decode(9, pb.manual_flush_header(5, flush_ts, [11, 12, 13]))
    assert (msg.type, msg.collection_id, msg.segment_id, msg.error) == ("ManualFlush", 5, None, None)
    assert msg.detail == f"flush_ts 2025-11-13T02:15:00Z (TSO {flush_ts}); segments 11, 12, 13"
    single = _decode(9, pb.manual_flush_header(5, flush_ts, [11]))
    assert single.segment_id == 11


def test_create_segment_gives_storage_version_and_level():
    msg = _decode(10, pb.create_segment_header(5, 7, 4002, 2, 1 << 30, 1_000_000, 2))
    assert (msg.type, msg.collection_id, msg.partition_id, msg.segment_id) == ("CreateSegment", 5, 7, 4002)
    assert msg.detail == f"segment 4002; storage version 2; level L1; max {1 << 30} bytes; max 1000000 rows"


def test_import_body_is_the_pymilvus_import_msg():
    from pymilvus.grpc_gen import msg_pb2

    body = msg_pb2.ImportMsg(collection_name="items", collectionID=5, partitionIDs=[7], jobID=88)
    body.files.add(id=1, paths=["a.parquet"])
    body.files.add(id=2, paths=["b.parquet"])
    msg = _decode(11, None, body.SerializeToString())
    assert (msg.type, msg.collection, msg.collection_id, msg.partition_id) == ("Import", "items", 5, 7)
    assert msg.detail == "job 88; 2 files"


def test_schema_change_names_the_newest_field():
    header, body = pb.schema_change(
        5, [4001, 4002], _schema("items", [(100, "id", 5), (101, "vec", 101), (102, "color", 21)])
    )
    msg = _decode(12, header, body)
    assert (msg.type, msg.collection, msg.collection_id, msg.error) == ("AddCollectionField", "items", 5, None)
    assert msg.detail == "schema: 3 fields, newest field color (id 102, VarChar); flushed segments 4001, 4002"


def test_alter_collection_lists_what_it_updates():
    header, body = pb.alter_collection(
        5,
        ["collection_name", "properties", "schema"],
        name="items2",
        schema=_schema("items2", [(100, "id", 5), (103, "score", 11)]),
        properties={"mmap.enabled": "true"},
    )
    msg = _decode(13, header, body)
    assert (msg.type, msg.collection, msg.collection_id, msg.error) == ("AlterCollection", "items2", 5, None)
    assert msg.detail == (
        "updates collection_name, properties, schema; name items2; schema: 2 fields, newest field score (id 103, "
        "Double); properties mmap.enabled=true"
    )


def test_index_messages_give_index_and_field():
    created = _decode(34, pb.create_index_header(5, 101, 9001, "vec_idx"))
    assert (created.type, created.collection_id, created.detail) == (
        "CreateIndex",
        5,
        "index vec_idx (id 9001) on field 101",
    )
    dropped = _decode(36, pb.index_ids_header(5, [9001, 9002]))
    assert (dropped.type, dropped.detail) == ("DropIndex", "indexes 9001, 9002")
    every = _decode(36, pb.index_ids_header(5, []))
    assert every.detail == "all indexes" and every.collection_id == 5
    altered = _decode(35, pb.index_ids_header(5, [9001]))
    assert (altered.type, altered.detail) == ("AlterIndex", "indexes 9001")


def test_truncate_collection_gives_its_segments():
    msg = _decode(38, pb.truncate_header(5, list(range(1, 9))))
    assert (msg.type, msg.collection_id) == ("TruncateCollection", 5)
    assert msg.detail == "segments 1, 2, 3, 4, 5 … (+3)"


def test_alter_wal_gives_target_and_config():
    msg = _decode(700, pb.alter_wal_header(4, {"stage": "switching"}))
    assert (msg.type, msg.detail, msg.error) == ("AlterWAL", "target WoodPecker; config stage=switching", None)
    unknown = _decode(700, pb.alter_wal_header(77, {}))
    assert unknown.detail == "target WALName 77"


def test_databases_aliases_and_rbac():
    created = _decode(16, pb.database_header("sales", 3), pb.string_map(1, {"database.replica.number": "2"}))
    assert created.detail == "database sales (id 3); properties database.replica.number=2"
    assert _decode(18, pb.database_header("sales", 3)).detail == "database sales (id 3)"
    alias = _decode(19, pb.alias_header(5, "items", "shop"))
    assert (alias.collection, alias.collection_id, alias.detail) == (
        "items",
        5,
        "alias shop -> items (database default)",
    )
    assert _decode(25, pb.drop_role_header("reader", True)).detail == "role reader (force)"
    assert _decode(26, pb.user_role_header("ann", "reader")).detail == "user ann, role reader"
    assert _decode(32, pb.resource_groups_header(["rg2", "rg1"])).detail == "resource groups rg1, rg2"


def test_privilege_from_the_pymilvus_grant_entity():
    from pymilvus.grpc_gen import milvus_pb2

    grant = milvus_pb2.GrantEntity(object_name="items", db_name="default")
    grant.role.name = "reader"
    grant.object.name = "Collection"
    grant.grantor.privilege.name = "Query"
    msg = _decode(28, field_bytes(1, grant.SerializeToString()))
    assert msg.detail == "role reader; privilege Query; on Collection:items; database default"


def test_alter_user_shows_the_user_never_the_credential():
    credential = field_bytes(1, "ann") + field_bytes(2, "$2a$10$secret-hash")  # internal.CredentialInfo
    msg = _decode(22, field_bytes(1, field_bytes(1, "ann")), credential)
    assert msg.detail == "user ann" and msg.error is None
    assert "secret" not in repr(msg)


def test_transactions():
    begin = _decode(900, pb.begin_txn_header(3000))
    assert (begin.type, begin.detail) == ("BeginTxn", "keepalive 3000 ms")
    commit = _decode(901, None)
    assert (commit.type, commit.detail, commit.error) == ("CommitTxn", None, None)
    body = pb.txn_body([(b"", {"_t": "2"}), (b"", {"_t": "2"}), (b"", {"_t": "3"})])
    txn = _decode(999, None, body)
    assert (txn.type, txn.detail, txn.error) == ("Txn", "3 messages: Insert ×2, Delete", None)


def test_collection_name_comes_from_an_earlier_create_collection():
    from mqctl.mq.decode.schemas import CollectionSchemaInfo

    properties = {"_v": "2", "_t": "4", "_tt": base36(TICK), "_h": pb.b64(pb.flush_header(5, 7, 4001))}
    msg = messages.decode(b"", properties, schemas={5: CollectionSchemaInfo("items", [], 5)})
    assert (msg.collection, msg.collection_id) == ("items", 5)


@pytest.mark.parametrize(
    ("kind", "header", "body", "words"),
    [
        (4, field_bytes(1, "not an int"), b"", "FlushMessageHeader.collection_id has another wire type"),
        (4, pb.flush_header(5, 7, 1), field_int(1, 5), "Flush body holds field(s) 1, but FlushMessageBody has none"),
        (4, pb.flush_header(5, 7, 1), b"\x0a\x05ab", "Flush body does not parse as FlushMessageBody"),
        (10, field_int(9, 1), b"", "holds none of the fields of CreateSegmentMessageHeader"),
        (12, field_int(1, 5), field_bytes(1, b"\x0a\x09x"), "does not parse as CollectionSchema"),
        (700, field_bytes(2, field_int(1, 3)), b"", "StringEntry.key has another wire type"),
        (999, None, field_int(1, 3), "TxnMessageBody.messages has another wire type"),
    ],
)
def test_a_body_that_is_not_the_declared_message_is_undecodable(kind, header, body, words):
    msg = _decode(kind, header, body)
    assert msg.error is not None and words in msg.error, msg.error
    assert (msg.collection_id, msg.segment_id, msg.detail) == (None, None, None)
    assert msg.tso == TICK  # the envelope still says when


def test_a_header_that_is_not_base64_is_undecodable():
    msg = messages.decode(b"", {"_v": "2", "_t": "4", "_tt": base36(TICK), "_h": "%%%"})
    assert msg.error == "Flush header (_h) is not base64"


def test_an_encrypted_payload_stays_undecoded():
    msg = _decode(4, pb.flush_header(5, 7, 4001), b"\xff\x00ciphertext", _ch="key-1")
    assert "encrypted" in (msg.error or "") and (msg.segment_id, msg.detail) == (None, None)


def test_without_a_header_only_the_envelope_is_shown():
    msg = _decode(4, None)
    assert (msg.type, msg.error, msg.segment_id, msg.detail) == ("FlushSegment", None, None, None)


def test_no_bytes_make_the_decoder_fail():
    """Random headers and bodies for every declared type: decoded or reported undecodable, never an exception."""
    import random

    from mqctl.mq.decode.bodies import LAYOUTS

    rng = random.Random(26)
    samples = [b"", b"\x08\x01", b"\x0a\x00", b"\x12\x03abc", field_bytes(1, field_bytes(1, b"\xff\xfe"))]
    samples += [rng.randbytes(rng.randint(1, 40)) for _ in range(40)]
    outcomes = set()
    for kind in LAYOUTS:
        for header in samples[:12]:
            for body in samples:
                msg = _decode(kind, header, body)
                outcomes.add(msg.error is None)
    assert outcomes == {True, False}


def test_secret_values_in_a_config_are_masked():
    msg = _decode(700, pb.alter_wal_header(3, {"kafka.saslPassword": "hunter2", "url": "https://u:pw@broker:9093"}))
    assert msg.detail == "target Kafka; config kafka.saslPassword=******, url=https://u:******@broker:9093"


def test_an_import_body_that_is_not_an_import_msg_is_undecodable():
    msg = _decode(11, None, field_int(40, 7))
    assert msg.error == "Import body holds none of the fields of ImportMsg, only field(s) 40"
