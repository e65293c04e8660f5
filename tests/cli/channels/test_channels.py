"""`mqctl channels` end to end (real subprocess) against the real fixtures and a live nats-server."""

from __future__ import annotations

import datetime as dt
import shutil

import pytest

from tests.helpers.files import tree_fingerprint
from tests.helpers.make_fixtures import load_expected, rows_by_pk
from tests.helpers.paths import FIXTURES, SAMPLES
from tests.helpers.servers import free_port, start_nats

ROCKSMQ = FIXTURES / "rocksmq" / "rdb_data"
STORE = FIXTURES / "natsmq" / "store"
DML0 = "by-dev-rootcoord-dml_0"


@pytest.fixture(scope="module")
def expected():
    return load_expected()


@pytest.fixture(scope="module")
def live_nats(tmp_path_factory):
    """A real nats-server serving a temporary copy of the natsmq fixture store."""
    tmp = tmp_path_factory.mktemp("live")
    shutil.copytree(STORE, tmp / "store")
    proc, url = start_nats(tmp, store_dir=tmp / "store" / "jetstream")
    yield url
    proc.terminate()
    proc.wait()


def raw_key_counts(tmp_path) -> dict[str, int]:
    """Messages per topic by a plain rocksdict key scan of a private copy (independent of mqctl)."""
    from rocksdict import AccessType, Options, Rdict

    copy = tmp_path / "scan"
    shutil.copytree(ROCKSMQ, copy)
    counts: dict[str, int] = {}
    db = Rdict(str(copy), options=Options(raw_mode=True), access_type=AccessType.read_only())
    for key in db.keys():  # noqa: SIM118  (Rdict iterates items, not keys)
        assert isinstance(key, bytes)  # raw mode
        topic = key.rpartition(b"/")[0].decode()
        counts[topic] = counts.get(topic, 0) + 1
    db.close()
    return counts


def test_list_rocksmq(cli, tmp_path, expected):
    before = tree_fingerprint(ROCKSMQ)
    result = cli("channels", "list", "--rocksmq", str(ROCKSMQ), "--json")
    assert result.code == 0, result.stderr
    data = result.json()
    assert data["source"] == f"rocksmq:{ROCKSMQ}"
    names = [c["name"] for c in data["channels"]]
    assert {f"{expected['channel_prefix']}{i}" for i in range(expected["dml_channels"])} <= set(names)
    assert names == sorted(names, key=lambda n: (n.rstrip("0123456789"), int(n[len(n.rstrip("0123456789")) :] or -1)))
    counts = raw_key_counts(tmp_path)
    for channel in data["channels"]:
        assert set(channel) >= {"name", "messages", "bytes", "first_id", "last_id", "first_time", "last_time"}
        assert channel["messages"] == counts.get(channel["name"], 0)
        if channel["messages"]:
            first = dt.datetime.fromisoformat(channel["first_time"].replace("Z", "+00:00"))
            last = dt.datetime.fromisoformat(channel["last_time"].replace("Z", "+00:00"))
            assert first <= last and first.tzinfo is not None
            assert channel["first_id"] <= channel["last_id"]
    assert tree_fingerprint(ROCKSMQ) == before

    table = cli("channels", "list", "--rocksmq", str(ROCKSMQ))
    assert table.code == 0
    assert f"total ({len(names)})" in table.stdout
    assert str(sum(counts.values())) in table.stdout


def test_list_nats_store_and_live_server_agree(cli, live_nats):
    from_store = cli("channels", "list", "--nats-store", str(STORE), "--json")
    live = cli("channels", "list", "--nats", live_nats, "--json")
    assert from_store.code == 0 and live.code == 0, from_store.stderr + live.stderr
    strip = lambda data: [{k: v for k, v in c.items() if k != "consumers"} for c in data["channels"]]  # noqa: E731
    assert strip(from_store.json()) == strip(live.json())
    assert all("consumers" in c for c in live.json()["channels"])
    assert live.json()["source"] == live_nats
    assert sum(c["messages"] for c in live.json()["channels"]) > 0


