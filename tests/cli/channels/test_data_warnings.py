"""Damaged MQ data is never reported as normal: when the data and its metadata disagree, `channels list/show`
and `retention show` warn (`warnings` in JSON) and exit 1. And inspection never writes into Milvus's data.
Real RocksDB and natsmq stores copied from the fixtures, then damaged as a disk or a hasty admin would."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.helpers.files import tree_fingerprint
from tests.helpers.paths import FIXTURES

ROCKSMQ = FIXTURES / "rocksmq"
STORE = FIXTURES / "natsmq" / "store"
DML0, DML1 = "by-dev-rootcoord-dml_0", "by-dev-rootcoord-dml_1"


@pytest.fixture
def rocks(tmp_path):
    for name in ("rdb_data", "rdb_data_meta_kv"):
        shutil.copytree(ROCKSMQ / name, tmp_path / name)
    return tmp_path / "rdb_data"


@pytest.fixture
def store(tmp_path):
    shutil.copytree(STORE, tmp_path / "store")
    return tmp_path / "store"


def wal(db):
    return next(db.glob("*.log"))


def streams(store):
    return store / "jetstream" / "$G" / "streams"


def check_all(cli, *source: str, channel: str = DML0) -> dict:
    """channels list, channels show and retention show on one source: their exit codes and warnings."""
    results = {}
    for command in (("channels", "list"), ("channels", "show", channel), ("retention", "show")):
        result = cli(*command, *source, "--json")
        assert "Traceback" not in result.stderr
        results[command[:2]] = (result.code, result.json()["warnings"] if result.stdout else result.stderr)
    return results


def test_healthy_fixtures_have_no_warnings(cli):
    for source in (("--rocksmq", str(ROCKSMQ / "rdb_data")), ("--nats-store", str(STORE))):
        for command, (code, warnings) in check_all(cli, *source).items():
            assert warnings == [], (command, warnings)
            assert code == 0 or command == ("retention", "show")  # the store's maxAge 0 drifts from the default


def test_rocksmq_with_its_write_ahead_log_deleted(cli, rocks):
    wal(rocks).unlink()
    for command, (code, warnings) in check_all(cli, "--rocksmq", str(rocks)).items():
        assert code == 1, command
        assert any(
            f"topic {DML0}: the metadata counts pages up to id" in w and "the data holds no message" in w
            for w in warnings
        ), (command, warnings)
    listed = cli("channels", "list", "--rocksmq", str(rocks), "--json").json()
    assert len(listed["warnings"]) == len(listed["channels"]) == 5


def test_rocksmq_with_its_write_ahead_log_cut_short(cli, rocks):
    os.truncate(wal(rocks), wal(rocks).stat().st_size // 3)
    results = check_all(cli, "--rocksmq", str(rocks))
    assert all(code == 1 for code, _ in results.values())
    _code, warnings = results[("channels", "list")]
    assert any(
        w.startswith(f"topic {DML0}: the metadata counts pages up to id 470633384162885735")
        and "the data holds messages up to id" in w
        for w in warnings
    ), warnings
    table = cli("channels", "list", "--rocksmq", str(rocks))
    assert table.code == 1 and "warning: topic by-dev-rootcoord-dml_0" in table.stderr


def test_rocksmq_without_its_metadata(cli, rocks):
    shutil.rmtree(rocks.with_name("rdb_data_meta_kv"))
    for command, (code, warnings) in check_all(cli, "--rocksmq", str(rocks)).items():
        assert code == 1 and len(warnings) == 1 and "no rdb_data_meta_kv folder beside it" in warnings[0], command


def test_nats_store_with_a_corrupt_message_block(cli, store):
    block = streams(store) / DML0 / "msgs" / "1.blk"
    data = bytearray(block.read_bytes())
    data[200:260] = b"\xff" * 60
    block.write_bytes(bytes(data))
    results = check_all(cli, "--nats-store", str(store))
    for command, (code, warnings) in results.items():
        assert code == 1 and any(
            w.startswith(f"stream {DML0}: msgs/1.blk: an unreadable record at byte") for w in warnings
        ), (command, warnings)
    assert results[("channels", "show")][1] == [w for w in results[("channels", "list")][1] if DML0 in w]


def test_nats_store_with_a_corrupt_meta_inf(cli, store):
    (streams(store) / DML1 / "meta.inf").write_text("garbage")
    listed = cli("channels", "list", "--nats-store", str(store), "--json")
    assert listed.code == 1 and DML1 not in [c["name"] for c in listed.json()["channels"]]
    assert listed.json()["warnings"] == [
        f"stream {DML1}: its folder holds 121 message(s) but nats-server did not "
        f"load it (meta.inf is unreadable), so it is missing from the list"
    ]
    report = cli("retention", "show", "--nats-store", str(store), "--json")
    assert report.code == 1 and report.json()["warnings"] == listed.json()["warnings"]


def test_nats_store_with_a_cut_off_block(cli, store):
    block = streams(store) / DML0 / "msgs" / "1.blk"
    os.truncate(block, block.stat().st_size - 3)  # the last record loses its checksum
    listed = cli("channels", "list", "--nats-store", str(store), "--json")
    assert listed.code == 1
    assert [w for w in listed.json()["warnings"] if DML0 in w] == [
        f"stream {DML0}: msgs/1.blk: an unreadable record at byte 9165 of 9231; nats-server drops the messages from "
        "there on"
    ]


def test_nats_store_whose_server_recovers_fewer_messages_than_its_blocks_hold(cli, store):
    """A flipped payload byte keeps the record readable, but without its index nats-server rebuilds the block,
    finds the checksum wrong and drops the messages from there on."""
    msgs = streams(store) / DML0 / "msgs"
    data = bytearray((msgs / "1.blk").read_bytes())
    data[69 * 4 + 50] ^= 0xFF  # the 5th record's payload (69-byte records: 22 header, 22 subject, 17 payload, 8 sum)
    (msgs / "1.blk").write_bytes(bytes(data))
    (msgs / "1.idx").unlink()
    listed = cli("channels", "list", "--nats-store", str(store), "--json")
    counts = {c["name"]: c["messages"] for c in listed.json()["channels"]}
    assert listed.code == 1 and counts[DML0] < 121, listed.json()
    assert listed.json()["warnings"] == [
        f"stream {DML0}: its blocks hold 121 message(s) from sequence 1 on, but "
        f"nats-server recovered {counts[DML0]} (a corrupt .blk file?)"
    ]


def test_nats_store_whose_blocks_were_emptied(cli, store):
    """The index keeps the last sequence, the server shows an empty stream: no limit of it removes messages."""
    (streams(store) / DML0 / "msgs" / "1.blk").write_bytes(b"")
    listed = cli("channels", "list", "--nats-store", str(store), "--json")
    assert listed.code == 1 and listed.json()["warnings"] == [
        f"stream {DML0}: sequences 1 to 121 are gone although no limit of the stream removes messages (max_age, "
        "max_bytes and max_msgs unlimited): message blocks deleted or emptied? (or a purge, or limits raised since)"
    ]


def test_nats_store_whose_message_folder_was_deleted(cli, store):
    """Blocks and index gone, the server serves an empty new stream; its consumer's state remembers sequence 121."""
    shutil.rmtree(streams(store) / DML0 / "msgs")
    shown = cli("channels", "show", DML0, "--nats-store", str(store), "--json")
    assert shown.code == 1 and shown.json()["channel"]["messages"] == 0
    assert shown.json()["warnings"] == [
        f"stream {DML0}: its consumers were given messages up to sequence 121, but "
        "nats-server recovered the stream only up to 0 (message blocks and index "
        "deleted or cut short?)"
    ]


def test_nats_store_whose_streams_folder_is_a_file(cli, store):
    shutil.rmtree(streams(store))
    streams(store).write_text("")
    report = cli("retention", "show", "--nats-store", str(store), "--json")
    assert report.code == 1 and report.json()["warnings"] == [
        f"{streams(store)} is not a folder, so no stream can be read from this store"
    ]


def test_inspection_leaves_every_byte(cli, rocks, store):
    """channels list/show/peek and retention show read RocksMQ and a natsmq store without writing a byte."""
    before = tree_fingerprint(rocks), tree_fingerprint(store)
    for source in (("--rocksmq", str(rocks)), ("--nats-store", str(store))):
        for command in (
            ("channels", "list"),
            ("channels", "show", DML0),
            ("channels", "peek", DML0),
            ("retention", "show"),
        ):
            result = cli(*command, *source, "--json")
            assert result.code in (0, 1) and result.stdout, (command, result.stderr)
    assert (tree_fingerprint(rocks), tree_fingerprint(store)) == before
