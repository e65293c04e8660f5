"""`mqctl sandbox`: refusals without Milvus, and the README's main job (`rehearse`) end to end."""

from __future__ import annotations

import pytest


def test_status_of_a_folder_that_is_not_a_sandbox(tmp_path, cli):
    result = cli("sandbox", "status", "--dir", str(tmp_path))
    assert result.code == 3
    assert "is not a sandbox" in result.stderr and "mqctl sandbox up --dir" in result.stderr


def test_up_refuses_a_non_empty_foreign_folder_and_an_unknown_mq(tmp_path, cli):
    (tmp_path / "notes.txt").write_text("mine")
    result = cli("sandbox", "up", "--dir", str(tmp_path))
    assert result.code == 2 and "is not a sandbox" in result.stderr
    result = cli("sandbox", "up", "--dir", str(tmp_path / "new"), "--mq", "pulsar")
    assert result.code == 2 and "rocksmq or natsmq" in result.stderr
    assert not (tmp_path / "new").exists()


@pytest.mark.milvus
def test_rehearse_runs_the_whole_migration_and_shows_it(tmp_path, cli):
    folder = tmp_path / "rehearsal"
    result = cli("sandbox", "rehearse", "--dir", str(folder), timeout=600)
    assert result.code == 0, result.stderr
    for step in ("preflight", "stop-writes", "flush", "stop", "switch", "start", "verify", "resume-writes", "backup"):
        assert f"✓ {step}" in result.stderr, step  # live progress, step by step
    assert "mqType=natsmq" in result.stdout and "by-dev-rootcoord-dml_0" in result.stdout
    assert "Rehearsal passed" in result.stdout
    status = cli("sandbox", "status", "--dir", str(folder), "--json").json()
    assert status["running"] is False and status["mq"] == "natsmq"
    assert (folder / "data" / "natsmq" / "jetstream").is_dir()
    journal = cli("migrate", "status", "--sandbox", str(folder), "--json").json()
    assert journal["state"] == "completed" and journal["source_mq"] == "rocksmq" and journal["target_mq"] == "natsmq"
    rows = {s["name"]: {n: c["rows"] for n, c in s["evidence"].get("counts", {}).items()} for s in journal["steps"]}
    assert rows["flush"] == rows["verify"] == {"default/demo_docs": 2700, "default/demo_events": 1080}
