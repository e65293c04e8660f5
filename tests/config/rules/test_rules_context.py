"""Placeholders, unknown versions and misleading files: hand-written cases for every rule (no corpus needed)."""

from __future__ import annotations

import pytest

from mqctl.config.resolve.resolution import resolve
from mqctl.config.rules.report import report, validate
from tests.helpers.files import write_yaml as write
from tests.helpers.findings import codes

CR_HEAD = "apiVersion: milvus.io/v1beta1\nkind: Milvus\nmetadata:\n  name: m\n"


def test_placeholder_in_an_enabling_key_decides_with_its_literal_value(tmp_path):
    path = write(tmp_path, "pulsar:\n  address: ${PULSAR_HOST}\n")
    res = resolve([path])
    assert res.effective_mq == "pulsar" and res.value("pulsar.address") == "${PULSAR_HOST}"
    assert codes(res)["MQ164"][0].key == "pulsar.address"


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


def test_a_file_without_mq_settings_says_the_defaults_decide(tmp_path):
    path = write(tmp_path, "minio:\n  address: minio\n")
    found = codes(resolve([path]))["MQ155"][0]
    assert "no MQ settings" in found.message and "code default" in found.message
    overlay = write(tmp_path, "minio:\n  address: minio\n", "user.yaml")
    res = resolve([overlay])
    assert res.effective_mq == "rocksmq" and "stock milvus.yaml" in codes(res)["MQ155"][0].message
    assert "MQ155" not in codes(resolve([write(tmp_path, "mq:\n  type: rocksmq\n", "typed.yaml")]))


def test_operator_and_helm_keys_at_the_top_of_a_milvus_yaml(tmp_path):
    path = write(tmp_path, "msgStreamType: kafka\nmessageQueue: pulsar\nrocksmq:\n  path: /data\n")
    res = resolve([path])
    assert res.effective_mq == "rocksmq"  # Milvus ignores both
    found = codes(res)["MQ157"]
    assert [(f.key, f.line) for f in found] == [("msgStreamType", 1), ("messageQueue", 2)]
    assert "mq.type: kafka" in (found[0].hint or "")


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


def test_report_keeps_the_json_contract(tmp_path):
    path = write(tmp_path, "mq:\n  type: rocksmq\nrocksmq:\n  path: /d\n")
    res = resolve([path])
    fields = set(vars(report(res, validate(res))))
    assert {"effective_mq", "mode", "milvus_version", "findings", "role", "assumptions"} <= fields
