"""The file's role decides the default of a key it leaves out: code default (whole milvus.yaml) or stock file (overlay)."""

from __future__ import annotations

from tests.helpers.files import write_yaml
from tests.helpers.paths import SAMPLES

DEFAULT_ONLY = "mq:\n  type: default\n"


def test_role_is_inferred_from_the_file_name(tmp_path, cli):
    whole = cli("config", "explain", str(write_yaml(tmp_path, DEFAULT_ONLY)), "--json").json()
    assert (whole["role"], whole["effective_mq"], whole["fails"]) == ("full", None, "no available mq config found")
    for name in ("user.yaml", "user-2.5.yaml", "default.yaml"):
        overlay = cli("config", "explain", str(write_yaml(tmp_path, DEFAULT_ONLY, name)), "--json").json()
        assert (overlay["role"], overlay["effective_mq"], overlay["fails"]) == ("overlay", "rocksmq", None), name


def test_role_can_be_forced_and_is_stated(tmp_path, cli):
    path = write_yaml(tmp_path, DEFAULT_ONLY, "user.yaml")
    forced = cli("config", "explain", str(path), "--role", "full", "--json").json()
    assert forced["role"] == "full" and forced["fails"] == "no available mq config found"
    assert any(line.startswith("File role: full (--role") for line in forced["explanation"])
    assert "MQ153" not in {f["code"] for f in forced["findings"]}  # stated, not assumed
    assumed = cli("config", "explain", str(path), "--json").json()
    info = [f for f in assumed["findings"] if f["code"] == "MQ153"]
    assert len(info) == 1 and info[0]["severity"] == "info"
    assert "rocksmq.path = /var/lib/milvus/rdb_data" in info[0]["message"] and "--role full" in info[0]["hint"]
    bad = cli("config", "explain", str(path), "--role", "partial")
    assert bad.code == 2 and "--role" in bad.stderr and "Traceback" not in bad.stderr


def test_get_names_the_default_source(tmp_path, cli):
    whole = cli(
        "config", "get", str(write_yaml(tmp_path, DEFAULT_ONLY)), "rocksmq.path", "--milvus-version", "2.3.5", "--json"
    ).json()
    assert (whole["value"], whole["source"], whole["detail"]) == (None, "default", "code default of Milvus 2.3.5")
    overlay = cli(
        "config", "get", str(write_yaml(tmp_path, DEFAULT_ONLY)), "pulsar.address", "--role", "overlay", "--json"
    ).json()
    assert (overlay["value"], overlay["detail"]) == ("localhost", "stock milvus.yaml")
    text = cli("config", "get", str(write_yaml(tmp_path, DEFAULT_ONLY)), "pulsar.address", "--role", "overlay")
    assert text.code == 0 and "pulsar.address = localhost    [default: stock milvus.yaml]" in text.stdout


def test_samples_keep_their_mq():
    from mqctl.config.resolve.resolution import resolve

    expected = {
        "milvus-2.3-standalone-rocksmq.yaml": "rocksmq",
        "milvus-2.3-standalone-natsmq.yaml": "natsmq",
        "user-2.5-standalone-natsmq.yaml": "natsmq",
        "milvus-cluster-pulsar.yaml": "pulsar",
        "operator-cr-natsmq.yaml": "natsmq",
        "helm-values-natsmq.yaml": "natsmq",
    }
    for name, mq in expected.items():
        assert resolve([SAMPLES / name]).effective_mq == mq, name


def test_a_configmap_is_an_overlay_unless_it_holds_a_milvus_yaml(tmp_path, cli):
    template = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: milvus\ndata:\n  {name}: |\n    mq:\n      type: default\n"
    )
    user = cli(
        "config", "explain", str(write_yaml(tmp_path, template.format(name="user.yaml"), "cm.yaml")), "--json"
    ).json()
    assert (user["kinds"], user["role"], user["effective_mq"]) == (["configmap"], "overlay", "rocksmq")
    whole = cli(
        "config", "explain", str(write_yaml(tmp_path, template.format(name="milvus.yaml"), "cm.yaml")), "--json"
    ).json()
    assert (whole["role"], whole["effective_mq"], whole["fails"]) == ("full", None, "no available mq config found")


def test_kafka_without_brokers_is_tried_and_does_not_work(tmp_path, cli):
    path = write_yaml(tmp_path, "mq:\n  type: kafka\n")
    old = cli("config", "explain", str(path), "--milvus-version", "2.3.5", "--json").json()
    assert (old["effective_mq"], old["attempted_mq"], old["panic"]) == (None, "kafka", None)
    assert old["fails"] == "No `bootstrap.servers` configured"
    assert "MQ105" in {f["code"] for f in old["findings"]}
    text = cli("config", "explain", str(path), "--milvus-version", "2.3.5").stdout
    assert "Milvus would not work (tries kafka): `No `bootstrap.servers` configured`" in text
    # from 2.5 the code default of kafka.brokerList is localhost:9092
    assert cli("config", "explain", str(path), "--milvus-version", "2.5.4", "--json").json()["effective_mq"] == "kafka"
