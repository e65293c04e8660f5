"""`mqctl doctor` on a real Milvus 2.3.5 on natsmq with its own etcd server (the production topology, where
Milvus reads its etcd config source live). One sandbox for the module; in order: healthy and found with no
arguments; forceDeny set in etcd (the file's deny and the refusal in force); an etcd mq.type override that
contradicts the file; an interrupted migration journal; natsmq retention past the channel checkpoints; a
second Milvus process on the host.

Discovery reads the whole host's /proc: when another Milvus runs here (a parallel test run), the doctor asks
for --pid, which each test then gives, after checking its own sandbox is the one listed.
"""

from __future__ import annotations

import base64
import re
import shutil
import time

import pytest

from tests.helpers.cli import run_cli_subprocess
from tests.helpers.natsmq import purge_dml_streams
from tests.helpers.sandbox import client

pytestmark = [pytest.mark.milvus, pytest.mark.etcd]

DENY = ("by-dev/config/quotaAndLimits/enabled", "by-dev/config/quotaAndLimits/limitWriting/forceDeny")
MQ_TYPE = "by-dev/config/mq/type"


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    folder = tmp_path_factory.mktemp("doctor") / "milvus"
    result = run_cli_subprocess(
        "sandbox", "up", "--dir", str(folder), "--mq", "natsmq", "--external-etcd", "--seed", "--json", timeout=300
    )
    assert result.code == 0, result.stderr
    yield result.json()
    run_cli_subprocess("sandbox", "down", "--dir", str(folder))
    shutil.rmtree(folder, ignore_errors=True)


def _etcd(info, method: str, key: str, value: str | None = None) -> None:
    import httpx

    body = {"key": base64.b64encode(key.encode()).decode()}
    if value is not None:
        body["value"] = base64.b64encode(value.encode()).decode()
    httpx.post(f"{info['etcd']}/v3/kv/{method}", json=body, timeout=5).raise_for_status()


def doctor(cli, info, *args: str):
    """`mqctl doctor --json` with no target; when another Milvus runs on this host it asks for --pid (exit 2,
    ours listed), which is then given. Returns (result, report, how the sandbox was found)."""
    result = cli("doctor", "--json", *args, timeout=120)
    if result.code == 2 and "Milvus standalone processes run here" in result.stderr:
        assert f"pid {info['pid']} in {info['dir']}" in result.stderr
        result = cli("doctor", "--json", "--pid", str(info["pid"]), *args, timeout=120)
        found_by = "--pid"
    else:
        found_by = "discovered"
    report = result.json()
    assert report["target"]["pid"] == info["pid"] and report["target"]["found_by"] == found_by, report["target"]
    return result, report, found_by


def by_code(report) -> dict[str, dict]:
    return {c["code"]: c for c in report["checks"]}


def wait_for_quota_states(info, wanted: bool, timeout: float = 20) -> list[str]:
    """The proxy's quota states (CheckHealth) once they are non-empty (`wanted`) or empty: the quota center
    applies a change at its next round (1 s in a sandbox)."""
    from mqctl.milvus.client import MilvusTarget, connect, quota_states

    c = connect(MilvusTarget(info["uri"]))
    try:
        deadline = time.monotonic() + timeout
        states = quota_states(c, 5).states
        while bool(states) != wanted and time.monotonic() < deadline:
            time.sleep(0.5)
            states = quota_states(c, 5).states
        return states
    finally:
        c.close()


