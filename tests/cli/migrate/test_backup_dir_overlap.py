"""--backup-dir and --state-dir inside, equal to or above an MQ data folder are refused before Milvus is asked."""

from __future__ import annotations

import pytest

from tests.helpers.cli import run_cli

COMMANDS = ("--stop-cmd", "true", "--start-cmd", "true", "--log-file", "milvus.log", "--milvus", "http://127.0.0.1:1")


@pytest.mark.parametrize("backup", ["rdb/archive", "rdb_meta_kv", ".", "store/jetstream/x", "link/archive"])
def test_a_backup_dir_overlapping_mq_data_is_a_plan_error(tmp_path, backup):
    (tmp_path / "rdb").mkdir()
    (tmp_path / "store").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "rdb")
    config = tmp_path / "milvus.yaml"
    config.write_text(f"mq:\n  type: rocksmq\nrocksmq:\n  path: {tmp_path / 'rdb'}\n")
    result = run_cli(
        "migrate", "plan", "--config", str(config), "--to", "natsmq", "--store-dir", str(tmp_path / "store"),
        *COMMANDS, "--backup-dir", str(tmp_path / backup), "--milvus-version", "2.3.5", "--json",
    )  # fmt: skip
    findings = {f["code"]: f for f in result.json()["findings"]}
    assert result.code == 3 and "backup-dir-overlaps-data" in findings, result.stdout
    assert "outside" in findings["backup-dir-overlaps-data"]["hint"]


def test_a_backup_dir_elsewhere_is_no_finding(tmp_path):
    (tmp_path / "rdb").mkdir()
    config = tmp_path / "milvus.yaml"
    config.write_text(f"mq:\n  type: rocksmq\nrocksmq:\n  path: {tmp_path / 'rdb'}\n")
    result = run_cli(
        "migrate", "plan", "--config", str(config), "--to", "natsmq", "--store-dir", str(tmp_path / "store"),
        *COMMANDS, "--backup-dir", str(tmp_path / "backups"), "--milvus-version", "2.3.5", "--json",
    )  # fmt: skip
    codes = {f["code"] for f in result.json()["findings"]}
    assert "backup-dir-overlaps-data" not in codes and "milvus-unreachable" in codes


@pytest.mark.parametrize("state", ["rdb", "rdb/journal", "rdb_meta_kv", "store/jetstream", "link/journal"])
def test_a_state_dir_inside_mq_data_is_refused_before_the_journal_is_written(tmp_path, state):
    """Cleanup would delete the journal (and with it resume and rollback), and mqctl would write into Milvus's
    data: refused (exit 2) before anything is created."""
    (tmp_path / "rdb").mkdir()
    (tmp_path / "rdb_meta_kv").mkdir()
    (tmp_path / "store").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "rdb")
    config = tmp_path / "milvus.yaml"
    config.write_text(f"mq:\n  type: rocksmq\nrocksmq:\n  path: {tmp_path / 'rdb'}\n")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    result = run_cli(
        "migrate", "--config", str(config), "--to", "natsmq", "--store-dir", str(tmp_path / "store"),
        *COMMANDS, "--state-dir", str(tmp_path / state), "--milvus-version", "2.3.5", "--yes", "--json",
    )  # fmt: skip
    assert result.code == 2, result.stdout + result.stderr
    error = result.json()["error"]
    assert "journal" in error["message"] and "--state-dir outside" in error["hint"]
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_a_state_dir_beside_the_mq_data_is_accepted(tmp_path):
    (tmp_path / "rdb").mkdir()
    config = tmp_path / "milvus.yaml"
    config.write_text(f"mq:\n  type: rocksmq\nrocksmq:\n  path: {tmp_path / 'rdb'}\n")
    result = run_cli(
        "migrate", "--config", str(config), "--to", "natsmq", "--store-dir", str(tmp_path / "store"),
        *COMMANDS, "--state-dir", str(tmp_path), "--milvus-version", "2.3.5", "--yes", "--json",
    )  # fmt: skip
    assert result.code == 3 and "milvus" in result.stdout.lower()  # on to preflight: Milvus does not answer
    assert (tmp_path / ".mqctl-migrate.json").exists()
