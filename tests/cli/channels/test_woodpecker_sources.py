"""`mqctl channels list/show/peek --woodpecker PATH` end to end: the RocksMQ fixture's messages (written by a real
Milvus 2.3.5) in the 2.6 envelope, as Woodpecker segments built by tests/helpers (the cited layouts), read back
through the CLI and compared with what the same CLI reads from the RocksMQ fixture itself."""

from __future__ import annotations

import shutil

import pytest

from tests.helpers import streaming_meta as enc
from tests.helpers import woodpecker_segments as w
from tests.helpers.cli import run_cli
from tests.helpers.woodpecker_wal import ROCKSMQ, write_wal

SPAN = 10**10  # mqctl's Woodpecker message id: segment * 10**10 + entry

if not ROCKSMQ.exists():
    pytest.skip("tests/fixtures not written yet (python tests/helpers/make_fixtures.py)", allow_module_level=True)


@pytest.fixture(scope="module")
def wal(tmp_path_factory, logs):
    """The local layout nested as Milvus nests it (<localStorage.path>/wp/files/wp), given from above."""
    top = tmp_path_factory.mktemp("volumes")
    write_wal(top / "wp" / "files" / "wp", logs)
    return top


@pytest.fixture(scope="module")
def rocksmq_channels():
    result = run_cli("channels", "list", "--rocksmq", str(ROCKSMQ), "--json")
    assert result.code == 0, result.stderr
    return {c["name"]: c for c in result.json()["channels"]}


def _last_id(log) -> int:
    segments = log.segments
    return (len(segments) - 1) * SPAN + sum(len(block) for block in segments[-1]) - 1


@pytest.mark.parametrize("verify", [False, True], ids=["footers", "verify"])
def test_list_counts_ids_and_times(wal, logs, rocksmq_channels, verify):
    """From footers and with --verify alike: the same entries, ids and times; the payloads' sum only with --verify
    (unknown from footers), and the output says which read it was."""
    result = run_cli("channels", "list", "--woodpecker", str(wal), "--json", *(["--verify"] if verify else []))
    assert result.code == 0, result.stderr
    listed = {c["name"]: c for c in result.json()["channels"]}
    assert set(listed) == {str(log.log_id) for log in logs}
    for log in logs:
        row, rocks = listed[str(log.log_id)], rocksmq_channels[log.channel]
        assert row["messages"] == len(log.messages) == rocks["messages"] - log.skipped
        assert (row["first_id"], row["last_id"]) == (0, _last_id(log))
        assert (row["first_time"], row["last_time"]) == (rocks["first_time"], rocks["last_time"])
        assert row["bytes"] == (sum(len(payload) for payload, _ in log.messages) if verify else None)
    assert result.json()["source"].startswith("woodpecker:")
    assert result.json()["read"] == ("verified" if verify else "footers")
    human = run_cli("channels", "list", "--woodpecker", str(wal), *(["--verify"] if verify else []))
    assert human.code == 0 and ("read: verified" if verify else "read: footers and indexes") in human.stdout


def test_verify_is_refused_for_other_sources(tmp_path):
    result = run_cli("channels", "list", "--rocksmq", str(ROCKSMQ), "--verify")
    assert result.code == 2 and "--verify applies to Woodpecker sources only" in result.stderr


def test_peek_decodes_the_same_messages_as_rocksmq(wal, logs):
    log = next(log for log in logs if log.channel == "by-dev-rootcoord-dml_0")
    keys = ("type", "time", "tso", "collection", "collection_id", "partition_id", "shard", "rows", "pks", "error")
    mine = run_cli("channels", "peek", str(log.log_id), "--woodpecker", str(wal), "--limit", "500", "--json")
    theirs = run_cli("channels", "peek", log.channel, "--rocksmq", str(ROCKSMQ), "--limit", "500", "--json")
    assert mine.code == 0 and theirs.code == 0, mine.stderr + theirs.stderr
    got = [{k: m[k] for k in keys} for m in mine.json()["messages"]]
    want = [{k: m[k] for k in keys} for m in theirs.json()["messages"]]
    assert len(got) == len(log.messages) and got == want
    inserts = [m for m in mine.json()["messages"] if m["type"] == "Insert"]
    assert inserts and all(m["pks"] and m["error"] is None for m in inserts)
    positions = [m["position"] for m in mine.json()["messages"]]
    assert positions[:3] == ["0/0", "0/1", "0/2"]
    assert all(
        m["id"] == int(p.split("/")[0]) * SPAN + int(p.split("/")[1])
        for m, p in zip(mine.json()["messages"], positions)
    )


