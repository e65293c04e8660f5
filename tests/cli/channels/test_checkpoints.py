"""`mqctl channels checkpoints` on a real etcd 3.5 holding Milvus meta and the real RocksMQ / natsmq fixtures
(written by Milvus 2.3.5). The meta values are encoded here by hand from Milvus's field numbers, independently
of mqctl's decoder; expected counts come from `mqctl channels peek`/`list`."""

from __future__ import annotations

import datetime as dt

import pytest

from mqctl import clock
from tests.helpers.cli import run_cli
from tests.helpers.files import write_yaml
from tests.helpers.milvus_meta import collection_info, field_bytes, field_int, position, put, segment_info
from tests.helpers.paths import FIXTURES
from tests.helpers.servers import free_port
from tests.helpers.tables import assert_readable

ROCKS = str(FIXTURES / "rocksmq" / "rdb_data")
STORE = str(FIXTURES / "natsmq" / "store")
CHANNEL = "by-dev-rootcoord-dml_0"


# --- protobuf wire format, enough to write Milvus meta ----------------------------------------------


@pytest.fixture(scope="module")
def rocks_messages():
    """The fixture channel's messages (peek) and its first/last id (list)."""
    peeked = run_cli("channels", "peek", CHANNEL, "--rocksmq", ROCKS, "--limit", "100000", "--json")
    listed = run_cli("channels", "list", "--rocksmq", ROCKS, "--json")
    assert peeked.code == 0 and listed.code == 0, peeked.stderr + listed.stderr
    channel = next(c for c in listed.json()["channels"] if c["name"] == CHANNEL)
    return peeked.json()["messages"], channel


def _insert(messages_: list[dict]) -> dict:
    return next(m for m in messages_ if m["type"] == "Insert")


def _retention_config(tmp_path, minutes: int):
    return write_yaml(
        tmp_path, f"mq:\n  type: rocksmq\nrocksmq:\n  path: {ROCKS}\n  retentionTimeInMinutes: {minutes}\n"
    )


def _write_collection(etcd_url, root, insert, *, checkpoint: int, ts: int):
    vchannel, cid = insert["shard"], insert["collection_id"]
    put(
        etcd_url,
        f"{root}/meta/root-coord/database/collection-info/1/{cid}",
        collection_info(cid, insert["collection"], {vchannel: CHANNEL}),
    )
    put(etcd_url, f"{root}/meta/datacoord-meta/channel-cp/{vchannel}", position(vchannel, checkpoint, ts))
    return vchannel


@pytest.mark.etcd
def test_lag_counts_the_vchannels_messages_after_the_checkpoint(etcd_url, rocks_messages, tmp_path, cli):
    messages_, channel = rocks_messages
    insert = _insert(messages_)
    create = next(m for m in messages_ if m["type"] == "CreateCollection")
    vchannel = _write_collection(etcd_url, "lag", insert, checkpoint=create["id"], ts=create["tso"])
    expected = sum(1 for m in messages_ if m["shard"] == vchannel and m["id"] > create["id"])
    assert expected >= 1
    result = cli(
        "channels",
        "checkpoints",
        "--config",
        str(_retention_config(tmp_path, 10**7)),
        "--etcd",
        etcd_url,
        "--etcd-root",
        "lag",
        "--json",
    )
    assert result.code == 0, result.stdout + result.stderr
    row = next(r for r in result.json()["checkpoints"] if r["vchannel"] == vchannel)
    assert row["status"] == "ok" and row["checkpoint_from"] == "channel-cp"
    assert (row["position"], row["checkpoint_ts"]) == (create["id"], create["tso"])
    assert row["checkpoint_time"] == create["time"]
    assert (row["first_retained"], row["last"]) == (channel["first_id"], channel["last_id"])
    assert row["lag_messages"] == expected
    rows = sum(
        m["rows"] for m in messages_ if m["shard"] == vchannel and m["id"] > create["id"] and m["type"] == "Insert"
    )
    assert rows >= 1 and row["lag_rows"] == rows
    assert row["collection"] == insert["collection"] and row["database"] == "default"
    newest = dt.datetime.fromisoformat(channel["last_time"].replace("Z", "+00:00"))
    assert row["lag_seconds"] == pytest.approx(
        (newest - dt.datetime.fromisoformat(create["time"].replace("Z", "+00:00"))).total_seconds(), abs=0.01
    )
    for width in (80, 120, 200):
        human = cli(
            "channels",
            "checkpoints",
            "--config",
            str(_retention_config(tmp_path, 10**7)),
            "--etcd",
            etcd_url,
            "--etcd-root",
            "lag",
            env={"COLUMNS": str(width)},
        )
        assert human.code == 0 and "ok" in human.stdout
        assert_readable(human.stdout, width, [vchannel])


