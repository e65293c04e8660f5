"""Placeholders, unknown versions and misleading files through `mqctl config explain/validate`: the output and
exit codes of the hand-written cases (the findings themselves: tests/config/rules/test_rules_context.py)."""

from __future__ import annotations

import pytest

from mqctl.config.resolve.resolution import resolve
from mqctl.errors import InputError
from tests.helpers.cli import run_cli
from tests.helpers.files import write_yaml as write
from tests.helpers.findings import codes

CR_HEAD = "apiVersion: milvus.io/v1beta1\nkind: Milvus\nmetadata:\n  name: m\n"


def test_placeholder_in_a_key_that_does_not_decide_the_mq_is_a_warning(tmp_path):
    path = write(tmp_path, "minio:\n  accessKeyID: ${MINIO_ACCESS_KEY}\nrocksmq:\n  path: /var/lib/milvus/rdb\n")
    res = resolve([path])
    assert (
        res.effective_mq == "rocksmq" and res.value("minio.accessKeyID") == "${MINIO_ACCESS_KEY}"
    )  # as Milvus reads it
    found = codes(res)
    assert [f.key for f in found["MQ163"]] == ["minio.accessKeyID"] and found["MQ163"][0].severity == "warning"
    assert found["MQ163"][0].line == 2 and "MQ164" not in found
    result = run_cli("config", "validate", str(path), "--json")
    assert result.code == 0, result.stderr  # a warning: the file is readable and Milvus starts rocksmq
    data = result.json()
    assert data["effective_mq"] == "rocksmq"
    assert any(f["code"] == "MQ163" and "${MINIO_ACCESS_KEY}" in f["message"] for f in data["findings"])
    assert run_cli("config", "validate", str(path), "--strict").code == 1


def test_placeholder_in_mq_type_is_used_literally(tmp_path):
    path = write(tmp_path, "mq:\n  type: ${MQ_TYPE}\n")
    res = resolve([path])
    assert res.effective_mq is None and res.panic == "mq type ${MQ_TYPE} is invalid"
    found = codes(res)
    assert "MQ100" in found and found["MQ164"][0].key == "mq.type"
    assert "literal string '${MQ_TYPE}'" in found["MQ164"][0].message
    assert any("Milvus would use the literal string '${MQ_TYPE}'" in line for line in res.explanation)
    explain = run_cli("config", "explain", str(path))
    assert explain.code == 0 and "literal string" in explain.stdout
    assert run_cli("config", "validate", str(path)).code == 1  # MQ100: Milvus panics


def test_secret_placeholder_in_a_deciding_key_shows_only_the_variable(tmp_path):
    path = write(tmp_path, "kafka:\n  brokerList: b:9092\n  saslPassword: ${KAFKA_PASSWORD:-hunter2}\n")
    result = run_cli("config", "explain", str(path), "--json")
    assert result.code == 0 and "hunter2" not in result.stdout + result.stderr
    assert "${KAFKA_PASSWORD:-******}" in result.stdout


def test_placeholder_where_yaml_is_expected_names_the_template(tmp_path):
    path = write(tmp_path, "etcd:\n  endpoints:\n${ETCD_ENDPOINTS_YAML}\nminio:\n  address: m\n")
    with pytest.raises(InputError) as refused:
        resolve([path])
    assert "invalid YAML" in refused.value.message and "line 3 is the placeholder ${ETCD_ENDPOINTS_YAML}" in (
        refused.value.hint or ""
    )
    result = run_cli("config", "validate", str(path))
    assert result.code == 2 and "render it" in result.stderr


def test_assumptions_are_listed_in_json_and_explained_as_steps(tmp_path):
    path = write(tmp_path, "mq:\n  type: rocksmq\nrocksmq:\n  path: /data\n")
    result = run_cli("config", "explain", str(path), "--json")
    assert result.code == 0
    assumed = {a["subject"]: a for a in result.json()["assumptions"]}
    assert set(assumed) == {"mode", "version", "role"}
    assert assumed["mode"]["assumed"] == "standalone" and "--mode cluster" in assumed["mode"]["change"]
    assert "--milvus-version" in assumed["version"]["change"]
    assert assumed["role"]["assumed"].startswith("full") and assumed["role"]["change"] == "--role overlay"
    stated = run_cli(
        "config", "explain", str(path), "--json", "--mode", "standalone", "--milvus-version", "2.4.1", "--role", "full"
    )
    assert stated.json()["assumptions"] == []
    text = run_cli("config", "explain", str(path)).stdout
    for step in ("Mode: standalone (assumed", "Milvus version: unknown", "File role: full (assumed"):
        assert step in text


