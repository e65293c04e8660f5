"""End-to-end migrations on one real Milvus 2.3.5 sandbox (shared by the module, in order):
refusals that need a Milvus, RocksMQ -> natsmq with crashes and resume, natsmq -> RocksMQ after a failing start
command, RocksMQ -> natsmq again and rollback."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli_subprocess
from tests.helpers.imports import imported_by, pymilvus_client_parts
from tests.helpers.sandbox import KILLED, client, counts, journal, migrate

pytestmark = pytest.mark.milvus


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sandbox") / "milvus"
    result = run_cli_subprocess("sandbox", "up", "--dir", str(folder), "--seed", "--json", timeout=300)
    assert result.code == 0, result.stderr
    info = result.json()
    yield info
    run_cli_subprocess("sandbox", "down", "--dir", str(folder))
    shutil.rmtree(folder, ignore_errors=True)


def assert_deleted_rows_stay_deleted(info):
    c = client(info)
    try:
        for name in ("demo_docs", "demo_events"):
            assert (
                c.query(name, filter="id in [0, 10, 20, 990]", output_fields=["id"], consistency_level="Strong") == []
            )
            assert len(c.query(name, filter="id in [1, 11, 21]", output_fields=["id"], consistency_level="Strong")) == 3
    finally:
        c.close()


def test_sandbox_up_reports_every_field(box, cli):
    for key in ("uri", "config", "log", "etcd", "health_url", "stop_cmd", "start_cmd"):
        assert box[key], key
    assert box["running"] is True and box["mq"] == "rocksmq"
    assert box["seeded"] == {"demo_docs": 2700, "demo_events": 1080}
    status = cli("sandbox", "status", "--dir", box["dir"], "--json").json()
    assert status["running"] is True and status["uri"] == box["uri"] and status["mq"] == "rocksmq"


def test_refuses_conflicting_etcd_override(box):
    from mqctl.config.resolve.sources import EtcdConfig

    etcd = EtcdConfig(box["etcd"])
    etcd.put("mq/type", "rocksmq")
    try:
        result = migrate(box, "--to", "natsmq")
        assert result.code == 3
        assert "by-dev/config/mq/type" in result.stderr and "--clear-etcd-override" in result.stderr
        assert "not read while Milvus runs on its embedded etcd" in result.stderr  # the sandbox's etcd is embedded
        plan = run_cli_subprocess(
            "migrate", "plan", "--sandbox", box["dir"], "--to", "natsmq", "--clear-etcd-override", "--json"
        )
        assert plan.code == 0, plan.stderr
        assert "etcd-override-cleared" in [f["code"] for f in plan.json()["findings"]]
    finally:
        etcd.delete("mq/type")


def test_refuses_stale_jetstream_dir(box, tmp_path):
    (tmp_path / "jetstream" / "$G").mkdir(parents=True)
    result = migrate(box, "--to", "natsmq", "--store-dir", str(tmp_path))
    assert result.code == 3 and "stale" in result.stderr and "jetstream" in result.stderr
    assert journal(box)["steps"][1]["status"] == "pending"  # nothing after preflight ran


def test_plan_reads_milvus_environment_and_refuses_an_unreachable_kafka(box):
    from mqctl.host.ports import free_ports

    silent = f"127.0.0.1:{free_ports(1)[0]}"  # nothing listens there
    result = run_cli_subprocess(
        "migrate", "plan", "--sandbox", box["dir"], "--to", "kafka", "--kafka", silent, "--json"
    )
    assert result.code == 3, result.stderr  # Milvus would not start on it
    findings = {f["code"]: f for f in result.json()["findings"]}
    unreachable = findings["target-unreachable"]
    assert unreachable["level"] == "error" and f"Kafka at {silent} does not answer within" in unreachable["message"]
    assert "env-not-checked" not in findings  # the sandbox's milvus process is local: its environment was read
    # the migration's questions (version, databases, collections, load states, counts) go through the generated
    # stubs and grpc: pymilvus's package (pandas, numpy) never loads
    names = imported_by("migrate", "plan", "--sandbox", box["dir"], "--to", "natsmq", "--json")
    assert "grpc" in names and "mqctl.milvus.rpc" in names and "pymilvus.grpc_gen.milvus_pb2_grpc" in names
    assert not pymilvus_client_parts(names)


def test_counting_asks_every_load_first_then_counts(box):
    """verify's two phases on the real Milvus: `start_loading` asks for the load of each collection not loaded
    (all at once, before the deny is seen) and returns; `count_loaded` waits for the loads and counts."""
    from mqctl.milvus.client import count_loaded, start_loading
    from mqctl.milvus.rpc import MilvusGrpc

    expected = counts(box)
    with MilvusGrpc(box["uri"]) as rpc:
        rpc.release("demo_events")
        pending = {entry.key: entry for entry in start_loading(rpc)}
        assert pending["default/demo_events"].was_loaded is False and pending["default/demo_events"].counts is None
        assert pending["default/demo_docs"].was_loaded is True
        counted = count_loaded(rpc, list(pending.values()), load_timeout=120)
        assert rpc.is_loaded("demo_events")
    assert {key.split("/", 1)[1]: c["rows"] for key, c in counted.items()} == expected
    assert counted["default/demo_events"] == {"rows": expected["demo_events"], "was_loaded": False, "method": "query"}


def test_rocksmq_to_natsmq_survives_crashes_and_resume(box, tmp_path):
    before = counts(box)
    crashed = migrate(
        box,
        "--to",
        "natsmq",
        "--backup-dir",
        str(tmp_path / "backup"),
        "--cleanup",
        env={"MQCTL_CRASH_AFTER_STEP": "preflight"},
    )
    assert crashed.code == KILLED
    status = run_cli_subprocess("migrate", "status", "--sandbox", box["dir"], "--json").json()
    names = [s["name"] for s in status["steps"]]
    assert names == [
        "preflight",
        "stop-writes",
        "flush",
        "stop",
        "switch",
        "start",
        "verify",
        "resume-writes",
        "backup",
    ]
    assert [s["status"] for s in status["steps"][:2]] == ["done", "pending"]
    # SIGKILL right after every other step too; each resume goes on from the journal (Milvus is not
    # restarted needlessly) and the step that was killed after stays done.
    for step in names[1:]:
        crashed = run_cli_subprocess(
            "migrate", "resume", "--sandbox", box["dir"], env={"MQCTL_CRASH_AFTER_STEP": step}, timeout=600
        )
        assert crashed.code == KILLED, (step, crashed.stderr)
        assert journal(box)["steps"][names.index(step)]["status"] == "done", step
    done = run_cli_subprocess("migrate", "resume", "--sandbox", box["dir"], "--json", timeout=600)
    assert done.code == 0, done.stderr
    result = done.json()
    assert result["state"] == "completed"
    verify = next(s for s in result["steps"] if s["name"] == "verify")
    assert "mqType=natsmq" in verify["evidence"]["init_mq_line"]
    assert Path(verify["evidence"]["jetstream_dir"]).is_dir()
    backup = next(s for s in result["steps"] if s["name"] == "backup")["evidence"]
    assert backup["read_back"] == "checksums match" and not any(Path(d).exists() for d in backup["deleted"])
    assert counts(box) == before
    assert_deleted_rows_stay_deleted(box)
    # writes are open again and go through NATS
    c = client(box)
    c.insert("demo_docs", [{"id": 50_000 + i, "tag": 1, "vector": [0.5] * 8} for i in range(25)])
    c.close()
    assert counts(box)["demo_docs"] == before["demo_docs"] + 25
    from mqctl.mq.nats.client import JetStreamSource
    from mqctl.sandbox.server import Sandbox

    source = JetStreamSource(f"nats://127.0.0.1:{Sandbox(box['dir']).ports['natsmq_port']}")
    try:
        assert sum(ch.messages for ch in source.list_channels() if "dml" in ch.name) > 0
    finally:
        source.close()


def test_natsmq_to_rocksmq_after_a_failing_stop_and_a_failing_start_command(box, tmp_path):
    stop_fails = migrate(
        box, "--to", "rocksmq", "--stop-cmd", "false", "--backup-dir", str(tmp_path / "backup"), "--cleanup"
    )
    assert stop_fails.code == 3 and "step stop failed" in stop_fails.stderr
    assert "Milvus still runs on its old MQ, so writes were resumed" in stop_fails.stderr
    steps = {s["name"]: s["status"] for s in journal(box)["steps"]}
    assert (steps["stop-writes"], steps["flush"], steps["stop"]) == ("pending", "pending", "failed")
    c = client(box)  # writes work again, and what they add is flushed again before the switch
    c.insert("demo_events", [{"id": 70_000 + i, "tag": 2, "vector": [0.25] * 8} for i in range(5)])
    c.close()
    before = counts(box)
    failed = run_cli_subprocess("migrate", "resume", "--sandbox", box["dir"], "--start-cmd", "false", timeout=600)
    assert failed.code == 3
    assert "step start failed" in failed.stderr and "writes stay denied" in failed.stderr
    done = run_cli_subprocess("migrate", "resume", "--sandbox", box["dir"], "--json", timeout=600)
    assert done.code == 0, done.stderr
    verify = next(s for s in done.json()["steps"] if s["name"] == "verify")
    assert "mqType=rocksmq" in verify["evidence"]["init_mq_line"]
    assert counts(box) == before
    assert_deleted_rows_stay_deleted(box)


def test_rollback_before_cleanup_returns_to_rocksmq(box):
    """forceDeny absent from the config: resuming writes removes it again, which Milvus logs as a DELETE event.
    With --measure: search, query and insert timed before (RocksMQ) and after (NATS) on scratch collections, which
    neither the counts nor the verification see."""
    unset = run_cli_subprocess("config", "unset", box["config"], "quotaAndLimits.limitWriting.forceDeny", "--yes")
    assert unset.code == 0, unset.stderr
    before = counts(box)
    c = client(box)
    collections = sorted(c.list_collections())
    c.close()
    done = migrate(box, "--to", "natsmq", "--measure", "--json")
    assert done.code == 0, done.stderr
    measured = done.json()["measured"]
    assert (measured["before_mq"], measured["after_mq"]) == ("rocksmq", "natsmq")
    figures = {f["metric"]: f for f in measured["figures"]}
    assert {"search p50", "query p50", "insert 64 KB"} <= set(figures), figures
    for name, figure in figures.items():
        assert figure["before"] > 0 and figure["after"] > 0, name  # real timings on both MQs
        assert figure["ratio"] == pytest.approx(figure["after"] / figure["before"], rel=0.01, abs=0.001), name
    c = client(box)
    assert sorted(c.list_collections()) == collections  # the scratch collections are dropped again
    c.close()
    from mqctl.config.edit.set_unset import get_key

    resumed = next(s for s in journal(box)["steps"] if s["name"] == "resume-writes")
    assert "DELETE" in resumed["evidence"]["confirmed"]
    assert get_key(box["config"], "quotaAndLimits.limitWriting.forceDeny") == (None, None)
    back = run_cli_subprocess("migrate", "rollback", "--sandbox", box["dir"], "--yes", "--json", timeout=600)
    assert back.code == 0, back.stderr
    result = back.json()
    assert result["state"] == "rolled-back"
    verify = next(s for s in result["rollback"] if s["name"] == "verify")
    assert "mqType=rocksmq" in verify["evidence"]["init_mq_line"]
    assert counts(box) == before
    assert_deleted_rows_stay_deleted(box)
    status = run_cli_subprocess("sandbox", "status", "--dir", box["dir"], "--json").json()
    assert status["mq"] == "rocksmq" and status["running"] is True


def test_rollback_after_cleanup_restores_the_archived_rocksmq(box, tmp_path):
    before = counts(box)
    done = migrate(
        box,
        "--to",
        "natsmq",
        "--store-dir",
        str(tmp_path / "nats"),
        "--backup-dir",
        str(tmp_path / "bk"),
        "--cleanup",
        "--json",
    )
    assert done.code == 0, done.stderr
    deleted = next(s for s in done.json()["steps"] if s["name"] == "backup")["evidence"]["deleted"]
    assert deleted and not any(Path(d).exists() for d in deleted)
    back = run_cli_subprocess("migrate", "rollback", "--sandbox", box["dir"], "--yes", "--json", timeout=600)
    assert back.code == 0, back.stderr
    steps = {s["name"]: s for s in back.json()["rollback"]}
    assert steps["restore-data"]["evidence"]["restored"] == deleted
    assert all(Path(d).is_dir() for d in deleted)
    assert "mqType=rocksmq" in steps["verify"]["evidence"]["init_mq_line"]
    assert counts(box) == before
    assert_deleted_rows_stay_deleted(box)
