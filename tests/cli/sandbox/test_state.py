"""`mqctl sandbox` without Milvus: folders that are not sandboxes, damaged state files, refused options."""

from __future__ import annotations

import pytest


def test_status_of_a_folder_that_is_not_a_sandbox(tmp_path, cli):
    result = cli("sandbox", "status", "--dir", str(tmp_path))
    assert result.code == 3
    assert "is not a sandbox" in result.stderr and "mqctl sandbox up --dir" in result.stderr


def test_up_refuses_a_non_empty_foreign_folder_and_an_unknown_mq(tmp_path, cli):
    (tmp_path / "notes.txt").write_text("mine")
    result = cli("sandbox", "up", "--dir", str(tmp_path))
    assert result.code == 2 and "is not a sandbox" in result.stderr
    result = cli("sandbox", "up", "--dir", str(tmp_path / "new"), "--mq", "pulsar")
    assert result.code == 2 and "rocksmq, natsmq or kafka" in result.stderr
    assert not (tmp_path / "new").exists()


def test_up_on_kafka_refuses_a_stray_or_malformed_bootstrap(tmp_path, cli):
    result = cli("sandbox", "up", "--dir", str(tmp_path / "new"), "--kafka", "127.0.0.1:9092")
    assert result.code == 2 and "--kafka names the broker of a sandbox on Kafka" in result.stderr
    result = cli("sandbox", "up", "--dir", str(tmp_path / "new"), "--mq", "kafka", "--kafka", "no-port")
    assert result.code == 2 and "'no-port' is not a broker address" in result.stderr
    assert not (tmp_path / "new").exists()


def test_up_on_a_silent_kafka_says_so_before_creating_anything(tmp_path, cli, monkeypatch):
    from mqctl.host.ports import free_ports
    from mqctl.sandbox import server

    monkeypatch.setattr(server, "KAFKA_ANSWER_SECONDS", 1.0)
    silent = f"127.0.0.1:{free_ports(1)[0]}"  # nothing listens there
    result = cli("sandbox", "up", "--dir", str(tmp_path / "new"), "--mq", "kafka", "--kafka", silent)
    assert result.code == 3 and f"--kafka {silent}: no Kafka broker answers within 1 s" in result.stderr
    assert not (tmp_path / "new").exists()


def test_up_on_its_own_kafka_says_what_is_missing_before_creating_anything(tmp_path, cli):
    """No Java runtime: one line and exit 3; Java but neither Maven nor the cached jars: the same for Maven."""
    import shutil

    empty = tmp_path / "bin"
    empty.mkdir()
    result = cli("sandbox", "up", "--dir", str(tmp_path / "new"), "--mq", "kafka", env={"PATH": str(empty)})
    assert result.code == 3 and "no Java runtime for the Kafka" in result.stderr, result.stderr
    assert "--kafka HOST:PORT" in result.stderr
    java = shutil.which("java")
    if java is not None:
        (empty / "java").symlink_to(java)
        home = tmp_path / "home"  # no ~/.cache/mqctl/kafka-*/complete there
        env = {"PATH": str(empty), "HOME": str(home)}
        result = cli("sandbox", "up", "--dir", str(tmp_path / "new"), "--mq", "kafka", env=env)
        assert result.code == 3 and "Maven (mvn) is needed once" in result.stderr, result.stderr
        assert "apt-get install maven" in result.stderr and not home.exists()
    assert not (tmp_path / "new").exists()


def _sandbox_folder(tmp_path, embed: bool):
    """A sandbox folder (its state file and config) whose Milvus is not running."""
    import json
    import shutil

    from tests.helpers.paths import SAMPLES

    (tmp_path / "configs").mkdir(parents=True)
    config = tmp_path / "configs" / "milvus.yaml"
    shutil.copy(SAMPLES / "milvus-2.3-standalone-rocksmq.yaml", config)
    text = config.read_text().replace("endpoints: localhost:2379", "endpoints: 10.0.0.7:23790")
    config.write_text(text.replace("embed: false", f"embed: {str(embed).lower()}"))
    ports = {"proxy_port": 1, "etcd_port": 2, "etcd_peer_port": 3, "metrics_port": 4}
    (tmp_path / "sandbox.json").write_text(json.dumps({"ports": ports}))
    return tmp_path


def test_status_reports_the_etcd_the_config_points_milvus_at(tmp_path, cli):
    external = cli("sandbox", "status", "--dir", str(_sandbox_folder(tmp_path / "a", embed=False)), "--json").json()
    assert external["etcd"] == "http://10.0.0.7:23790" and external["running"] is False
    embedded = cli("sandbox", "status", "--dir", str(_sandbox_folder(tmp_path / "b", embed=True)), "--json").json()
    assert embedded["etcd"] == "http://127.0.0.1:2"  # the embedded etcd listens where the sandbox put it
    assert embedded["etcd_mode"] == "embedded" and "--keep-etcd" not in embedded["stop_cmd"]


BAD_STATES = {
    "no proxy port": ({"ports": {}, "etcd": "embedded"}, "ports.proxy_port"),
    "a port as text": ({"ports": {"proxy_port": "abc"}}, "ports.proxy_port"),
    "a port out of range": (
        {"ports": {"proxy_port": 1, "metrics_port": 2, "etcd_port": 3, "etcd_peer_port": 70000}},
        "ports.etcd_peer_port",
    ),
    "an extra port as text": (
        {"ports": {"proxy_port": 1, "metrics_port": 2, "etcd_port": 3, "etcd_peer_port": 4, "natsmq_port": "x"}},
        "ports.natsmq_port",
    ),
    "an unknown etcd mode": (
        {"ports": {"proxy_port": 1, "metrics_port": 2, "etcd_port": 3, "etcd_peer_port": 4}, "etcd": "cloud"},
        "etcd",
    ),
}


@pytest.mark.parametrize("damage", BAD_STATES)
def test_a_damaged_state_file_is_one_line_naming_the_key(tmp_path, cli, damage):
    """These once ended in `internal error` (KeyError 'proxy_port', TypeError in the port check)."""
    import json

    state, key = BAD_STATES[damage]
    folder = _sandbox_folder(tmp_path / "sb", embed=True)
    (folder / "sandbox.json").write_text(json.dumps(state))
    for command in (
        ("sandbox", "status", "--dir", str(folder)),
        ("sandbox", "down", "--dir", str(folder)),
        ("migrate", "status", "--sandbox", str(folder)),
    ):
        result = cli(*command)
        assert result.code == 3, (damage, command, result.stderr)
        assert f"sandbox.json: {key} " in result.stderr and "internal error" not in result.stderr


def test_external_etcd_only_applies_to_a_new_sandbox(tmp_path, cli):
    folder = _sandbox_folder(tmp_path, embed=True)  # created with Milvus's embedded etcd
    result = cli("sandbox", "up", "--dir", str(folder), "--external-etcd")
    assert result.code == 2 and "embedded etcd" in result.stderr and "new --dir" in result.stderr