@pytest.mark.etcd
def test_unflushed_data_older_than_half_the_retention_is_at_risk(etcd_url, rocks_messages, tmp_path, cli):
    messages_, _ = rocks_messages
    insert = _insert(messages_)
    vchannel = _write_collection(etcd_url, "risk", insert, checkpoint=insert["id"] - 1, ts=insert["tso"] - 1)
    result = cli(
        "channels",
        "checkpoints",
        "--config",
        str(_retention_config(tmp_path, 1)),
        "--etcd",
        etcd_url,
        "--etcd-root",
        "risk",
        "--json",
    )
    assert result.code == 1, result.stderr
    row = next(r for r in result.json()["checkpoints"] if r["vchannel"] == vchannel)
    assert row["status"] == "at-risk" and row["lag_messages"] >= 1 and row["retention_seconds"] == 60
    assert "run FlushAll before any restart" in row["hint"]
    assert result.json()["findings"][0]["code"] == "CP101"


@pytest.mark.etcd
def test_rocksmq_checkpoint_message_purged_is_expired(etcd_url, rocks_messages, tmp_path, cli):
    messages_, channel = rocks_messages
    insert = _insert(messages_)
    vchannel = _write_collection(etcd_url, "gone", insert, checkpoint=channel["first_id"] - 3, ts=insert["tso"] - 1)
    result = cli(
        "channels",
        "checkpoints",
        "--config",
        str(_retention_config(tmp_path, 10**7)),
        "--etcd",
        etcd_url,
        "--etcd-root",
        "gone",
        "--json",
    )
    assert result.code == 1
    row = next(r for r in result.json()["checkpoints"] if r["vchannel"] == vchannel)
    assert row["status"] == "expired" and row["lost_messages"] is None  # RocksMQ ids are sparse: not countable
    assert "FlushAll" in row["hint"] and "sparse" in row["reason"]
    assert (
        "EXPIRED"
        in cli("channels", "checkpoints", "--rocksmq", ROCKS, "--etcd", etcd_url, "--etcd-root", "gone").stdout
    )


@pytest.fixture(scope="module")
def nats_insert():
    peeked = run_cli("channels", "peek", CHANNEL, "--nats-store", STORE, "--type", "insert", "--json")
    assert peeked.code == 0, peeked.stderr
    return peeked.json()["messages"][0]


