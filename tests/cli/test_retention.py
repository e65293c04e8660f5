"""`mqctl retention show/apply` end to end against the real fixtures and live nats-servers."""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import sys
import time

import pytest

from mqctl.mq.retention import RULE_BLOCKED, RULE_DRIFT
from mqctl.mq.rocksmq.reader import RocksMQSource
from tests.helpers.natsmq import natsmq_yaml, stream_limits
from tests.helpers.paths import FIXTURES, SAMPLES
from tests.helpers.servers import free_port, start_nats

ROCKSMQ = FIXTURES / "rocksmq" / "rdb_data"
STORE = FIXTURES / "natsmq" / "store"
FINDING_KEYS = {"code", "severity", "message", "key", "file", "line", "hint"}


@pytest.fixture
def milvus_like_server(tmp_path):
    """A real nats-server with streams shaped like Milvus's (one subject each, limits from the old config)."""
    import nats

    proc, url = start_nats(tmp_path)

    async def create():
        nc = await nats.connect(url)
        js = nc.jetstream()
        for i in range(3):
            name = f"by-dev-rootcoord-dml_{i}"
            await js.add_stream(name=name, subjects=[name], max_age=4320 * 60)
            for n in range(20):
                await js.publish(name, b"\x08" + bytes([n]))
        await nc.close()

    asyncio.run(create())
    yield url
    proc.terminate()
    proc.wait()


def test_show_natsmq_store_drift(cli, tmp_path):
    config = natsmq_yaml(tmp_path)  # the fixture was written with maxAge 0; 4320 is drift
    result = cli("retention", "show", "--nats-store", str(STORE), "--config", str(config), "--json")
    assert result.code == 1, result.stderr
    data = result.json()
    assert data["findings"] and {f["code"] for f in data["findings"]} == {RULE_DRIFT}
    for finding in data["findings"]:
        assert set(finding) == FINDING_KEYS
        assert finding["key"] == "natsmq.server.retention.maxAge"
        assert finding["file"] == str(config) and finding["line"] == 8
        assert "10058" in finding["message"]
    for channel in data["channels"]:
        assert channel["configured"]["max_age"] == 4320 * 60 and channel["actual"]["max_age"] == 0
        assert channel["findings"]
    assert len(data["findings"]) == len(data["channels"])

    matching = natsmq_yaml(tmp_path, max_age="0", name="matching.yaml")
    clean = cli("retention", "show", "--nats-store", str(STORE), "--config", str(matching), "--json")
    assert clean.code == 0 and clean.json()["findings"] == []
    table = cli("retention", "show", "--nats-store", str(STORE), "--config", str(config))
    assert table.code == 1 and "DRIFT" in table.stdout and "RET100" in table.stdout


def test_show_rocksmq_purgeable_pages(cli, tmp_path):
    config = tmp_path / "milvus.yaml"
    config.write_text(
        f"mq:\n  type: rocksmq\nrocksmq:\n  path: {ROCKSMQ}\n  retentionTimeInMinutes: 1\n  retentionSizeInMB: 8192\n"
    )
    result = cli("retention", "show", "--config", str(config), "--json")  # the source comes from the config too
    assert result.code == 0, result.stderr
    with RocksMQSource(ROCKSMQ) as source:
        meta = source.topic_meta()
    for channel in result.json()["channels"]:
        pages = meta[channel["name"]].pages
        actual = channel["actual"]
        assert channel["configured"]["retention_time_minutes"] == 1
        assert actual["pages"] == len(pages) and actual["acked_pages"] == sum(p.acked for p in pages)
        assert actual["purgeable_pages"] == actual["acked_pages"]  # every ack is older than a minute
        assert actual["reclaimable_bytes"] == sum(p.size for p in pages if p.acked)
        assert actual["oldest_message_age_seconds"] > 60
    assert any(c["actual"]["purgeable_pages"] for c in result.json()["channels"])
    defaults = cli("retention", "show", "--rocksmq", str(ROCKSMQ), "--json").json()
    assert defaults["channels"][0]["configured"]["retention_time_minutes"] == 4320


