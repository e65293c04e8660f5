"""The sandbox's milvus.yaml as mqctl finishes it: ports, store and etcd moved into the sandbox folder."""

from __future__ import annotations

from mqctl.sandbox.config import CONFIG_REL, ETCD_CONFIG_REL, NATS_STORE_REL, _finish_config

TEMPLATE = """etcd:
  endpoints: localhost:2379
  use:
    embed: true # embedded etcd
natsmq:
  server:
    port: 4222 # 4222 by default, Port for nats server listening.
    storeDir: /var/lib/milvus/nats # /var/lib/milvus/nats by default, directory to use for JetStream storage of nats.
    monitor:
      logFile: /tmp/milvus/logs/nats.log # log file path
mq:
  type: default
common:
  session:
    ttl: 30
quotaAndLimits:
  quotaCenterCollectInterval: 3
"""


def test_a_long_folder_stays_on_its_keys_line(tmp_path):
    """A sandbox deep in a test runner's temporary folders: every path it writes stays on the line of its key (a
    folded value is valid YAML, but line-based edits and grep then see a key without its value)."""
    directory = tmp_path / ("deep-" * 20) / "sandbox"
    (directory / "configs").mkdir(parents=True)
    (directory / CONFIG_REL).write_text(TEMPLATE)
    ports = {"etcd_port": 41000, "natsmq_port": 42000}
    _finish_config(directory, ports, "natsmq", external_etcd=True)
    lines = (directory / CONFIG_REL).read_text().splitlines()
    store = str(directory / NATS_STORE_REL)
    assert len(f"    storeDir: {store}") > 120  # past any line width a YAML writer folds at
    assert any(line.startswith(f"    storeDir: {store} #") for line in lines), lines
    assert f"    path: {directory / ETCD_CONFIG_REL}" in lines
    assert f"      logFile: {directory / 'logs' / 'nats.log'} # log file path" in lines
    assert "  endpoints: 127.0.0.1:41000" in lines and "  type: natsmq" in lines


def test_a_sandbox_on_kafka_names_its_broker_in_a_kafka_section(tmp_path):
    """The package's template has only a commented `kafka:` example: the sandbox writes the section."""
    (tmp_path / "configs").mkdir()
    (tmp_path / CONFIG_REL).write_text(TEMPLATE)
    _finish_config(tmp_path, {"etcd_port": 41000, "natsmq_port": 42000}, "kafka", False, "127.0.0.1:49092")
    lines = (tmp_path / CONFIG_REL).read_text().splitlines()
    assert "  type: kafka" in lines and lines[lines.index("kafka:") + 1] == "  brokerList: 127.0.0.1:49092"
