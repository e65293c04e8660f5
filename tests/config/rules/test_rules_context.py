"""Placeholders, unknown versions and misleading files: hand-written cases for every rule (no corpus needed)."""

from __future__ import annotations

import pytest

from mqctl.config.resolve.resolution import resolve
from mqctl.config.rules.report import report, validate
from mqctl.errors import InputError
from tests.helpers.cli import run_cli
from tests.helpers.files import write_yaml as write

CR_HEAD = "apiVersion: milvus.io/v1beta1\nkind: Milvus\nmetadata:\n  name: m\n"


def codes(res) -> dict[str, list]:
    found: dict[str, list] = {}
    for f in validate(res):
        found.setdefault(f.code, []).append(f)
    return found


# ---------------------------------------------------------------------------- ${VAR} placeholders


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


def test_placeholder_in_an_enabling_key_decides_with_its_literal_value(tmp_path):
    path = write(tmp_path, "pulsar:\n  address: ${PULSAR_HOST}\n")
    res = resolve([path])
    assert res.effective_mq == "pulsar" and res.value("pulsar.address") == "${PULSAR_HOST}"
    assert codes(res)["MQ164"][0].key == "pulsar.address"


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


# ---------------------------------------------------------------------------- the version is unknown


def test_natsmq_without_a_version_names_both_answers(tmp_path):
    path = write(tmp_path, "mq:\n  type: natsmq\n")
    found = codes(resolve([path]))["MQ154"][0]
    assert "Milvus 2.3-2.5: natsmq" in found.message
    assert "Milvus 2.6+: does not start (`mq natsmq is not valid`)" in found.message
    assert "--milvus-version" in (found.hint or "")
    assert "MQ154" not in codes(resolve([path], milvus_version="2.5.4"))


def test_woodpecker_without_a_version_names_both_answers(tmp_path):
    path = write(tmp_path, "mq:\n  type: woodpecker\n")
    message = codes(resolve([path]))["MQ154"][0].message
    assert "2.3-2.5: does not start" in message and "2.6+: woodpecker" in message


def test_operator_cr_without_image_depends_on_the_operator_default(tmp_path):
    path = write(tmp_path, CR_HEAD + "spec:\n  mode: standalone\n", "cr.yaml")
    message = codes(resolve([path]))["MQ154"][0].message
    assert "2.3-2.5: rocksmq" in message and "2.6+: woodpecker" in message
    tagged = write(tmp_path, CR_HEAD + "spec:\n  components:\n    image: milvusdb/milvus:v2.5.4\n", "tagged.yaml")
    assert "MQ154" not in codes(resolve([tagged]))


def test_helm_chart_defaults_depend_on_the_version(tmp_path):
    path = write(tmp_path, "cluster:\n  enabled: false\n", "values.yaml")
    message = codes(resolve([path]))["MQ154"][0].message
    assert "rocksmq" in message and "woodpecker" in message


def test_a_verdict_every_version_agrees_on_gets_no_warning(tmp_path):
    path = write(tmp_path, "mq:\n  type: pulsar\npulsar:\n  address: pulsar\n")
    assert "MQ154" not in codes(resolve([path]))


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


# ---------------------------------------------------------------------------- misleading files


def test_a_file_without_mq_settings_says_the_defaults_decide(tmp_path):
    path = write(tmp_path, "minio:\n  address: minio\n")
    found = codes(resolve([path]))["MQ155"][0]
    assert "no MQ settings" in found.message and "code default" in found.message
    overlay = write(tmp_path, "minio:\n  address: minio\n", "user.yaml")
    res = resolve([overlay])
    assert res.effective_mq == "rocksmq" and "stock milvus.yaml" in codes(res)["MQ155"][0].message
    assert "MQ155" not in codes(resolve([write(tmp_path, "mq:\n  type: rocksmq\n", "typed.yaml")]))


def test_a_cr_without_spec(tmp_path):
    path = write(tmp_path, CR_HEAD, "cr.yaml")
    found = codes(resolve([path]))["MQ156"][0]
    assert "no spec" in found.message and found.line == 2
    result = run_cli("config", "validate", str(path), "--json")
    assert result.code == 0 and "MQ156" in [f["code"] for f in result.json()["findings"]]


