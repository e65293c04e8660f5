"""Message decoding against the real messages a Milvus 2.3.5 wrote into the RocksMQ fixture."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from mqctl.mq.decode import messages
from mqctl.mq.decode.columns import insert_columns
from mqctl.mq.decode.schemas import CollectionSchemaInfo, schema_from_create, schema_from_insert
from mqctl.mq.rocksmq.reader import RocksMQSource
from tests.helpers.make_fixtures import load_expected, rows_by_pk

ROCKSMQ = "rocksmq/rdb_data"


@pytest.fixture(scope="module")
def expected():
    return load_expected()


@pytest.fixture(scope="module")
def decoded(expected):
    """Every message of the RocksMQ fixture, decoded, with CreateCollection schemas applied."""
    from tests.helpers.paths import FIXTURES

    out = []
    schemas: dict[int, CollectionSchemaInfo] = {}
    with RocksMQSource(FIXTURES / ROCKSMQ) as source:
        for channel in source.list_channels():
            for raw in source.iter_messages(channel.name):
                msg = messages.decode(raw.data, schemas=schemas)
                schema = schema_from_create(msg)
                if schema is not None and schema.collection_id is not None:
                    schemas[schema.collection_id] = schema
                out.append((channel.name, msg))
    return out


def _of_type(decoded, code):
    return [msg for _, msg in decoded if msg.type_code == code]


def _plain(value):
    return value.hex() if isinstance(value, bytes) else value


def test_every_fixture_message_parses(decoded):
    assert decoded
    assert all(msg.error is None for _, msg in decoded)
    assert {msg.type for _, msg in decoded} >= {
        "Insert",
        "Delete",
        "TimeTick",
        "CreateCollection",
        "DropCollection",
        "Flush",
    }


def test_times_come_from_the_tso(decoded):
    for _, msg in decoded:
        assert msg.time == dt.datetime.fromtimestamp((msg.tso >> 18) / 1000, tz=dt.timezone.utc)
    years = {msg.time.year for _, msg in decoded}
    assert len(years) == 1 and 2023 <= years.pop() <= dt.datetime.now(dt.timezone.utc).year


def test_insert_columns_match_what_was_inserted(decoded, expected):
    for name, info in expected["collections"].items():
        want = rows_by_pk(expected, name, "rocksmq")
        got = {}
        for msg in _of_type(decoded, 400):
            if msg.collection != name:
                continue
            columns = insert_columns(msg)
            types = _field_types(msg)
            assert msg.pk_field == info["primary_key"]
            assert msg.pks == columns[info["primary_key"]]
            assert msg.rows == len(msg.pks)
            for i, pk in enumerate(msg.pks):
                row = {field: values[i] for field, values in columns.items()}
                dynamic = json.loads(row.pop("$meta")) if "$meta" in row else {}
                got[pk] = {
                    **{k: (json.loads(v) if types[k] == "JSON" else _plain(v)) for k, v in row.items()},
                    **dynamic,
                }
        assert got == want, name


def _field_types(msg) -> dict[str, str]:
    """Field name -> DataType name of an insert, as replay reads them (the schema inferred from it)."""
    schema = schema_from_insert(msg)
    assert schema is not None
    return {f.name: f.type for f in schema.fields}


def test_field_types_use_milvus_names(decoded, expected):
    for msg in _of_type(decoded, 400):
        declared = {f["name"]: f["type"] for f in expected["collections"][msg.collection]["fields"]}
        types = _field_types(msg)
        types.pop("$meta", None)
        assert types == declared


def test_deletes_carry_every_primary_key(decoded, expected):
    for name in expected["collections"]:
        want = sorted(
            pk for d in expected["deletes"] if d["collection"] == name and d["phase"] == "rocksmq" for pk in d["pks"]
        )
        got = sorted(pk for msg in _of_type(decoded, 401) if msg.collection == name for pk in msg.pks)
        assert got == want, name


def test_schema_from_create_collection(decoded, expected):
    created = [schema_from_create(msg) for msg in _of_type(decoded, 100)]
    assert None not in created
    schemas = {s.name: s for s in created if s is not None}  # a name created again (dropped first) keeps the last
    assert set(schemas) == set(expected["collections"])
    for name, info in expected["collections"].items():
        user_fields = [f for f in schemas[name].fields if (f.field_id or 0) >= 100 and not f.is_dynamic]
        assert [(f.name, f.type, f.is_primary, f.dim, f.max_length) for f in user_fields] == [
            (f["name"], f["type"], f["is_primary"], f["dim"], f["max_length"]) for f in info["fields"]
        ]
        assert schemas[name].enable_dynamic_field == info["enable_dynamic_field"]
    dropped = {msg.collection for msg in _of_type(decoded, 101)}
    assert dropped == {d["collection"] for d in expected["dropped_collections"]}


def test_schema_from_insert_without_create(decoded, expected):
    insert = next(msg for msg in _of_type(decoded, 400) if msg.collection == "items")
    plain = messages.decode(insert.proto.SerializeToString())  # no schemas known: the key is inferred
    schema = schema_from_insert(plain)
    assert schema is not None and schema.primary is not None
    assert schema.primary.name == expected["collections"]["items"]["primary_key"]
    assert [(f.name, f.type) for f in schema.fields] == [
        (f["name"], f["type"]) for f in expected["collections"]["items"]["fields"]
    ]


def test_unknown_type_is_shown_by_number():
    from pymilvus.grpc_gen import common_pb2

    header = common_pb2.MsgHeader()
    header.base.msg_type = 31337
    header.base.timestamp = 470633384162885633
    msg = messages.decode(header.SerializeToString())
    assert (msg.type, msg.type_code, msg.error) == ("31337", 31337, None)
    assert msg.time is not None


@pytest.mark.parametrize("data", [b"\xff\xff\xff\xff", b"\x0a\x05\x08", b"\x08"])
def test_bad_bytes_are_reported_not_raised(data):
    msg = messages.decode(data)
    assert msg.error
    assert msg.payload_size == len(data)


def test_header_type_used_when_bytes_do_not_parse():
    msg = messages.decode(b"\xff\xff", headers={"msg_type": "400"})
    assert msg.type == "Insert" and msg.error


def test_type_code_lookup():
    assert messages.type_code("insert") == 400
    assert messages.type_code("TimeTick") == 1200
    assert messages.type_code("1208") == 1208
    assert messages.type_code("nonsense") is None


def test_tso_round_trip():
    when = dt.datetime(2024, 5, 1, 12, 30, 15, 250000, tzinfo=dt.timezone.utc)
    assert messages.tso_to_datetime(messages.datetime_to_tso(when) | 7) == when
    assert messages.tso_to_datetime(0) is None