@pytest.mark.etcd
def test_datacoord_fallbacks_without_channel_checkpoint(etcd_url, nats_insert, cli):
    vchannel, cid = nats_insert["shard"], nats_insert["collection_id"]
    root = "fallback"
    put(
        etcd_url,
        f"{root}/meta/root-coord/database/collection-info/1/{cid}",
        collection_info(
            cid, nats_insert["collection"], {vchannel: CHANNEL}, created=nats_insert["tso"] - 7, starts={CHANNEL: 1}
        ),
    )

    def only_row():
        result = cli(
            "channels", "checkpoints", "--nats-store", STORE, "--etcd", etcd_url, "--etcd-root", root, "--json"
        )
        assert result.code == 0, result.stdout + result.stderr
        return next(r for r in result.json()["checkpoints"] if r["vchannel"] == vchannel)

    row = only_row()  # no segment yet: the collection's start position, timed at its creation
    assert (row["checkpoint_from"], row["position"], row["checkpoint_ts"]) == (
        "collection-start",
        1,
        nats_insert["tso"] - 7,
    )
    assert row["status"] == "ok" and row["lag_messages"] >= 1  # no max_age on the fixture's streams
    segments = f"{root}/meta/datacoord-meta/s/{cid}/1"
    put(etcd_url, f"{segments}/10", segment_info(10, cid, vchannel, dml=position(vchannel, 5, 500)))
    put(etcd_url, f"{segments}/11", segment_info(11, cid, vchannel, start=position(vchannel, 3, 300)))
    put(etcd_url, f"{segments}/12", segment_info(12, cid, vchannel, dml=position(vchannel, 2, 200), state=6))  # dropped
    put(etcd_url, f"{segments}/13", segment_info(13, cid, vchannel, dml=position(vchannel, 2, 100), importing=True))
    row = only_row()  # the earliest live segment position (dml, else start), as datacoord picks it
    assert (row["checkpoint_from"], row["position"], row["checkpoint_ts"]) == ("segment-start", 3, 300)
    put(etcd_url, f"{root}/meta/datacoord-meta/channel-cp/{vchannel}", position(vchannel, 4, 400))
    row = only_row()
    assert (row["checkpoint_from"], row["position"], row["checkpoint_ts"]) == ("channel-cp", 4, 400)


@pytest.mark.etcd
def test_database_names_and_dropped_collections(etcd_url, nats_insert, cli):
    vchannel, cid = nats_insert["shard"], nats_insert["collection_id"]
    root = "dbs"
    put(etcd_url, f"{root}/meta/root-coord/database/db-info/7", field_bytes(2, "analytics") + field_int(3, 7))
    put(
        etcd_url,
        f"{root}/meta/root-coord/database/collection-info/7/{cid}",
        collection_info(cid, nats_insert["collection"], {vchannel: CHANNEL}, db_id=7),
    )
    put(etcd_url, f"{root}/meta/datacoord-meta/channel-cp/{vchannel}", position(vchannel, 1, 100))
    leftover = f"{CHANNEL}_42v0"  # a dropped collection's checkpoint, still in etcd
    put(etcd_url, f"{root}/meta/root-coord/database/collection-info/1/42", b"\xe2\x9b\xbc")  # tombstone
    put(etcd_url, f"{root}/meta/datacoord-meta/channel-cp/{leftover}", position(leftover, 1, 100))
    result = cli("channels", "checkpoints", "--nats-store", STORE, "--etcd", etcd_url, "--etcd-root", root, "--json")
    assert result.code == 0, result.stdout + result.stderr
    rows = {r["vchannel"]: r for r in result.json()["checkpoints"]}
    assert rows[vchannel]["database"] == "analytics" and rows[vchannel]["status"] == "ok"
    assert rows[leftover]["status"] == "unknown" and rows[leftover]["collection_id"] == 42
    assert [f["code"] for f in result.json()["findings"]] == ["CP102"]


@pytest.mark.etcd
def test_streaming_meta_is_read_as_2_6(etcd_url, cli):
    """etcd holding 2.6 streaming state switches to the 2.6 form (tests/mq/streaming); one that is not the cited
    format is named (CP115), and the 2.5 form asked for explicitly still refuses it."""
    put(etcd_url, "wal/meta/streamingnode-meta/wal/by-dev-rootcoord-dml_0/consume-checkpoint", b"x")
    result = cli("channels", "checkpoints", "--nats-store", STORE, "--etcd", etcd_url, "--etcd-root", "wal", "--json")
    assert result.code == 1 and "Traceback" not in result.stderr
    assert "--nats-store not read" in result.stderr
    assert [f["code"] for f in result.json()["findings"]] == ["CP115", "CP103"]  # undecodable, so nothing read
    result = cli(
        "channels",
        "checkpoints",
        "--nats-store",
        STORE,
        "--etcd",
        etcd_url,
        "--etcd-root",
        "wal",
        "--milvus-version",
        "2.5.4",
    )
    assert result.code == 3 and "2.6" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.etcd