def test_a_healthy_natsmq_milvus_on_its_own_etcd_is_found_with_no_arguments_and_ok(box, cli):
    started = time.monotonic()
    result, report, _ = doctor(cli, box)
    elapsed = time.monotonic() - started
    assert result.code == 0, [c for c in report["checks"] if c["severity"] in ("error", "warning")]
    assert report["verdict"] == "ok"
    target = report["target"]
    assert target["configs"] == [box["config"]] and target["version"] == "2.3.5"
    assert target["etcd"] == box["etcd"] and target["etcd_embedded"] is False  # etcd.endpoints, not the embedded one
    assert target["mq"]["mq"] == "natsmq" and "mqType=natsmq" in target["mq"]["evidence"]
    assert target["next_mq"] == "natsmq" and target["paths"]["natsmq"] == f"{box['dir']}/data/natsmq"
    codes = by_code(report)
    for passed in ("DR100", "DR110", "DR200", "DR210", "DR301", "DR310", "DR311", "DR400", "DR600", "DR602", "DR603"):
        assert codes[passed]["severity"] == "ok", codes[passed]
    assert codes["DR301"]["message"].startswith("nats://127.0.0.1:")  # read from Milvus's own NATS server
    assert "2 collection(s), all loaded" in codes["DR602"]["message"]
    # natsmq is fine on 2.3.5; the upgrade to 2.6 is where it ends: said, with the migration, not a warning
    assert codes["DR500"]["severity"] == "info" and "--to rocksmq" in codes["DR500"]["fix"]
    print(f"doctor on a healthy natsmq sandbox: {elapsed:.2f} s wall, {report['seconds']:.2f} s examining")


def test_force_deny_set_in_etcd_is_the_error_in_the_config_and_the_refusal_in_force(box, cli):
    try:
        for key in DENY:
            _etcd(box, "put", key, "true")
        assert wait_for_quota_states(box, wanted=True) == ["DenyToWrite"]
        result, report, _ = doctor(cli, box)
        assert result.code == 1 and report["verdict"] == "error"
        codes = by_code(report)
        deny = codes["DR200"]
        assert deny["severity"] == "error" and f"etcd {DENY[1]}" in deny["message"]
        assert deny["fix"].startswith(f"etcdctl --endpoints {box['etcd']} put {DENY[1]} false")
        live = codes["DR603"]
        assert live["severity"] == "error" and "Milvus refuses writes now" in live["message"]
        assert "the writing has been deactivated by the administrator" in live["message"]
        assert (
            live["fix"].startswith(f"as for DR200: etcdctl --endpoints {box['etcd']} put {DENY[1]} false")
            and "insert" in live["impact"]
        )
        screen = cli("doctor", "--pid", str(box["pid"]), timeout=120)
        assert screen.code == 1 and screen.stdout.startswith("verdict: error") and "DR603" in screen.stdout
        print(screen.stdout)
    finally:
        for key in DENY:
            _etcd(box, "deleterange", key)
    assert wait_for_quota_states(box, wanted=False) == []  # writes reopen without a restart


def test_an_etcd_mq_type_override_that_contradicts_the_file_is_the_next_restart_on_another_mq(box, cli):
    _etcd(box, "put", MQ_TYPE, "rocksmq")
    try:
        result, report, _ = doctor(cli, box)
    finally:
        _etcd(box, "deleterange", MQ_TYPE)
    assert result.code == 1 and report["target"]["next_mq"] == "rocksmq"
    codes = by_code(report)
    hidden = codes["MQ150"]  # the override hides the yaml's mq.type
    assert MQ_TYPE in hidden["message"] and "'natsmq'" in hidden["message"]
    drift = codes["DR110"]
    assert drift["severity"] == "error"
    assert drift["message"].startswith("Milvus runs natsmq now, but the next restart starts an empty rocksmq")
    assert f"etcd {MQ_TYPE}" in drift["message"]
    assert drift["fix"].startswith(f"etcdctl --endpoints {box['etcd']} put {MQ_TYPE} natsmq")
    assert f"{box['dir']}/data/natsmq" in drift["impact"]  # the data a restart leaves behind
    assert codes["DR603"]["severity"] == "ok"  # the deny of the test before is lifted