def test_a_cr_without_spec(tmp_path):
    path = write(tmp_path, CR_HEAD, "cr.yaml")
    found = codes(resolve([path]))["MQ156"][0]
    assert "no spec" in found.message and found.line == 2
    result = run_cli("config", "validate", str(path), "--json")
    assert result.code == 0 and "MQ156" in [f["code"] for f in result.json()["findings"]]


def test_placeholder_looking_addresses(tmp_path):
    used = write(tmp_path, "mq:\n  type: kafka\nkafka:\n  brokerList: <kafka_broker>:9094\n")
    found = codes(resolve([used]))["MQ158"][0]
    assert found.severity == "error" and found.key == "kafka.brokerList"
    assert run_cli("config", "validate", str(used)).code == 1
    unused = write(
        tmp_path, "mq:\n  type: rocksmq\nrocksmq:\n  path: /d\npulsar:\n  address: <pulsar-host>\n", "other.yaml"
    )
    assert codes(resolve([unused]))["MQ158"][0].severity == "warning"


def test_before_2_3_nothing_set_panics_as_2_2_did(tmp_path):
    path = write(tmp_path, "minio:\n  address: m\n")
    res = resolve([path], milvus_version="2.2.0", mode="cluster")
    assert res.panic == "no available remote mq configuration, must config Pulsar or Kafka at least one of these!"
    found = codes(res)["MQ104"][0]
    assert "mq.type" not in found.message and found.key is None
    text = run_cli("config", "explain", str(path), "--milvus-version", "2.2.0").stdout
    assert "chooses by mode and by which address is set" in text and "natsmq" not in text


def test_rules_documents_the_new_codes():
    result = run_cli("config", "rules", "--json")
    listed = {rule["code"] for rule in result.json()["rules"]}
    assert {f"MQ{n}" for n in range(154, 163)} <= listed


def test_pre_2_3_cr_naming_a_later_backend_is_a_finding_not_a_silent_pulsar():
    from tests.helpers.paths import CORPUS, require_corpus

    require_corpus()
    path = CORPUS / "operator-cr" / "13_teochenglim__milvus-ha-operator-crd__milvus-cluster.yaml"
    result = run_cli("config", "explain", str(path), "--milvus-version", "2.2.0", "--json")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["effective_mq"] == "pulsar"  # 2.2 picks by address; msgStreamType woodpecker means nothing
    (step,) = [line for line in report["explanation"] if "msgStreamType: woodpecker" in line]
    assert "Milvus 2.2.0 does not read (mq.type came in 2.3)" in step
    (found,) = [f for f in report["findings"] if f["code"] == "MQ162"]
    assert found["severity"] == "warning" and found["line"] == 17
    assert "has no woodpecker (it came in 2.6.0)" in found["message"] and "starts pulsar" in found["message"]


CR_22 = """\
apiVersion: milvus.io/v1beta1
kind: Milvus
metadata:
  name: old
spec:
  mode: standalone
  dependencies:
    msgStreamType: {stream}
"""


@pytest.mark.parametrize(("stream", "flagged"), [("natsmq", True), ("woodpecker", True), ("rocksmq", False)])
def test_pre_2_3_cr_step_says_mq_type_is_not_read(tmp_path, stream, flagged):
    path = write(tmp_path, CR_22.format(stream=stream), name="cr.yaml")
    result = run_cli("config", "explain", str(path), "--milvus-version", "2.2.16", "--json")
    assert result.code == 0, result.stderr
    report = result.json()
    (step,) = [line for line in report["explanation"] if f"msgStreamType: {stream}" in line]
    assert "which Milvus 2.2.16 does not read" in step
    assert any(f["code"] == "MQ162" for f in report["findings"]) == flagged
    later = run_cli("config", "explain", str(path), "--milvus-version", "2.5.0", "--json").json()
    (step,) = [line for line in later["explanation"] if f"msgStreamType: {stream}" in line]
    assert "does not read" not in step and "MQ162" not in {f["code"] for f in later["findings"]}
