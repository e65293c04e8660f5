"""--backup-dir inside, equal to or above an MQ data folder is refused at preflight, before Milvus is asked."""

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
