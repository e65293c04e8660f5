"""`mqctl channels checkpoints` against real Milvus 2.3.5 sandboxes (module-scoped, tests run in order).

natsmq with `retention.maxAge: 1` (minute): rows inserted and not flushed; a watch sees the checkpoint stay
put while messages arrive; past half the window the vchannel is at-risk; once nats-server's expiry timer
passes the checkpoint it is expired (exit 1, FlushAll hint); FlushAll moves the checkpoint and it is ok
(exit 0). The same ok path on RocksMQ. Checkpoint values are compared with an independent decode of the
etcd value."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.helpers.cli import run_cli_subprocess
from tests.helpers.sandbox import start_with

pytestmark = pytest.mark.milvus

ROWS = 100
AT_RISK_AFTER = 33  # seconds: past half of the 60 s window, well before expiry


def _insert(info: dict, name: str, ids: range, db: str = "") -> None:
    from pymilvus import DataType, MilvusClient

    client = MilvusClient(uri=info["uri"], db_name=db)
    try:
        if not client.has_collection(name):
            schema = client.create_schema(auto_id=False)
            schema.add_field("id", DataType.INT64, is_primary=True)
            schema.add_field("vector", DataType.FLOAT_VECTOR, dim=4)
            client.create_collection(name, schema=schema, num_shards=1)
        client.insert(name, [{"id": i, "vector": [i / 10, 0.0, 0.0, 1.0]} for i in ids])
    finally:
        client.close()


@pytest.fixture(scope="module")
def nats_box(tmp_path_factory):
    folder = tmp_path_factory.mktemp("checkpoints-nats") / "milvus"
    info = start_with(folder, "natsmq", **{"natsmq.server.retention.maxAge": "1"})
    _insert(info, "hazard", range(ROWS))  # never flushed
    info["inserted_at"] = time.monotonic()
    yield info
    run_cli_subprocess("sandbox", "down", "--dir", str(folder))
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def rocks_box(tmp_path_factory):
    folder = tmp_path_factory.mktemp("checkpoints-rocks") / "milvus"
    info = start_with(folder, "rocksmq")
    _insert(info, "steady", range(ROWS))
    from pymilvus import MilvusClient

    MilvusClient(uri=info["uri"]).create_database("analytics")
    _insert(info, "events", range(10), db="analytics")
    wait_for_channel_checkpoints(info["etcd"], 2)
    yield info
    run_cli_subprocess("sandbox", "down", "--dir", str(folder))
    shutil.rmtree(folder, ignore_errors=True)


def etcd_checkpoints(etcd: str) -> dict[str, tuple[int, int]]:
    """vchannel -> (msgID as little-endian integer, timestamp), read and parsed here without mqctl."""
    from pymilvus.grpc_gen import msg_pb2

    prefix = b"by-dev/meta/datacoord-meta/channel-cp/"
    answer = httpx.post(
        f"{etcd}/v3/kv/range",
        json={"key": base64.b64encode(prefix).decode(), "range_end": base64.b64encode(prefix[:-1] + b"0").decode()},
    ).json()
    found = {}
    for kv in answer.get("kvs", []):
        position = msg_pb2.MsgPosition.FromString(base64.b64decode(kv["value"]))
        found[position.channel_name] = (int.from_bytes(position.msgID, "little"), position.timestamp)
    return found


def wait_for_channel_checkpoints(etcd: str, count: int, timeout: float = 120) -> None:
    """datacoord writes a vchannel's channel-cp some seconds after its first messages (later on a busy machine)."""
    deadline = time.monotonic() + timeout
    while len(etcd_checkpoints(etcd)) < count:
        assert time.monotonic() < deadline, (
            f"datacoord wrote no channel checkpoint for {count} vchannel(s) in {timeout} s"
        )
        time.sleep(1)


def wait_for_the_pause_between_samples(watcher: subprocess.Popen, settle: float = 0.5, timeout: float = 60) -> None:
    """Until `--watch` has taken its first sample: its main thread then sleeps the whole window in nanosleep
    (its reads of etcd and the MQ wait in poll/epoll), seen here for `settle` seconds in a row."""
    wchan = Path(f"/proc/{watcher.pid}/wchan")
    deadline = time.monotonic() + timeout
    asleep_since = None
    while time.monotonic() < deadline:
        assert watcher.poll() is None, watcher.communicate()
        if "nanosleep" in wchan.read_text():
            asleep_since = asleep_since or time.monotonic()
            if time.monotonic() - asleep_since >= settle:
                return
        else:
            asleep_since = None
        time.sleep(0.05)
    watcher.kill()
    raise AssertionError(f"the watch took no first sample in {timeout} s: {watcher.communicate()}")


