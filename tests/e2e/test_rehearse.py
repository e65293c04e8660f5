"""`mqctl sandbox rehearse`, the README's main job, end to end on a real Milvus 2.3.5 with its own etcd."""

from __future__ import annotations

import pytest


@pytest.mark.milvus
def test_rehearse_runs_the_whole_migration_and_shows_it(tmp_path, cli):
    """On the production topology (its own etcd server); the embedded one is migrated by tests/e2e/test_migrate.py.
    With --measure: search, query and insert timed on RocksMQ before and on NATS after, on scratch collections
    the migration never counts."""
    folder = tmp_path / "rehearsal"
    result = cli("sandbox", "rehearse", "--dir", str(folder), "--external-etcd", "--measure", "--wide", timeout=900)
    assert result.code == 0, result.stderr
    assert "etcd: update event logged" in result.stderr  # writes stopped through etcd, not the file
    for step in ("preflight", "stop-writes", "flush", "stop", "switch", "start", "verify", "resume-writes", "backup"):
        assert f"✓ {step}" in result.stderr, step  # live progress, step by step
    assert "mqType=natsmq" in result.stdout and "by-dev-rootcoord-dml_0" in result.stdout
    assert "Rehearsal passed" in result.stdout
    assert "search, query and insert before / after the switch" in result.stdout
    measured = {
        line.split("│")[1].strip(): [cell.strip() for cell in line.split("│")[3:7]]
        for line in result.stdout.splitlines()
        if line.count("│") >= 7 and line.split("│")[1].strip().startswith(("search ", "query ", "insert "))
    }
    assert list(measured) == [
        "search p50",
        "search p99",
        "search mean",
        "query p50",
        "query p99",
        "query mean",
        "insert 64 KB",
    ]
    for metric, (before, after, ratio, _announced) in measured.items():
        assert float(before) > 0 and float(after) > 0, metric  # real timings, both sides
        assert float(ratio) == pytest.approx(float(after) / float(before), rel=0.05, abs=0.01), metric
    assert measured["search mean"][3] == "0.86" and measured["insert 64 KB"][3] == "0.66"  # the announcement's
    assert "measure before" in result.stdout and "measure after" in result.stdout  # in the timings
    status = cli("sandbox", "status", "--dir", str(folder), "--json").json()
    assert status["running"] is False and status["mq"] == "natsmq" and status["etcd_mode"] == "external"
    from mqctl.sandbox.server import Sandbox

    assert Sandbox(folder).etcd_pid() is None  # down stopped the sandbox's etcd too
    assert (folder / "data" / "natsmq" / "jetstream").is_dir()
    journal = cli("migrate", "status", "--sandbox", str(folder), "--json").json()
    assert journal["state"] == "completed" and journal["source_mq"] == "rocksmq" and journal["target_mq"] == "natsmq"
    rows = {s["name"]: {n: c["rows"] for n, c in s["evidence"].get("counts", {}).items()} for s in journal["steps"]}
    assert rows["flush"] == rows["verify"] == {"default/demo_docs": 2700, "default/demo_events": 1080}
