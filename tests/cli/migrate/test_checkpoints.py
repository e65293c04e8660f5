"""`mqctl migrate plan` shows every vchannel's channel checkpoint from a real etcd, and an etcd it cannot read is a
finding (the checkpoints against the FlushAll timestamp: tests/migrate/test_checkpoints.py)."""

from __future__ import annotations

import pytest

from tests.helpers.milvus_meta import write_collection_checkpoints

# --- channel checkpoints against the FlushAll timestamp (a real etcd with hand-encoded Milvus meta) ---------
FLUSH_TS = 463_000_000_000_000_000


@pytest.mark.etcd
def test_migrate_plan_shows_the_checkpoints_and_an_unreadable_etcd_is_a_finding(etcd_url, tmp_path, cli):
    from tests.helpers.servers import free_port

    write_collection_checkpoints(etcd_url, "plan", {"by-dev-rootcoord-dml_0_9v0": FLUSH_TS})
    config = tmp_path / "milvus.yaml"
    config.write_text("mq:\n  type: rocksmq\n")
    args = ["migrate", "plan", "--config", str(config), "--to", "natsmq", "--milvus", f"http://127.0.0.1:{free_port()}"]
    planned = cli(*args, "--etcd", etcd_url, "--etcd-root", "plan", "--json")
    assert planned.code == 3, planned.stderr  # refused (no Milvus answers), and still shows the checkpoints
    [row] = planned.json()["checkpoints"]
    assert (row["vchannel"], row["collection"], row["ts"], row["position"]) == (
        "by-dev-rootcoord-dml_0_9v0",
        "default/c",
        FLUSH_TS,
        40,
    )
    human = cli(*args, "--etcd", etcd_url, "--etcd-root", "plan", env={"COLUMNS": "200"})
    assert "channel checkpoints now" in human.stdout and "by-dev-rootcoord-dml_0_9v0" in human.stdout
    config.write_text(f"mq:\n  type: rocksmq\netcd:\n  endpoints: 127.0.0.1:{free_port()}\n")  # no etcd there
    unread = cli(*args, "--json")
    assert "Traceback" not in unread.stderr and unread.json()["checkpoints"] == []
    assert any(f["code"] == "checkpoints-unread" for f in unread.json()["findings"])