def test_operator_and_helm_keys_at_the_top_of_a_milvus_yaml(tmp_path):
    path = write(tmp_path, "msgStreamType: kafka\nmessageQueue: pulsar\nrocksmq:\n  path: /data\n")
    res = resolve([path])
    assert res.effective_mq == "rocksmq"  # Milvus ignores both
    found = codes(res)["MQ157"]
    assert [(f.key, f.line) for f in found] == [("msgStreamType", 1), ("messageQueue", 2)]
    assert "mq.type: kafka" in (found[0].hint or "")


def test_placeholder_looking_addresses(tmp_path):
    used = write(tmp_path, "mq:\n  type: kafka\nkafka:\n  brokerList: <kafka_broker>:9094\n")
    found = codes(resolve([used]))["MQ158"][0]
    assert found.severity == "error" and found.key == "kafka.brokerList"
    assert run_cli("config", "validate", str(used)).code == 1
    unused = write(
        tmp_path, "mq:\n  type: rocksmq\nrocksmq:\n  path: /d\npulsar:\n  address: <pulsar-host>\n", "other.yaml"
    )
    assert codes(resolve([unused]))["MQ158"][0].severity == "warning"


def test_woodpecker_with_local_storage_or_without_minio(tmp_path):
    path = write(tmp_path, "mq:\n  type: woodpecker\ncommon:\n  storageType: local\n")
    found = codes(resolve([path], milvus_version="2.6.1"))["MQ159"][0]
    assert "common.storageType is local" in found.message
    local = write(
        tmp_path,
        "mq:\n  type: woodpecker\ncommon:\n  storageType: local\nwoodpecker:\n  storage:\n    type: local\n",
        "local.yaml",
    )
    assert "MQ159" not in codes(resolve([local], milvus_version="2.6.1"))
    values = write(
        tmp_path,
        "cluster:\n  enabled: false\nimage:\n  all:\n    tag: v2.6.2\nminio:\n  enabled: false\n",
        "values.yaml",
    )
    res = resolve([values])
    assert res.effective_mq == "woodpecker"
    assert "minio.enabled is false" in codes(res)["MQ159"][0].message


def test_several_backends_lists_only_those_of_the_version(tmp_path):
    text = "rocksmq:\n  path: /d\npulsar:\n  address: p\nwoodpecker:\n  meta:\n    prefix: w\n"
    path = write(tmp_path, text)
    on_25 = codes(resolve([path], milvus_version="2.5.4"))["MQ121"][0].message
    assert "woodpecker" not in on_25 and "2 backends configured (rocksmq, pulsar)" in on_25
    on_26 = codes(resolve([path], milvus_version="2.6.0"))["MQ121"][0].message
    assert "3 backends configured (rocksmq, pulsar, woodpecker)" in on_26


# ---------------------------------------------------------------------------- Milvus 2.0-2.2


@pytest.mark.parametrize(
    "text, mode, expected",
    [
        ("rocksmq:\n  path: /d\npulsar:\n  address: p\nmq:\n  type: pulsar\n", "standalone", "rocksmq"),
        ("rocksmq:\n  path: /d\npulsar:\n  address: p\n", "cluster", "pulsar"),
        ("kafka:\n  brokerList: k:9092\nnatsmq:\n  server:\n    port: 4222\n", "standalone", "kafka"),
    ],
)
def test_before_2_3_the_mode_and_the_addresses_decide(tmp_path, text, mode, expected):
    path = write(tmp_path, text)
    res = resolve([path], milvus_version="2.2.14", mode=mode)
    assert res.effective_mq == expected
    told = " ".join(res.explanation[4:])  # after the read/mode/version/role steps
    assert "mq.type" not in told and "natsmq" not in told
    if text.startswith("mq:") or "\nmq:" in text or "natsmq" in text:
        assert "MQ162" in codes(res)


def test_before_2_3_a_chart_choice_is_not_a_written_mq_type(tmp_path):
    path = write(tmp_path, "image:\n  all:\n    tag: v2.2.13\nstandalone:\n  messageQueue: rocksmq\n", "values.yaml")
    res = resolve([path])
    assert res.effective_mq == "pulsar" and "MQ162" not in codes(res)  # the chart's default: a cluster with Pulsar


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


def test_report_keeps_the_json_contract(tmp_path):
    path = write(tmp_path, "mq:\n  type: rocksmq\nrocksmq:\n  path: /d\n")
    res = resolve([path])
    fields = set(vars(report(res, validate(res))))
    assert {"effective_mq", "mode", "milvus_version", "findings", "role", "assumptions"} <= fields


# ------------------------------------------------------------------ Operator CRs before 2.3: no mq.type


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