def test_show_rocksmq(cli, expected):
    result = cli("channels", "show", DML0, "--rocksmq", str(ROCKSMQ), "--json")
    assert result.code == 0, result.stderr
    data = result.json()
    assert sum(data["types"].values()) == data["channel"]["messages"]
    assert data["undecodable"] == 0
    assert {"Insert", "TimeTick", "CreateCollection"} <= set(data["types"])
    seen = {c["name"]: c for c in data["collections"]}
    assert set(seen) <= set(expected["collections"]) and seen
    assert all(c["schema_in_stream"] for c in seen.values())
    assert data["pages"] and all(p["size"] > 0 and p["closed_at"] for p in data["pages"])
    assert data["stream"] is None
    table = cli("channels", "show", DML0, "--rocksmq", str(ROCKSMQ))
    assert "pages (closed)" in table.stdout and "messages by type" in table.stdout


def test_show_nats(cli, live_nats):
    data = cli("channels", "show", DML0, "--nats", live_nats, "--json").json()
    assert data["stream"]["name"] == DML0 and data["stream"]["storage"] == "file"
    assert data["pages"] is None
    assert sum(data["types"].values()) == data["stream"]["messages"] == data["channel"]["messages"]
    # seen on Milvus 2.3.5: no CreateCollection after a switch
    assert all(not c["schema_in_stream"] for c in data["collections"])


def _peek_pks(cli, source_args, collection):
    pks = []
    channels = cli("channels", "list", *source_args, "--json").json()["channels"]
    for channel in channels:
        result = cli(
            "channels",
            "peek",
            channel["name"],
            *source_args,
            "--type",
            "insert",
            "--collection",
            collection,
            "--limit",
            "1000",
            "--json",
        )
        assert result.code == 0, result.stderr
        for msg in result.json()["messages"]:
            assert msg["type"] == "Insert" and msg["collection"] == collection and msg["rows"] == len(msg["pks"])
            pks += msg["pks"]
    return pks


def test_peek_inserts_hold_every_primary_key(cli, live_nats, expected):
    assert sorted(_peek_pks(cli, ["--rocksmq", str(ROCKSMQ)], "skus")) == sorted(
        rows_by_pk(expected, "skus", "rocksmq")
    )
    assert sorted(_peek_pks(cli, ["--nats", live_nats], "items")) == sorted(rows_by_pk(expected, "items", "natsmq"))


def test_peek_filters(cli):
    everything = cli("channels", "peek", DML0, "--rocksmq", str(ROCKSMQ), "--limit", "1000", "--json").json()[
        "messages"
    ]
    keys = {
        "id",
        "type",
        "time",
        "tso",
        "collection",
        "collection_id",
        "partition_id",
        "segment_id",
        "shard",
        "rows",
        "pks",
    }
    assert keys <= set(everything[0])
    middle = everything[len(everything) // 2]
    from_id = cli(
        "channels", "peek", DML0, "--rocksmq", str(ROCKSMQ), "--from", str(middle["id"]), "--limit", "3", "--json"
    ).json()["messages"]
    assert [m["id"] for m in from_id] == [m["id"] for m in everything if m["id"] >= middle["id"]][:3]
    from_time = cli(
        "channels", "peek", DML0, "--rocksmq", str(ROCKSMQ), "--from", middle["time"], "--limit", "1000", "--json"
    ).json()["messages"]
    assert from_time and all(m["tso"] >= middle["tso"] >> 18 << 18 for m in from_time)
    deletes = cli("channels", "peek", DML0, "--rocksmq", str(ROCKSMQ), "--type", "delete,401", "--json").json()[
        "messages"
    ]
    assert deletes and all(m["type"] == "Delete" and m["pks"] for m in deletes)
    table = cli("channels", "peek", DML0, "--rocksmq", str(ROCKSMQ), "--type", "insert")
    assert table.code == 0 and "Insert" in table.stdout and "primary keys" in table.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["peek", DML0, "--type", "inserts"], "not a Milvus message type"),
        (["peek", DML0, "--from", "yesterday"], "neither a message id nor a time"),
        (["peek", DML0, "--from", "²"], "neither a message id nor a time"),  # "²".isdigit(), int("²") fails
        (["peek", DML0, "--type", "①"], "not a Milvus message type"),
        (["peek", DML0, "--limit", "0"], "--limit 0"),
        (["show", "by-dev-rootcoord-dml_99"], "no channel 'by-dev-rootcoord-dml_99'"),
    ],
)
def test_bad_input_is_one_line_exit_2(cli, args, message):
    result = cli("channels", *args, "--rocksmq", str(ROCKSMQ))
    assert result.code == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_source_errors(cli, tmp_path):
    none = cli("channels", "list")
    assert none.code == 2 and "no MQ source given" in none.stderr
    two = cli("channels", "list", "--rocksmq", str(ROCKSMQ), "--nats-store", str(STORE))
    assert two.code == 2 and "choose one source" in two.stderr
    missing = cli("channels", "list", "--rocksmq", str(tmp_path / "nope"))
    assert missing.code == 2 and "does not exist" in missing.stderr
    down = cli(
        "channels",
        "list",
        "--nats",
        f"nats://127.0.0.1:{free_port()}",
        "--password",
        "hunter2",
        "--user",
        "u",
        "--timeout",
        "1",
    )
    assert down.code == 3 and "cannot connect to NATS" in down.stderr and "hunter2" not in down.stderr + down.stdout


