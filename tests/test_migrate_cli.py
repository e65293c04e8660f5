"""`mqctl migrate` refusals that need no Milvus: exit 3, one clear line, nothing changed."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import SAMPLES

COMMANDS = ("--stop-cmd", "true", "--start-cmd", "true", "--log-file", "milvus.log")


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "milvus.yaml"
    shutil.copy(SAMPLES / "milvus-2.3-standalone-rocksmq.yaml", path)
    return path


def test_refuses_natsmq_on_milvus_2_6(config, cli):
    before = config.read_text()
    result = cli("migrate", "--config", str(config), "--to", "natsmq", "--milvus", "http://127.0.0.1:1",
                 "--milvus-version", "2.6.0", *COMMANDS, "--yes")
    assert result.code == 3
    assert "natsmq was removed in Milvus 2.6" in result.stderr and "Traceback" not in result.stderr
    assert config.read_text() == before


def test_refuses_unreachable_milvus(config, cli):
    result = cli("migrate", "--config", str(config), "--to", "natsmq", "--milvus", "http://127.0.0.1:1", *COMMANDS, "--yes")
    assert result.code == 3
    assert "step preflight failed" in result.stderr and "not reachable" in result.stderr
    assert "nothing was changed" in result.stderr
    status = cli("migrate", "status", "--config", str(config), "--json")
    assert status.code == 0 and status.json()["steps"][0]["status"] == "failed"


def test_plan_lists_every_step_and_the_refusal(config, cli):
    result = cli("migrate", "plan", "--config", str(config), "--to", "natsmq", "--milvus", "http://127.0.0.1:1",
                 "--milvus-version", "2.6.0", "--json")
    assert result.code == 3
    plan = result.json()
    assert [s["name"] for s in plan["steps"]] == ["preflight", "stop-writes", "flush", "stop", "switch", "start",
                                                  "verify", "resume-writes", "backup"]
    assert [f["code"] for f in plan["findings"]] == ["target-unsupported"]
    assert plan["source_mq"] == "rocksmq" and plan["milvus_version"] == "2.6.0"


def test_json_run_needs_yes_and_status_needs_a_journal(config, cli):
    result = cli("migrate", "--config", str(config), "--to", "natsmq", "--milvus", "http://127.0.0.1:1", "--json")
    assert result.code == 2 and "--yes" in result.stderr
    result = cli("migrate", "status", "--config", str(config))
    assert result.code == 3 and "no migration journal" in result.stderr