def test_peek_from_a_position_and_by_type(wal, logs):
    log = next(log for log in logs if log.channel == "by-dev-rootcoord-dml_0")
    result = run_cli(
        "channels", "peek", str(log.log_id), "--woodpecker", str(wal), "--from", "1/2", "--type", "timetick", "--json"
    )
    assert result.code == 0, result.stderr
    messages = result.json()["messages"]
    assert messages[0]["position"] == "1/2" and {m["type"] for m in messages} == {"TimeTick"}
    table = run_cli("channels", "peek", str(log.log_id), "--woodpecker", str(wal), "--from", "1/2", "--limit", "1")
    assert table.code == 0 and "1/2" in table.stdout and "segment/entry" in table.stdout


def test_show_counts_types_and_lists_segments(wal, logs):
    log = next(log for log in logs if log.channel == "by-dev-rootcoord-dml_0")
    mine = run_cli("channels", "show", str(log.log_id), "--woodpecker", str(wal), "--json")
    theirs = run_cli("channels", "show", log.channel, "--rocksmq", str(ROCKSMQ), "--json")
    assert mine.code == 0, mine.stderr
    assert mine.json()["types"] == theirs.json()["types"]
    assert mine.json()["collections"] == theirs.json()["collections"]
    segments = mine.json()["segments"]
    assert [s["segment"] for s in segments] == list(range(len(log.segments)))
    assert {(s["layout"], s["state"], s["footer_version"]) for s in segments} == {("local", "finalized", 6)}
    assert sum(s["entries"] for s in segments) == len(log.messages)


def test_logs_named_after_their_pchannels_with_etcd(wal, logs, etcd_url):
    for log in logs:
        enc.put(etcd_url, f"woodpecker/logs/{log.channel}", enc.log_meta(log.log_id, 1_763_000_000))
    result = run_cli("channels", "list", "--woodpecker", str(wal), "--etcd", etcd_url, "--json")
    assert result.code == 0, result.stderr
    assert [c["name"] for c in result.json()["channels"]] == [log.channel for log in logs]
    peek = run_cli("channels", "peek", "by-dev-rootcoord-dml_0", "--woodpecker", str(wal), "--etcd", etcd_url)
    assert peek.code == 0 and "v0" in peek.stdout


def test_object_layout_v5_footers_and_an_active_segment(tmp_path, logs):
    write_wal(tmp_path / "bucket" / "files" / "wp", logs, layout="object", version=5, active_last=True)
    result = run_cli("channels", "list", "--woodpecker", str(tmp_path / "bucket"), "--json")
    assert result.code == 0, result.stderr
    assert {c["name"]: c["messages"] for c in result.json()["channels"]} == {
        str(log.log_id): len(log.messages) for log in logs
    }
    log = logs[0]
    show = run_cli("channels", "show", str(log.log_id), "--woodpecker", str(tmp_path / "bucket"), "--json")
    segments = show.json()["segments"]
    assert {(s["layout"], s["footer_version"]) for s in segments[:-1]} == {("object", 5)}
    assert (segments[-1]["state"], segments[-1]["footer_version"]) == ("active", None)


def test_an_active_segment_is_read_up_to_its_last_complete_block(tmp_path, logs):
    log = logs[0]
    write_wal(tmp_path / "wp", [log], active_last=True)
    last = tmp_path / "wp" / str(log.log_id) / str(len(log.segments) - 1) / "data.log"
    last.write_bytes(last.read_bytes()[:-5])  # the last block is still being written
    result = run_cli("channels", "list", "--woodpecker", str(tmp_path / "wp"), "--json")
    assert result.code == 0, result.stderr
    [row] = result.json()["channels"]
    assert row["messages"] == len(log.messages) - len(log.segments[-1][-1])
    assert row["last_id"] == _last_id(log) - len(log.segments[-1][-1])