def test_an_interrupted_migration_journal_beside_the_config_says_where_it_stopped(box, cli):
    """The journal `mqctl migrate --config` keeps beside milvus.yaml, stopped at FlushAll after it stopped
    writes: the doctor names the step and both ways on, found with no arguments as before."""
    from pathlib import Path

    from mqctl.migrate.record.journal import DONE, FAILED, JOURNAL_NAME, Journal

    path = Path(box["config"]).parent / JOURNAL_NAME
    journal = Journal.new(path, "natsmq", "rocksmq", {"configs": [box["config"]], "to": "rocksmq",
                                                      "milvus": {"uri": box["uri"]}})  # fmt: skip
    for name in ("preflight", "stop-writes"):
        journal.step(name).status = DONE
    journal.step("flush").status = FAILED
    journal.step("flush").error = "FlushAll not finished after 600 s"
    journal.save()
    try:
        result, report, _ = doctor(cli, box)
    finally:
        path.unlink()
    assert result.code == 1
    stopped = by_code(report)["DR210"]
    assert stopped["severity"] == "error"
    assert f"an interrupted migration natsmq -> rocksmq ({journal.id})" in stopped["message"]
    assert "step flush is failed: FlushAll not finished after 600 s" in stopped["message"]
    assert f"mqctl migrate resume --config {box['config']}" in stopped["fix"]
    assert f"mqctl migrate rollback --config {box['config']}" in stopped["fix"]
    assert stopped["impact"].startswith("writes stay refused")


def test_natsmq_retention_past_the_checkpoints_is_an_error_with_what_a_restart_loses(box, cli):
    """What natsmq retention does to a stream (its first messages dropped) done at once with a purge of every
    DML stream of the live Milvus: the seeded rows, not flushed, are then only in Milvus's memory."""
    from mqctl.sandbox.server import Sandbox

    port = Sandbox(box["dir"]).ports["natsmq_port"]
    assert purge_dml_streams(f"nats://127.0.0.1:{port}")
    result, report, _ = doctor(cli, box)
    assert result.code == 1 and report["verdict"] == "error"
    expired = [c for c in report["checks"] if c["code"] == "CP100"]
    assert expired and all(c["area"] == "checkpoints" and c["severity"] == "error" for c in expired)
    assert all("FlushAll" in c["fix"] for c in expired)
    said = re.compile(
        r"a restart loses the rows in (\d+) message\(s\) Milvus had not flushed \((\d+) row\(s\) of default\.(\w+): "
        r"what Milvus serves now beyond its flushed segments, at least\), without an error"
    )
    lost = [said.fullmatch(c["impact"]) for c in expired]
    assert all(lost), [c["impact"] for c in expired]
    assert sum(int(m.group(1)) for m in lost if m) > 0
    # nothing was flushed and nothing is left in the streams: every row seeded (inserts less deletes) is at risk
    assert {m.group(3): int(m.group(2)) for m in lost if m} == box["seeded"]
    c = client(box)
    try:  # Milvus itself still serves every seeded row: it is the restart that loses them
        assert c.query("demo_events", filter="", output_fields=["count(*)"])[0]["count(*)"] == 1080
    finally:
        c.close()


def test_two_milvus_processes_make_the_doctor_ask_for_a_pid(box, cli, tmp_path):
    """A second real Milvus standalone (another sandbox, started but not waited for): the doctor lists both
    and exits 2 (bad usage: choose one), one line; --json gives one error object."""
    from mqctl.sandbox.server import Sandbox

    other = Sandbox(tmp_path / "other")
    other.create("rocksmq")
    second = other.launch()
    try:
        plain = cli("doctor", timeout=60)
        as_json = cli("doctor", "--json", timeout=60)
    finally:
        other.stop(timeout=2)
        second.wait(timeout=10)
    assert plain.code == 2 and plain.stdout == ""
    assert len(plain.stderr.strip().splitlines()) == 1
    for pid, folder in ((box["pid"], box["dir"]), (second.pid, str(other.dir))):
        assert f"pid {pid} in {folder}" in plain.stderr
    assert "choose one with --pid PID" in plain.stderr
    error = as_json.json()["error"]
    assert as_json.code == 2 and list(as_json.json()) == ["error"] and f"pid {second.pid}" in error["message"]