def test_blocked_pages_are_a_finding_exit_1(cli, tmp_path):
    """A real RocksMQ whose closed pages were never acked: the metadata copy has its acks removed."""
    from rocksdict import Options, Rdict

    shutil.copytree(ROCKSMQ, tmp_path / "rdb_data")
    meta = tmp_path / "rdb_data_meta_kv"
    shutil.copytree(ROCKSMQ.with_name("rdb_data_meta_kv"), meta)
    db = Rdict(str(meta), options=Options(raw_mode=True))
    for key in [k for k in db.keys() if isinstance(k, bytes) and k.startswith(b"acked_ts/")]:  # noqa: SIM118 (Rdict iterates items)
        del db[key]
    db.close()
    config = tmp_path / "milvus.yaml"
    config.write_text(f"rocksmq:\n  path: {tmp_path / 'rdb_data'}\n  retentionTimeInMinutes: 1\n")
    result = cli("retention", "show", "--rocksmq", str(tmp_path / "rdb_data"), "--config", str(config), "--json")
    assert result.code == 1, result.stderr
    findings = result.json()["findings"]
    assert findings and {f["code"] for f in findings} == {RULE_BLOCKED}
    assert all(
        "#24106" in f["message"] and f["key"] == "rocksmq.retentionTimeInMinutes" and f["line"] == 3 for f in findings
    )
    assert all(c["actual"]["purgeable_pages"] == 0 for c in result.json()["channels"])


def test_apply_live_server(cli, tmp_path, milvus_like_server):
    url = milvus_like_server
    config = natsmq_yaml(tmp_path, max_age="60", max_msgs="10")
    before = stream_limits(url)
    drift = cli("retention", "show", "--nats", url, "--config", str(config), "--json")
    assert drift.code == 1 and len(drift.json()["findings"]) == 2 * len(before)

    dry = cli("retention", "apply", "--config", str(config), "--nats", url, "--dry-run", "--json")
    assert dry.code == 0, dry.stderr
    assert dry.json()["dry_run"] is True and len(dry.json()["changes"]) == 2 * len(before)
    assert "+max_age: 60 min" in dry.stderr and "-max_msgs: unlimited" in dry.stderr and "+max_msgs: 10" in dry.stderr
    fuller = sorted(name for name, limits in before.items() if limits[3] > 10)
    assert fuller, "the fixture holds streams over the new max_msgs"
    assert (
        sorted(
            loss.split(":")[0].removeprefix("stream ")
            for loss in dry.json()["losses"]
            if "max_msgs 10 deletes the oldest" in loss
        )
        == fuller
    )
    assert dry.stderr.count("warning: stream") == len(dry.json()["losses"])
    assert stream_limits(url) == before

    unconfirmed = cli("retention", "apply", "--config", str(config), "--nats", url)
    assert unconfirmed.code == 3 and "--yes" in unconfirmed.stderr
    assert stream_limits(url) == before

    applied = cli("retention", "apply", "--config", str(config), "--nats", url, "--yes", "--json")
    assert applied.code == 0, applied.stderr
    assert applied.json()["verified"] is True and sorted(applied.json()["applied"]) == sorted(before)
    assert set(stream_limits(url).values()) == {(3600.0, -1, 10, 10)}  # the server keeps the 10 newest
    clean = cli("retention", "show", "--nats", url, "--config", str(config), "--json")
    assert clean.code == 0 and clean.json()["findings"] == []
    again = cli("retention", "apply", "--config", str(config), "--nats", url, "--yes")
    assert again.code == 0 and "already matches" in again.stdout


def test_apply_nats_store_persists(cli, tmp_path):
    store = tmp_path / "store"
    shutil.copytree(STORE, store)
    # ten years: JetStream deletes what is older than max_age at once, and the fixture ages with every day
    config = natsmq_yaml(tmp_path, max_age=str(10 * 365 * 24 * 60))
    result = cli("retention", "apply", "--config", str(config), "--nats-store", str(store), "--yes", "--json")
    assert result.code == 0, result.stderr
    assert result.json()["verified"] is True
    after = cli("retention", "show", "--nats-store", str(store), "--config", str(config), "--json")
    assert after.code == 0 and after.json()["findings"] == []
    counts = {c["name"]: c["actual"]["messages"] for c in after.json()["channels"]}
    original = cli("channels", "list", "--nats-store", str(STORE), "--json").json()["channels"]
    assert counts == {c["name"]: c["messages"] for c in original}