def test_a_flipped_byte_is_a_one_line_warning_and_exit_1(tmp_path, logs):
    log = logs[0]
    write_wal(tmp_path / "wp", [log])
    path = tmp_path / "wp" / str(log.log_id) / "1" / "data.log"
    data = bytearray(path.read_bytes())
    second_block = len(w.header(0)) + len(w.block(0, 0, [w.message(*log.messages[i]) for i in log.segments[1][0]]))
    data[second_block + 60] ^= 0x04  # inside the second block's data records
    path.write_bytes(bytes(data))
    for command in (["list", "--verify"], ["show", str(log.log_id)], ["peek", str(log.log_id), "--limit", "500"]):
        result = run_cli("channels", *command, "--woodpecker", str(tmp_path / "wp"))
        assert result.code == 1, (command, result.stderr)
        assert f"log {log.log_id} segment 1 block 1: {path} at byte {second_block}: block CRC mismatch" in result.stderr
        assert "Traceback" not in result.stderr
    listed = run_cli("channels", "list", "--woodpecker", str(tmp_path / "wp"), "--json", "--verify")
    lost = sum(len(block) for block in log.segments[1][1:])
    assert listed.json()["channels"][0]["messages"] == len(log.messages) - lost
    # from footers the damage inside a data block is not seen, and the output says the blocks were not read
    quick = run_cli("channels", "list", "--woodpecker", str(tmp_path / "wp"), "--json")
    assert quick.code == 0 and quick.json()["read"] == "footers"
    assert quick.json()["channels"][0]["messages"] == len(log.messages)


def test_an_encrypted_payload_is_said_to_be_so_not_decoded(tmp_path):
    tick = enc.base36(enc.tso(1_763_000_000))
    plain = {"_v": "1", "_t": "2", "_tt": tick, "_vc": "by-dev-rootcoord-dml_0_1v0"}
    w.local_segment(tmp_path / "wp" / "1" / "0", [[w.message(b"\x0a\x03abc garbage", {**plain, "_ch": "key-1"})]])
    result = run_cli("channels", "peek", "1", "--woodpecker", str(tmp_path / "wp"), "--json")
    assert result.code == 0, result.stderr
    [message] = result.json()["messages"]
    assert message["type"] == "Insert" and message["rows"] == 0 and message["pks"] == []
    assert "encrypted" in message["error"] and message["time"] == "2025-11-13T02:13:20Z"


def test_bad_paths_are_one_line_input_errors(tmp_path):
    (tmp_path / "empty").mkdir()
    for path, words in (
        (tmp_path / "absent", "does not exist"),
        (tmp_path / "empty", "no Woodpecker segment"),
        ("gs://bucket/files/wp", "not a Woodpecker location"),
        ("s3://Bad_Bucket/files/wp", "not a bucket name"),
    ):
        result = run_cli("channels", "list", "--woodpecker", str(path))
        assert result.code == 2 and words in result.stderr and "Traceback" not in result.stderr
    result = run_cli("channels", "list", "--rocksmq", str(ROCKSMQ), "--etcd", "http://127.0.0.1:1")
    assert result.code == 2 and "--woodpecker" in result.stderr


def test_unknown_log_lists_the_known_ones(wal):
    result = run_cli("channels", "peek", "nope", "--woodpecker", str(wal))
    assert result.code == 2 and "known" in result.stderr


def test_help_states_the_verification_status():
    result = run_cli("channels", "list", "--help")
    assert result.code == 0 and "not yet verified on a running 2.6" in " ".join(result.stdout.split())