def test_dropped_channel_sentinel_is_dropped_not_lagging(etcd_url, cli):
    """datacoord writes timestamp MaxUint64 into a dropped vchannel's checkpoint (birdwatcher PR #527)."""
    vchannel = f"{CHANNEL}_4242v0"
    put(etcd_url, f"sentinel/meta/datacoord-meta/channel-cp/{vchannel}", position(vchannel, 5, 2**64 - 1))
    result = cli("channels", "checkpoints", "--rocksmq", ROCKS, "--etcd", etcd_url, "--etcd-root", "sentinel", "--json")
    assert result.code == 0, result.stderr
    (row,) = result.json()["checkpoints"]
    assert (row["status"], row["checkpoint_time"], row["lag_seconds"]) == ("unknown", None, None)
    assert row["reason"].startswith("dropped: datacoord keeps the MaxUint64 sentinel")


@pytest.mark.etcd
def test_empty_meta_says_so(etcd_url, cli):
    result = cli("channels", "checkpoints", "--rocksmq", ROCKS, "--etcd", etcd_url, "--etcd-root", "nothing", "--json")
    assert result.code == 0
    assert result.json()["checkpoints"] == [] and result.json()["findings"][0]["code"] == "CP103"
    assert (
        "etcd-root"
        in cli("channels", "checkpoints", "--rocksmq", ROCKS, "--etcd", etcd_url, "--etcd-root", "nothing").stdout
    )


@pytest.mark.etcd
def test_the_etcd_password_is_never_printed(etcd_url, cli):
    result = cli(
        "channels", "checkpoints", "--rocksmq", ROCKS, "--etcd", etcd_url.replace("http://", "http://root:s3cr3t-pw@")
    )  # this etcd has no auth: it refuses the token
    assert result.code == 3 and "root:******@" in result.stderr and "s3cr3t-pw" not in result.stdout + result.stderr