def test_password_auth_never_printed(cli, tmp_path):
    proc, url = start_nats(tmp_path, 'authorization { user: admin, password: "pw-secret-1" }')
    try:
        denied = cli("channels", "list", "--nats", url, "--timeout", "1")
        assert denied.code == 3 and "Authorization" in denied.stderr
        ok = cli("channels", "list", "--nats", url.replace("nats://", "nats://admin:pw-secret-1@"), "--json")
        assert ok.code == 0 and "pw-secret-1" not in ok.stdout + ok.stderr
        via_option = cli("channels", "list", "--nats", url, "--user", "admin", "--password", "pw-secret-1", "--json")
        assert via_option.json() == ok.json()
    finally:
        proc.terminate()
        proc.wait()


def test_config_derives_the_source(cli, tmp_path, live_nats):
    rocks_yaml = tmp_path / "rocks.yaml"
    rocks_yaml.write_text(f"mq:\n  type: rocksmq\nrocksmq:\n  path: {ROCKSMQ}\n")
    direct = cli("channels", "list", "--rocksmq", str(ROCKSMQ), "--json").json()
    derived = cli("channels", "list", "--config", str(rocks_yaml), "--json")
    assert derived.code == 0, derived.stderr
    assert derived.json() == direct

    stopped = tmp_path / "stopped.yaml"  # nothing listens on the port: read the store
    stopped.write_text(f"mq:\n  type: natsmq\nnatsmq:\n  server:\n    port: {free_port()}\n    storeDir: {STORE}\n")
    from_store = cli("channels", "list", "--config", str(stopped), "--json")
    assert from_store.code == 0, from_store.stderr
    assert from_store.json()["source"] == f"nats-store:{STORE}"

    running = tmp_path / "running.yaml"  # the port listens: Milvus runs, read the live server
    port = live_nats.rsplit(":", 1)[1]
    running.write_text(f"mq:\n  type: natsmq\nnatsmq:\n  server:\n    port: {port}\n    storeDir: /nonexistent\n")
    live = cli("channels", "list", "--config", str(running), "--json")
    assert live.code == 0, live.stderr
    assert live.json()["source"] == f"nats://127.0.0.1:{port}"
    assert [c["messages"] for c in live.json()["channels"]] == [c["messages"] for c in from_store.json()["channels"]]

    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text("mq:\n  type: rocksmq\nrocksmq:\n  path: /nonexistent/rdb_data\n")
    missing = cli("channels", "list", "--config", str(elsewhere))
    assert missing.code == 2 and f"rocksmq.path from {elsewhere}:4" in missing.stderr

    pulsar = tmp_path / "pulsar.yaml"
    pulsar.write_text("mq:\n  type: pulsar\npulsar:\n  address: pulsar.example\n")
    refused = cli("channels", "list", "--config", str(pulsar))
    assert (
        refused.code == 3
        and "the effective MQ is pulsar" in refused.stderr
        and "kafka and woodpecker only" in refused.stderr
    )