def test_tree_copy_is_read_only(tmp_path, wal):
    copy = tmp_path / "copy"
    shutil.copytree(wal, copy)
    before = {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    assert run_cli("channels", "show", "2", "--woodpecker", str(copy)).code == 0
    assert {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()} == before


def test_transaction_and_insert_header_from_the_envelope(tmp_path):
    """`_tx` (base64 of TxnContext: txn_id 1) and an insert's `_h` (base64 of InsertMessageHeader: collection_id 1,
    partitions 2 {partition_id 1, segment_assignment 4 {segment_id 1}}), messages.proto; encoder.go EncodeProto."""
    import base64

    from pymilvus.grpc_gen import msg_pb2

    from tests.helpers.protowire import field_bytes, field_int

    def b64(raw: bytes) -> str:
        return base64.b64encode(raw).decode()

    tick = enc.base36(enc.tso(1_763_000_000))
    txn = {"_tx": b64(field_int(1, 42) + field_int(2, 1000))}
    header = field_int(1, 5) + field_bytes(2, field_int(1, 7) + field_int(2, 2) + field_bytes(4, field_int(1, 99)))
    body = msg_pb2.InsertRequest(collectionID=5, partitionID=7, num_rows=2).SerializeToString()
    stored = [
        w.message(b"", {"_v": "2", "_t": "900", "_tt": tick, **txn}),
        w.message(body, {"_v": "1", "_t": "2", "_tt": tick, "_vc": "ch_5v0", "_h": b64(header), **txn}),
        w.message(b"", {"_v": "2", "_t": "901", "_tt": tick, **txn}),
    ]
    w.local_segment(tmp_path / "wp" / "1" / "0", [stored])
    result = run_cli("channels", "peek", "1", "--woodpecker", str(tmp_path / "wp"), "--json")
    assert result.code == 0, result.stderr
    messages = result.json()["messages"]
    assert [(m["type"], m["txn"]) for m in messages] == [("BeginTxn", 42), ("Insert", 42), ("CommitTxn", 42)]
    assert (messages[1]["segment_id"], messages[1]["partition_id"], messages[1]["vchannel"]) == (99, 7, "ch_5v0")
    table = run_cli("channels", "peek", "1", "--woodpecker", str(tmp_path / "wp"), "--type", "100900", "--wide")
    assert table.code == 0 and "BeginTxn" in table.stdout and "txn" in table.stdout and "Insert" not in table.stdout


def test_a_config_with_local_storage_reads_its_folder(tmp_path, wal):
    """woodpecker.storage.type local with rootPath `default`: <localStorage.path>/wp, as Milvus 2.6 derives it."""
    config = tmp_path / "milvus.yaml"
    config.write_text(
        f"mq:\n  type: woodpecker\nwoodpecker:\n  storage:\n    type: local\nlocalStorage:\n  path: {wal}/\n"
    )
    mine = run_cli("channels", "list", "--config", str(config), "--json")
    theirs = run_cli("channels", "list", "--woodpecker", str(wal / "wp"), "--json")
    assert mine.code == 0 and theirs.code == 0, mine.stderr + theirs.stderr
    assert mine.json() == theirs.json() and mine.json()["channels"]
    custom = tmp_path / "custom.yaml"
    custom.write_text(f"mq:\n  type: woodpecker\nwoodpecker:\n  storage:\n    type: local\n    rootPath: {wal}/wp\n")
    assert run_cli("channels", "list", "--config", str(custom), "--json").json() == theirs.json()


def test_a_config_whose_woodpecker_is_a_service_or_absent_says_so(tmp_path):
    config = tmp_path / "milvus.yaml"
    config.write_text("mq:\n  type: woodpecker\nwoodpecker:\n  storage:\n    type: service\n")
    result = run_cli("channels", "list", "--config", str(config))
    assert result.code == 3 and "separate Woodpecker service" in result.stderr and "--woodpecker" in result.stderr
    config.write_text(
        f"mq:\n  type: woodpecker\nwoodpecker:\n  storage:\n    type: local\nlocalStorage:\n  path: {tmp_path}/none\n"
    )
    result = run_cli("channels", "list", "--config", str(config))
    assert result.code == 2 and f"{tmp_path}/none/wp does not exist" in result.stderr


def test_list_show_and_peek_with_etcd_name_entries_the_files_fall_short_of(wal, logs, etcd_url):
    """A segment etcd records as Completed (state 2) with a LastEntryId past what its files hold (milvus#52341): `channels
    list/show/peek --etcd` warn with the log, segment and missing entries and exit 1, as `channels woodpecker` does."""
    import base64

    import httpx

    log = logs[0]
    held = sum(len(block) for block in log.segments[0]) - 1
    for each in logs:
        enc.put(etcd_url, f"woodpecker/logs/{each.channel}", enc.log_meta(each.log_id, 1_763_000_000))
    key = f"woodpecker/logs/{log.channel}/segments/0"
    enc.put(etcd_url, key, enc.segment_meta(0, state=2, created_ms=1_763_000_000_000, last_entry=held + 3))
    try:
        said = f"entries {held + 1}..{held + 3} are missing"
        listed = run_cli("channels", "list", "--woodpecker", str(wal), "--etcd", etcd_url, "--json")
        assert listed.code == 1 and any(said in w for w in listed.json()["warnings"]), listed.stdout
        assert all(c["messages"] for c in listed.json()["channels"])  # what the files hold is still listed
        show = run_cli("channels", "show", log.channel, "--woodpecker", str(wal), "--etcd", etcd_url)
        assert show.code == 1 and said in show.stderr, show.stderr
        peek = run_cli("channels", "peek", log.channel, "--woodpecker", str(wal), "--etcd", etcd_url, "--limit", "1")
        assert peek.code == 1 and said in peek.stderr, peek.stderr
        other = run_cli("channels", "show", logs[1].channel, "--woodpecker", str(wal), "--etcd", etcd_url)
        assert other.code == 0, other.stderr  # the shortfall is the other log's
    finally:
        encoded = base64.b64encode(key.encode()).decode()
        httpx.post(f"{etcd_url}/v3/kv/deleterange", json={"key": encoded}).raise_for_status()
