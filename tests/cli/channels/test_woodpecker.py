"""`mqctl channels woodpecker PATH` end to end: segment files from tests/helpers/woodpecker_segments.py (the cited layout), messages
with the 2.6 envelope properties, log names from Woodpecker's meta in a real etcd."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.helpers import streaming_meta as enc
from tests.helpers import woodpecker_segments as w
from tests.helpers.cli import run_cli

T0 = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.timezone.utc)


def _props(kind: int, seconds: int, **extra: str) -> dict[str, str]:
    tick = enc.base36(enc.tso(T0.timestamp() + seconds))
    return {"_v": "2", "_t": str(kind), "_tt": tick, "_vc": "by-dev-rootcoord-dml_0_100v0", **extra}


@pytest.fixture(scope="module")
def wal(tmp_path_factory, etcd_url):
    root = tmp_path_factory.mktemp("wp") / "volumes" / "wp" / "files" / "wp"
    first = [
        w.message(b"tt", _props(1, 0)),
        w.message(b"insert-body", _props(2, 1)),
        w.message(b"\x00secret", _props(2, 2, _ch="cipher")),
    ]
    second = [w.message(b"delete-body", _props(3, 3, _tx="txn-1")), w.message(b"tt", _props(1, 4))]
    w.local_segment(root / "1" / "0", [first, second], lac=4)
    active = w.local_segment(
        root / "1" / "1", [[w.message(b"tt", _props(1, 5))], [w.message(b"x", {})]], finalized=False
    )
    (root / "1" / "1" / "data.log").write_bytes(active[:-3])
    enc.put(etcd_url, "woodpecker/logs/by-dev-rootcoord-dml_0", enc.log_meta(1, int(T0.timestamp())))
    return root.parent.parent.parent, etcd_url  # the folder above the nesting: mqctl finds the segments


def test_segments_named_after_their_pchannels(wal):
    path, etcd_url = wal
    result = run_cli("channels", "woodpecker", str(path), "--etcd", etcd_url, "--json")
    assert result.code == 0, result.stderr
    report = result.json()
    rows = [(r["log"], r["segment"], r["state"], r["entries"], r["blocks"]) for r in report["segments"]]
    assert rows == [("by-dev-rootcoord-dml_0", 0, "finalized", 5, 2), ("by-dev-rootcoord-dml_0", 1, "active", 1, 1)]
    first = report["segments"][0]
    assert (first["footer_version"], first["lac"], first["first_entry"], first["last_entry"]) == (6, 4, 0, 4)
    assert first["first_time"] == "2026-11-20T12:00:00Z" and first["last_time"] == "2026-11-20T12:00:04Z"
    assert "not yet verified on a running 2.6" in report["verification"]


def test_entries_show_the_envelope(wal):
    path, etcd_url = wal
    result = run_cli(
        "channels", "woodpecker", str(path), "--etcd", etcd_url, "--log", "by-dev-rootcoord-dml_0", "--json"
    )
    assert result.code == 0, result.stderr
    entries = result.json()["entries"]
    assert [(e["position"], e["type"]) for e in entries] == [
        ("0/0", "TimeTick"),
        ("0/1", "Insert"),
        ("0/2", "Insert"),
        ("0/3", "Delete"),
        ("0/4", "TimeTick"),
        ("1/0", "TimeTick"),
    ]
    assert entries[1]["time"] == "2026-11-20T12:00:01Z" and entries[1]["bytes"] == len(b"insert-body")
    assert entries[2]["encrypted"] and entries[3]["in_txn"] and not entries[1]["encrypted"]
    assert entries[0]["vchannel"] == "by-dev-rootcoord-dml_0_100v0"


def test_log_by_id_and_limit_without_etcd(wal):
    path, _ = wal
    result = run_cli("channels", "woodpecker", str(path), "--log", "1", "--limit", "2")
    assert result.code == 0, result.stderr
    assert "0/1" in result.stdout and "0/3" not in result.stdout and "Insert" in result.stdout
    assert "not yet verified on a running 2.6" in result.stdout


def test_a_flipped_byte_is_reported_with_exit_1(tmp_path):
    folder = tmp_path / "wp" / "4" / "2"
    data = bytearray(w.local_segment(folder, [w.messages(2), w.messages(2, 2)]))
    data[data.index(b"payload-3")] ^= 0x20
    (folder / "data.log").write_bytes(bytes(data))
    result = run_cli("channels", "woodpecker", str(tmp_path), "--json")
    assert result.code == 1
    [row] = result.json()["segments"]
    assert row["entries"] == 2 and "log 4 segment 2 block 1" in row["problems"][0]
    assert "block CRC mismatch" in row["problems"][0] and "Traceback" not in result.stderr


def test_unknown_log_and_missing_folder_are_input_errors(wal, tmp_path):
    path, _ = wal
    result = run_cli("channels", "woodpecker", str(path), "--log", "by-dev-rootcoord-dml_9")
    assert result.code == 2 and "by-dev-rootcoord-dml_9" in result.stderr
    result = run_cli("channels", "woodpecker", str(tmp_path / "absent"))
    assert result.code == 2 and "no such folder" in result.stderr


def test_urls_other_than_s3_are_refused_in_one_line():
    result = run_cli("channels", "woodpecker", "gs://milvus-bucket/files/wp")
    assert result.code == 2 and "not a Woodpecker location" in result.stderr and "s3://BUCKET/PREFIX" in result.stderr
    result = run_cli("channels", "woodpecker", "/tmp", "--s3-endpoint", "http://127.0.0.1:9000")
    assert result.code == 2 and "--s3-endpoint" in result.stderr


def test_help_states_the_verification_status():
    result = run_cli("channels", "woodpecker", "--help")
    assert result.code == 0
    assert "not yet verified on a running 2.6" in " ".join(result.stdout.split())


def _local_config(path, storage_path) -> str:
    """A milvus.yaml of a 2.6 on Woodpecker with local storage below `storage_path` (so its WAL is <path>/wp)."""
    path.write_text(
        f"mq:\n  type: woodpecker\nwoodpecker:\n  storage:\n    type: local\nlocalStorage:\n  path: {storage_path}\n"
    )
    return str(path)


def test_the_wal_a_config_names_is_read_as_its_path(wal, tmp_path):
    """Without PATH, --config says where the WAL is (<localStorage.path>/wp here): the same report, entries and log
    names as with that PATH."""
    path, etcd_url = wal
    config = _local_config(tmp_path / "milvus.yaml", path)
    for extra in ((), ("--etcd", etcd_url, "--log", "by-dev-rootcoord-dml_0")):
        mine = run_cli("channels", "woodpecker", "--config", config, *extra, "--json")
        theirs = run_cli("channels", "woodpecker", str(path / "wp"), *extra, "--json")
        assert mine.code == theirs.code == 0, mine.stderr
        assert mine.json() == theirs.json() and mine.json()["path"] == str(path / "wp")
        assert mine.json()["segments"]


def test_without_path_the_config_must_name_a_wal_here(tmp_path):
    result = run_cli("channels", "woodpecker")
    assert result.code == 2 and "give the WAL: PATH, or --config FILE" in result.stderr
    rocksmq = tmp_path / "rocksmq.yaml"
    rocksmq.write_text("mq:\n  type: rocksmq\n")
    result = run_cli("channels", "woodpecker", "--config", str(rocksmq))
    assert result.code == 2 and "not woodpecker, so the config puts no Woodpecker WAL" in result.stderr
    config = _local_config(tmp_path / "milvus.yaml", tmp_path / "elsewhere")
    result = run_cli("channels", "woodpecker", "--config", config)
    assert result.code == 2 and f"{tmp_path}/elsewhere/wp does not exist on this host" in result.stderr
    assert "localStorage.path" in result.stderr and "Traceback" not in result.stderr
    result = run_cli("channels", "woodpecker", "--config", config, "--s3-endpoint", "http://127.0.0.1:9000")
    assert result.code == 2 and "Traceback" not in result.stderr