def test_unreachable_etcd_and_missing_etcd(cli, tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    result = cli("channels", "checkpoints", "--rocksmq", ROCKS, "--etcd", url)
    assert result.code == 3 and "unreachable" in result.stderr and "Traceback" not in result.stderr
    result = cli("channels", "checkpoints", "--rocksmq", ROCKS)
    assert result.code == 2 and "--etcd" in result.stderr
    config = write_yaml(
        tmp_path,
        f"etcd:\n  endpoints: 127.0.0.1:{free_port()}\n  rootPath: mine\n"
        f"mq:\n  type: rocksmq\nrocksmq:\n  path: {ROCKS}\n",
    )
    result = cli("channels", "checkpoints", "--config", str(config))  # etcd comes from the config
    assert result.code == 3 and "unreachable" in result.stderr


@pytest.mark.etcd
def test_unreachable_nats_is_exit_3(etcd_url, cli):
    result = cli(
        "channels",
        "checkpoints",
        "--nats",
        f"nats://127.0.0.1:{free_port()}",
        "--timeout",
        "1",
        "--etcd",
        etcd_url,
        "--etcd-root",
        "nothing",
    )
    assert result.code == 3 and "Traceback" not in result.stderr


@pytest.mark.etcd
def test_retention_shorter_than_the_oldest_checkpoint_is_an_error(etcd_url, rocks_messages, tmp_path, cli):
    messages_, _ = rocks_messages
    insert = _insert(messages_)
    _write_collection(etcd_url, "retention", insert, checkpoint=insert["id"] - 1, ts=insert["tso"] - 1)
    checkpoint_age = clock.now() - dt.datetime.fromisoformat(insert["time"].replace("Z", "+00:00"))
    shorter = int(checkpoint_age.total_seconds() // 60) - 1  # the fixture was written at least a few minutes ago
    config = _retention_config(tmp_path, shorter)
    result = cli("retention", "show", "--config", str(config), "--etcd", etcd_url, "--etcd-root", "retention", "--json")
    assert result.code == 1, result.stdout + result.stderr
    finding = next(f for f in result.json()["findings"] if f["code"] == "CP104")
    assert finding["severity"] == "error" and finding["key"] == "rocksmq.retentionTimeInMinutes"
    assert finding["line"] == 5 and "FlushAll" in finding["hint"]
    longer = _retention_config(tmp_path, shorter + 10**6)
    result = cli("retention", "show", "--config", str(longer), "--etcd", etcd_url, "--etcd-root", "retention", "--json")
    assert "CP104" not in [f["code"] for f in result.json()["findings"]]


@pytest.mark.etcd
def test_an_empty_rocksmq_topic_is_unknown(etcd_url, tmp_path, cli):
    """A topic known from RocksMQ's metadata but without messages (all purged): what followed is unknowable."""
    import shutil

    from rocksdict import Rdict

    copy = tmp_path / "rdb_data"
    shutil.copytree(ROCKS, copy)
    shutil.copytree(ROCKS + "_meta_kv", str(copy) + "_meta_kv")
    meta = Rdict(str(copy) + "_meta_kv")
    meta[b"topic_id/by-dev-rootcoord-dml_9"] = b"1763787887"
    meta.close()
    vchannel = "by-dev-rootcoord-dml_9_77v0"
    put(
        etcd_url,
        "empty/meta/root-coord/database/collection-info/1/77",
        collection_info(77, "purged", {vchannel: "by-dev-rootcoord-dml_9"}),
    )
    put(etcd_url, f"empty/meta/datacoord-meta/channel-cp/{vchannel}", position(vchannel, 5, 100))
    result = cli(
        "channels", "checkpoints", "--rocksmq", str(copy), "--etcd", etcd_url, "--etcd-root", "empty", "--json"
    )
    assert result.code == 0, result.stderr
    row = result.json()["checkpoints"][0]
    assert row["status"] == "unknown" and "holds no message" in row["reason"]


@pytest.mark.etcd
@pytest.mark.parametrize(
    "damage", [lambda value: value[:-3], lambda value: bytes(range(0x80, 0xA0))], ids=["truncated", "random"]
)
def test_an_undecodable_channel_checkpoint_is_said_not_skipped(etcd_url, rocks_messages, tmp_path, damage):
    """A channel-cp value that is no MsgPosition is an error naming the key (exit 3), in the report and in the
    retention guard, where it used to read as "no channel checkpoint" (status unknown, exit 0)."""
    messages_, _ = rocks_messages
    insert = _insert(messages_)
    root = f"damaged{abs(hash(damage(b'0123456789'))) % 1000}"
    vchannel = _write_collection(etcd_url, root, insert, checkpoint=insert["id"], ts=insert["tso"])
    put(etcd_url, f"{root}/meta/datacoord-meta/channel-cp/{vchannel}", damage(position(vchannel, insert["id"], 1)))
    for argv in (
        ["channels", "checkpoints", "--rocksmq", ROCKS],
        ["retention", "show", "--config", str(_retention_config(tmp_path, 60))],
    ):
        result = run_cli(*argv, "--etcd", etcd_url, "--etcd-root", root, "--json")
        assert result.code == 3, (argv, result.stdout, result.stderr)
        message = result.json()["error"]["message"]
        assert f"{root}/meta/datacoord-meta/channel-cp/{vchannel}" in message and "MsgPosition" in message
