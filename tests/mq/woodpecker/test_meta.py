"""Woodpecker's etcd meta under the legacy top-level `woodpecker/` prefix, which wins over
`<rootPath>/<woodpecker.meta.prefix>` as in Woodpecker's detectEffectiveMetadataPrefix. Its own etcd: the legacy
prefix is global to an etcd. Values from tests/helpers/streaming_meta.py (field numbers, not mqctl's decoder)."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.helpers import streaming_meta as enc
from tests.helpers.cli import run_cli

NOW = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.timezone.utc)
T = NOW.timestamp()
PCHANNEL = "by-dev-rootcoord-dml_0"


@pytest.fixture(scope="module")
def legacy(etcd_url):
    put = enc.put
    put(etcd_url, "by-dev/config/mqtype", "woodpecker")
    put(
        etcd_url,
        f"by-dev/meta/streamingcoord-meta/pchannel/{PCHANNEL}",
        enc.pchannel_meta(PCHANNEL, 1, 3, "10.1.0.3:22222"),
    )
    put(
        etcd_url,
        f"by-dev/meta/streamingnode-meta/wal/{PCHANNEL}/consume-checkpoint",
        enc.wal_checkpoint(enc.wp_message_id(3, 0), enc.tso(T - 5)),
    )
    put(etcd_url, f"woodpecker/logs/{PCHANNEL}", enc.log_meta(5, int(T - 3600), 2, 10))
    real = ("10.1.0.7:18080", "10.1.0.8:18080")
    for seg in (0, 1):
        put(
            etcd_url,
            f"woodpecker/logs/{PCHANNEL}/segments/{seg}",
            enc.segment_meta(seg, state=4, created_ms=int((T - 3000) * 1000), last_entry=9, nodes=real),
        )
    put(
        etcd_url,
        f"woodpecker/logs/{PCHANNEL}/segments/2",
        enc.segment_meta(
            2,
            state=3,
            created_ms=int((T - 900) * 1000),
            sealed_ms=int((T - 600) * 1000),
            last_entry=10,
            quorum_id=-1,
            nodes=("127.0.0.1:59456",),
        ),
    )
    put(
        etcd_url,
        f"woodpecker/logs/{PCHANNEL}/segments/3",
        enc.segment_meta(3, state=0, created_ms=int((T - 600) * 1000), nodes=real),
    )
    put(etcd_url, "woodpecker/logidgen", "5")
    # a stale copy under the configured prefix: Woodpecker ignores it while legacy keys exist
    put(etcd_url, f"by-dev/woodpecker/logs/{PCHANNEL}", enc.log_meta(99, int(T - 60)))
    return etcd_url


def test_legacy_prefix_wins(legacy):
    from mqctl.config.resolve.sources import EtcdConfig
    from mqctl.mq.woodpecker.meta import read_woodpecker_meta

    meta = read_woodpecker_meta(EtcdConfig(legacy, "by-dev"))
    assert meta.prefix == "woodpecker"
    assert meta.prefixes_with_logs == ["woodpecker", "by-dev/woodpecker"]
    log = meta.logs[PCHANNEL]
    assert (log.id, log.truncated_segment, log.truncated_entry) == (5, 2, 10)
    assert [s.id for s in log.segments] == [0, 1, 2, 3]
    assert [s.state for s in log.segments] == ["truncated", "truncated", "sealed", "active"]
    assert log.segments[0].quorum_nodes == ["10.1.0.7:18080", "10.1.0.8:18080"]
    assert log.segments[2].embedded_quorum and not log.segments[3].embedded_quorum
    assert log.last_entry == (2, 10)
    assert log.created == dt.datetime.fromtimestamp(int(T - 3600), dt.timezone.utc)


def test_a_placeholder_quorum_next_to_real_ones_is_flagged_through_the_cli(legacy):
    result = run_cli("channels", "checkpoints", "--etcd", legacy, "--json", env={"MQCTL_NOW": NOW.isoformat()})
    assert result.code == 1, result.stderr + result.stdout
    report = result.json()
    assert report["woodpecker_prefix"] == "woodpecker"
    row = report["pchannels"][0]
    assert (row["pchannel"], row["log_id"], row["truncated_to"], row["checkpoint"]) == (PCHANNEL, 5, "2/10", "3/0")
    assert row["untruncated_before_checkpoint"] == 0  # segment 2 is the truncation point itself
    findings = [f for f in report["findings"] if f["severity"] != "info"]
    assert [f["code"] for f in findings] == ["CP112"]
    assert "3 other segment(s) of this log name a real quorum" in findings[0]["message"]


@pytest.mark.parametrize(
    ("address", "loopback"),
    [("127.0.0.1:59456", True), ("localhost:1", True), ("[::1]:80", True), ("10.0.0.1:80", False), ("wp-0:1", False)],
)
def test_loopback_addresses(address, loopback):
    from mqctl.mq.woodpecker.meta import is_loopback

    assert is_loopback(address) is loopback