def checkpoints(info: dict, *args: str):
    return run_cli_subprocess("channels", "checkpoints", "--config", info["config"], *args)


def hazard_row(result, collection: str = "hazard") -> dict:
    rows = [r for r in result.json()["checkpoints"] if r["collection"] == collection]
    assert len(rows) == 1, result.stdout
    return rows[0]


def test_watch_flags_a_checkpoint_that_stays_put_while_messages_arrive(nats_box):
    command = [
        sys.executable,
        "-m",
        "mqctl",
        "channels",
        "checkpoints",
        "--config",
        nats_box["config"],
        "--watch",
        "8",
        "--json",
    ]
    watcher = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_the_pause_between_samples(watcher)
    _insert(nats_box, "hazard", range(ROWS, ROWS + 10))
    stdout, stderr = watcher.communicate(timeout=60)
    assert watcher.returncode == 1, stdout + stderr
    row = next(r for r in json.loads(stdout)["checkpoints"] if r["collection"] == "hazard")
    assert row["status"] == "at-risk" and "did not move" in row["reason"]
    assert time.monotonic() - nats_box["inserted_at"] < 30  # so age alone would not make it at-risk


def test_unflushed_rows_past_half_the_window_are_at_risk(nats_box):
    time.sleep(max(0.0, nats_box["inserted_at"] + AT_RISK_AFTER - time.monotonic()))
    result = checkpoints(nats_box, "--json")
    assert result.code == 1, result.stdout + result.stderr
    row = hazard_row(result)
    assert row["status"] == "at-risk" and row["lag_messages"] == 2 and row["retention_seconds"] == 60
    assert (row["position"], row["checkpoint_ts"]) == etcd_checkpoints(nats_box["etcd"])[row["vchannel"]]
    assert "run FlushAll before any restart" in row["hint"]


def test_rocksmq_unflushed_rows_within_retention_are_ok(rocks_box):
    result = checkpoints(rocks_box, "--json")
    assert result.code == 0, result.stdout + result.stderr
    row = hazard_row(result, "steady")
    assert row["status"] == "ok" and row["lag_messages"] == 1 and row["database"] == "default"
    assert (row["position"], row["checkpoint_ts"]) == etcd_checkpoints(rocks_box["etcd"])[row["vchannel"]]
    assert row["first_retained"] <= row["position"] <= row["last"]
    assert hazard_row(result, "events")["database"] == "analytics"  # root-coord's db-info, decoded
    through_milvus = checkpoints(rocks_box, "--milvus", rocks_box["uri"], "--json")
    assert through_milvus.code == 0, through_milvus.stderr
    assert {(r["vchannel"], r["database"], r["collection"]) for r in through_milvus.json()["checkpoints"]} == {
        (r["vchannel"], r["database"], r["collection"]) for r in result.json()["checkpoints"]
    }


def test_retention_past_the_checkpoint_is_expired(nats_box):
    deadline = nats_box["inserted_at"] + 150
    while True:
        result = checkpoints(nats_box, "--milvus", nats_box["uri"], "--json")
        row = hazard_row(result)
        if row["status"] == "expired" or time.monotonic() > deadline:
            break
        time.sleep(3)
    assert row["status"] == "expired", row
    assert result.code == 1
    assert row["lost_messages"] == row["first_retained"] - row["position"] - 1 >= 1
    assert row["hint"].startswith("run FlushAll before any restart; a restart now loses these rows")
    assert nats_box["uri"] in row["hint"]
    human = checkpoints(nats_box)
    assert human.code == 1 and "EXPIRED" in human.stdout and "FlushAll" in human.stdout


def test_flush_all_moves_the_checkpoint_and_it_is_ok(nats_box):
    from pymilvus import MilvusClient

    client = MilvusClient(uri=nats_box["uri"])
    try:
        client.flush_all(timeout=120)
    finally:
        client.close()
    result = checkpoints(nats_box, "--json")
    assert result.code == 0, result.stdout + result.stderr
    row = hazard_row(result)
    assert row["status"] == "ok" and row["lag_messages"] == 0
    assert (row["position"], row["checkpoint_ts"]) == etcd_checkpoints(nats_box["etcd"])[row["vchannel"]]
    assert row["position"] + 1 >= row["first_retained"]
