"""`migrate plan` on 2.6 with --etcd reads the Streaming Service state for its AlterWAL preconditions: a switch
left mid-way refuses the plan, a clean state adds nothing. etcd values from encoder.py (field numbers)."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.helpers import streaming_meta as enc
from tests.helpers.cli import run_cli
from tests.helpers.files import write_yaml

T = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.timezone.utc).timestamp()
YAML = """\
etcd:
  rootPath: {root}
mq:
  type: rocksmq
rocksmq:
  path: /var/lib/milvus/rdb_data
"""


@pytest.fixture(scope="module")
def seeded(etcd_url):
    for root, alter in (("midway26", (enc.WOODPECKER, enc.tso(T - 30), 1, {})), ("clean26", None)):
        pchannel = f"{root}-rootcoord-dml_0"
        enc.put(etcd_url, f"{root}/config/mqtype", "rocksmq")
        enc.put(
            etcd_url,
            f"{root}/meta/streamingcoord-meta/pchannel/{pchannel}",
            enc.pchannel_meta(pchannel, 1, 1, "10.0.0.9:22222"),
        )
        enc.put(
            etcd_url,
            f"{root}/meta/streamingnode-meta/wal/{pchannel}/consume-checkpoint",
            enc.wal_checkpoint(enc.rmq_message_id(99), enc.tso(T - 10), alter=alter),
        )
        enc.put(
            etcd_url,
            f"{root}/meta/datacoord-meta/channel-cp/{pchannel}_5v0",
            enc.msg_position(f"{pchannel}_5v0", enc.ROCKSMQ, (98).to_bytes(8, "little"), enc.tso(T - 60)),
        )
    return etcd_url


def _plan(tmp_path, etcd_url: str, root: str):
    config = write_yaml(tmp_path, YAML.format(root=root), f"{root}.yaml")
    return run_cli(
        "migrate",
        "plan",
        "--config",
        str(config),
        "--to",
        "woodpecker",
        "--milvus",
        "http://127.0.0.1:19530",
        "--milvus-version",
        "2.6.17",
        "--etcd",
        etcd_url,
        "--json",
    )


def test_a_switch_left_midway_refuses_the_next(seeded, tmp_path):
    result = _plan(tmp_path, seeded, "midway26")
    assert result.code == 3, result.stderr + result.stdout
    plan = result.json()
    assert plan["refused"] is True
    (finding,) = [f for f in plan["findings"] if f["code"] == "alter-wal-in-progress"]
    assert finding["level"] == "error" and "midway26-rootcoord-dml_0" in finding["message"]
    assert "flushing" in finding["message"]


def test_a_clean_wal_state_adds_no_finding(seeded, tmp_path):
    result = _plan(tmp_path, seeded, "clean26")
    codes = {f["code"] for f in result.json()["findings"]}
    assert "pinned" in codes  # the plan did read this etcd
    assert not codes & {"alter-wal-in-progress", "wal-name-mismatch", "loopback-quorum", "truncation-behind"}