def test_a_config_whose_store_dir_is_null_is_bad_input(cli, tmp_path):
    """`storeDir: ~` with nothing listening names no store: one line, exit 2 (it was a TypeError)."""
    empty = tmp_path / "empty.yaml"
    empty.write_text(f"mq:\n  type: natsmq\nnatsmq:\n  server:\n    port: {free_port()}\n    storeDir: ~\n")
    result = cli("channels", "list", "--config", str(empty))
    assert result.code == 2, result.stderr
    assert f"natsmq.server.storeDir is empty ({empty}:6)" in result.stderr and "Traceback" not in result.stderr


def test_store_times_are_close_to_message_times(cli, live_nats):
    by_tso = cli("channels", "list", "--nats", live_nats, "--json").json()["channels"]
    by_store = cli("channels", "list", "--nats", live_nats, "--store-times", "--json").json()["channels"]
    assert [c["messages"] for c in by_tso] == [c["messages"] for c in by_store]
    parse = lambda text: dt.datetime.fromisoformat(text.replace("Z", "+00:00"))  # noqa: E731
    for tso, store in zip(by_tso, by_store):
        if tso["messages"]:
            assert tso["first_time"] != store["first_time"]  # two clocks: Milvus's TSO and the server's store time
            assert abs((parse(store["first_time"]) - parse(tso["first_time"])).total_seconds()) < 5
            assert abs((parse(store["last_time"]) - parse(tso["last_time"])).total_seconds()) < 5
    refused = cli("channels", "list", "--rocksmq", str(ROCKSMQ), "--store-times")
    assert refused.code == 2 and "NATS sources only" in refused.stderr


def test_peek_reports_unknown_types_and_bad_bytes(cli, tmp_path):
    """A stream holding a real insert, a message type mqctl does not know and bytes that are no protobuf."""
    import asyncio

    import nats

    from mqctl.milvus.protos import pb2
    from mqctl.mq.rocksmq.reader import RocksMQSource

    with RocksMQSource(ROCKSMQ) as source:
        insert = next(raw.data for raw in source.iter_messages(DML0) if raw.data and b"item-" in raw.data)
    unknown = pb2("common_pb2").MsgHeader()
    unknown.base.msg_type = 31337
    unknown.base.timestamp = 470633384162885633
    proc, url = start_nats(tmp_path)
    try:

        async def publish():
            nc = await nats.connect(url)
            js = nc.jetstream()
            await js.add_stream(name=DML0, subjects=[DML0])
            for data in (insert, unknown.SerializeToString(), b"\xff\xfe\xfd not protobuf"):
                await js.publish(DML0, data)
            await nc.close()

        asyncio.run(publish())
        result = cli("channels", "peek", DML0, "--nats", url, "--json")
        assert result.code == 0, result.stderr
        peeked = result.json()["messages"]
        assert [m["type"] for m in peeked[:2]] == ["Insert", "31337"]
        assert peeked[0]["pks"] and peeked[0]["error"] is None and peeked[1]["error"] is None
        assert peeked[2]["error"] and "not a Milvus message" in peeked[2]["error"]
        table = cli("channels", "peek", DML0, "--nats", url)
        assert "31337" in table.stdout and "error: not a Milvus message" in table.stdout
        shown = cli("channels", "show", DML0, "--nats", url, "--json").json()
        assert shown["undecodable"] == 1 and shown["types"]["31337"] == 1
    finally:
        proc.terminate()
        proc.wait()