def test_apply_refuses_a_store_in_use(cli, tmp_path):
    store = tmp_path / "store"
    shutil.copytree(STORE, store)
    held = next(store.rglob("*.blk"))
    holder = subprocess.Popen(
        [sys.executable, "-c", f"f = open({str(held)!r}); print('ok', flush=True); import time; time.sleep(60)"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ok"
        result = cli("retention", "apply", "--config", str(natsmq_yaml(tmp_path)), "--nats-store", str(store), "--yes")
        assert result.code == 3 and "in use by" in result.stderr and "stop Milvus" in result.stderr
    finally:
        holder.kill()
        holder.wait()


def test_apply_refuses_while_milvus_serves_nats(cli, tmp_path):
    """A nats-server binary named `milvus` stands in for Milvus's embedded server (same process name)."""
    from mqctl.mq.nats.server import nats_server_binary

    binary = tmp_path / "milvus"
    shutil.copy(nats_server_binary(), binary)
    proc, url = start_nats(tmp_path, binary=binary)
    try:
        config = natsmq_yaml(tmp_path)
        refused = cli("retention", "apply", "--config", str(config), "--nats", url, "--yes")
        assert refused.code == 3 and "served by Milvus itself" in refused.stderr
        looked = cli("retention", "apply", "--config", str(config), "--nats", url, "--dry-run", "--json")
        assert looked.code == 0 and looked.json()["dry_run"] is True, looked.stderr  # a dry run changes nothing
        forced = cli("retention", "apply", "--config", str(config), "--nats", url, "--yes", "--force")
        assert forced.code == 0, forced.stderr
    finally:
        proc.terminate()
        proc.wait()


def test_apply_needs_a_nats_source(cli, tmp_path):
    result = cli("retention", "apply", "--config", str(natsmq_yaml(tmp_path)))
    assert result.code == 2 and "--nats URL or --nats-store DIR" in result.stderr


def test_one_cause_is_one_row_naming_every_stream(cli, tmp_path):
    """Five streams drifting the same way are one finding row; JSON keeps one finding per stream too."""
    config = natsmq_yaml(tmp_path)
    result = cli("retention", "show", "--nats-store", str(STORE), "--config", str(config), "--json")
    assert result.code == 1, result.stderr
    data = result.json()
    names = [c["name"] for c in data["channels"]]
    assert len(data["findings"]) == len(names) == 5
    [group] = data["finding_groups"]
    assert group["channels"] == names and group["code"] == RULE_DRIFT and group["line"] == 8
    assert group["message"].startswith("max_age is unlimited but the config gives 4320 min")
    table = cli("retention", "show", "--nats-store", str(STORE), "--config", str(config))
    assert table.code == 1 and table.stdout.count("RET100") == 1 and "5 channels (by-dev-replicate-msg," in table.stdout


@pytest.mark.parametrize("minutes, code", [("1000000000000000", 0), ("9223372036854775807", 2)])
def test_rocksmq_retention_far_beyond_a_lifetime(cli, tmp_path, minutes, code):
    """Beyond Python's timedelta nothing ever expires; beyond Go's int64 seconds it is bad input at its line."""
    config = tmp_path / "milvus.yaml"
    config.write_text(f"rocksmq:\n  path: {ROCKSMQ}\n  retentionTimeInMinutes: {minutes}\n")
    result = cli("retention", "show", "--config", str(config), "--json")
    assert result.code == code, result.stderr
    if code:
        assert result.stderr.startswith(f"error: {config}:3: rocksmq.retentionTimeInMinutes {minutes} is too large")
    else:
        assert all(c["actual"]["purgeable_pages"] == 0 for c in result.json()["channels"])


def test_non_ascii_digits_are_not_a_number_for_milvus(cli, tmp_path):
    """Go's strconv.ParseInt rejects "６０" (full-width digits), so Milvus uses 0: no age limit, as the store has."""
    config = natsmq_yaml(tmp_path, max_age="６０")
    result = cli("retention", "show", "--nats-store", str(STORE), "--config", str(config), "--json")
    assert result.code == 0, result.stderr
    assert {c["configured"]["max_age"] for c in result.json()["channels"]} == {0}


def _wait_listening(port: int, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "milvus.yaml"
    shutil.copy(SAMPLES / "milvus-2.3-standalone-rocksmq.yaml", path)
    return path


def _one_clean_line(result) -> None:
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("how", ["store-dir-option", "config-file"])
def test_a_store_served_by_an_idle_nats_server_is_refused(cli, tmp_path, how):
    """An idle nats-server keeps no store file open; its command line or config names the store."""
    from mqctl.mq.nats.server import nats_server_binary

    store = tmp_path / "store"
    shutil.copytree(FIXTURES / "natsmq" / "store", store)
    port = free_port()
    if how == "config-file":
        conf = tmp_path / "server.conf"
        conf.write_text(f'listen: 127.0.0.1:{port}\njetstream {{ store_dir: "{store}" }}\n')
        args = ["-c", str(conf)]
    else:
        args = ["-a", "127.0.0.1", "-p", str(port), "-js", "-sd", str(store)]
    server = subprocess.Popen([nats_server_binary(), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(port)
        config = tmp_path / "milvus.yaml"
        shutil.copy(SAMPLES / "milvus-2.3-standalone-natsmq.yaml", config)
        result = cli("retention", "apply", "--config", str(config), "--nats-store", str(store), "--yes")
        assert result.code == 3, result.stdout
        _one_clean_line(result)
        assert f"in use by {server.pid} (nats-server)" in result.stderr
    finally:
        server.kill()
        server.wait()
