"""Woodpecker's etcd meta under the legacy top-level `woodpecker/` prefix, which wins over
`<rootPath>/<woodpecker.meta.prefix>` as in Woodpecker's detectEffectiveMetadataPrefix. Its own etcd: the legacy
prefix is global to an etcd. Values from tests/helpers/streaming_meta.py (field numbers, not mqctl's decoder)."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.helpers import streaming_meta as enc

NOW, PCHANNEL = enc.LEGACY_NOW, enc.LEGACY_PCHANNEL
T = NOW.timestamp()


def test_legacy_prefix_wins(legacy_woodpecker):
    from mqctl.config.resolve.sources import EtcdConfig
    from mqctl.mq.woodpecker.meta import read_woodpecker_meta

    meta = read_woodpecker_meta(EtcdConfig(legacy_woodpecker, "by-dev"))
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


@pytest.mark.parametrize(
    ("address", "loopback"),
    [("127.0.0.1:59456", True), ("localhost:1", True), ("[::1]:80", True), ("10.0.0.1:80", False), ("wp-0:1", False)],
)
def test_loopback_addresses(address, loopback):
    from mqctl.mq.woodpecker.meta import is_loopback

    assert is_loopback(address) is loopback