@pytest.mark.parametrize(
    "command", [("channels", "list"), ("channels", "show", DML0), ("channels", "peek", DML0), ("retention", "show")]
)
@pytest.mark.parametrize("timeout", ["0", "-2", "inf", "1e308", "nan", "3601"])
def test_a_timeout_that_is_not_a_sane_number_of_seconds_is_bad_input(cli, command, timeout):
    """A non-finite or absurd --timeout would make every wait endless."""
    result = cli(*command, "--nats", "nats://127.0.0.1:4222", "--timeout", timeout, timeout=60)
    assert result.code == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().startswith(
        f"error: --timeout {float(timeout):g} is not a number of seconds between 0 and 3600 — e.g. --timeout 5"
    ), result.stderr


def test_retention_apply_refuses_an_endless_timeout(cli, tmp_path):
    config = tmp_path / "milvus.yaml"
    config.write_text("mq:\n  type: natsmq\n")
    result = cli(
        "retention",
        "apply",
        "--config",
        str(config),
        "--nats-store",
        str(tmp_path),
        "--timeout",
        "inf",
        "--dry-run",
        timeout=60,
    )
    assert result.code == 2 and "--timeout inf is not a number of seconds" in result.stderr, result.stderr


SOURCE_COMMANDS = [
    ("channels", "list"),
    ("channels", "show", "x"),
    ("channels", "peek", "x"),
    ("channels", "checkpoints"),
    ("retention", "show"),
    ("retention", "apply", "--config", "milvus.yaml"),
    ("replay", "--to-spark"),
]


@pytest.mark.parametrize("command", SOURCE_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_every_source_command_builds_its_options_into_one_source_options(cli, command):
    """The source option bundle reaches SourceOptions (and its checks) in every command that reads an MQ."""
    result = cli(*command, "--nats", "nats://127.0.0.1:1", "--timeout", "0")
    assert result.code == 2, result.stderr
    assert "--timeout 0 is not a number of seconds" in result.stderr


def test_source_commands_share_the_bundle_and_its_defaults():
    """One bundle: the same 15 options everywhere (retention: no --woodpecker/--s3-endpoint, retention apply no
    --rocksmq either; channels checkpoints declares its own --woodpecker and --s3-endpoint), defaults from
    SourceOptions."""
    import importlib

    import typer.main

    from mqctl.cli.common import SOURCE_OPTIONS
    from mqctl.mq.sources import SourceOptions

    wanted = {name.replace("_", "-") for name in SOURCE_OPTIONS}
    for group, name, *_ in SOURCE_COMMANDS:
        root = typer.main.get_command(importlib.import_module(f"mqctl.cli.{group}").app)
        command = root.commands[name] if hasattr(root, "commands") else root
        options = {param.name.replace("_", "-"): param for param in command.params}
        expected = wanted - {"rocksmq"} if (group, name) == ("retention", "apply") else wanted
        expected = expected - {"woodpecker", "s3-endpoint"} if group == "retention" else expected
        assert expected <= set(options), (group, name)
        assert options["timeout"].default == SourceOptions().timeout


def _one_clean_line(result) -> None:
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("url", ["nats://[::1", "nats://127.0.0.1:port", "foo://127.0.0.1:4222", "nats://"])
def test_malformed_nats_url_is_bad_input(cli, url):
    result = cli("channels", "list", "--nats", url)
    assert result.code == 2, result.stderr
    _one_clean_line(result)
    assert "--nats" in result.stderr


@pytest.mark.parametrize("option", ["--rocksmq", "--nats-store"])
def test_a_file_where_a_store_folder_is_expected(cli, option):
    result = cli("channels", "list", option, str(SAMPLES / "milvus-2.3-standalone-rocksmq.yaml"))
    assert result.code == 2
    _one_clean_line(result)
    assert "is not a directory" in result.stderr


def test_peek_type_without_a_name_is_bad_input(cli):
    result = cli(
        "channels", "peek", "by-dev-rootcoord-dml_0", "--rocksmq", str(FIXTURES / "rocksmq" / "rdb_data"), "--type", ","
    )
    assert result.code == 2
    _one_clean_line(result)
    assert "--type ',' names no message type" in result.stderr
