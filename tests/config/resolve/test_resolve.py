"""Resolution of the MQ Milvus starts: Milvus's priority rules per version and mode, provenance, kinds."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqctl.config.resolve.resolution import PANIC_NOTHING, PANIC_STANDALONE_ONLY, resolve
from mqctl.errors import InputError
from tests.helpers.files import write_yaml as write
from tests.helpers.paths import CORPUS, SAMPLES, require_corpus


def test_stock_23_standalone_defaults_to_rocksmq_with_provenance():
    res = resolve([SAMPLES / "milvus-2.3-standalone-rocksmq.yaml"], milvus_version="2.3.5")
    assert (res.effective_mq, res.mode, res.milvus_version) == ("rocksmq", "standalone", "2.3.5")
    origin = res.origin("rocksmq.path")
    assert (origin.source, origin.line, origin.value) == ("yaml", 66, "/var/lib/milvus/rdb_data")
    assert res.origin("mq.type").line == 43
    assert any("natsmq never takes part" in line for line in res.explanation)
    assert any("Mode: standalone (assumed" in line for line in res.explanation)


def test_unset_keys_fall_back_to_milvus_defaults():
    res = resolve([SAMPLES / "milvus-cluster-pulsar.yaml"])
    assert res.value("natsmq.server.storeDir") == "/var/lib/milvus/nats"
    assert res.value("natsmq.server.port") == "4222"
    assert res.value("rocksmq.retentionTimeInMinutes") == "4320"
    assert res.value("natsmq.server.retention.maxAge") == "4320"
    assert res.value("quotaAndLimits.enabled") == "false"
    assert res.origin("natsmq.server.port").source == "default"
    assert res.value("etcd.rootPath") == "by-dev"
    assert res.origin("etcd.rootPath").line == 5


def test_natsmq_never_chosen_by_default(tmp_path):
    path = write(
        tmp_path,
        """\
        mq:
          type: default
        rocksmq:
          path: ""
        natsmq:
          server:
            storeDir: /data/nats
        pulsar:
          address: ""
        kafka:
          brokerList: broker:9092
        """,
    )
    res = resolve([path], milvus_version="2.5.4")
    assert res.effective_mq == "kafka"


def test_nothing_enabled_panics(tmp_path):
    path = write(
        tmp_path,
        """\
        rocksmq:
          path:
        pulsar:
          address: ''
        """,
    )
    res = resolve([path], milvus_version="2.3.5")  # kafka.brokerList defaults to empty before 2.5
    assert res.effective_mq is None and res.panic == PANIC_NOTHING
    assert resolve([path], milvus_version="2.5.0").effective_mq == "kafka"  # localhost:9092 from 2.5


def test_cluster_order_and_standalone_only_types(tmp_path):
    stock = SAMPLES / "milvus-2.3-standalone-rocksmq.yaml"
    assert resolve([stock], mode="cluster").effective_mq == "pulsar"
    natsmq = resolve([SAMPLES / "milvus-2.3-standalone-natsmq.yaml"], mode="cluster")
    assert natsmq.effective_mq is None and natsmq.panic == PANIC_STANDALONE_ONLY


def test_version_rules_natsmq_and_woodpecker():
    natsmq = SAMPLES / "user-2.5-standalone-natsmq.yaml"
    assert resolve([natsmq], milvus_version="2.5.4").effective_mq == "natsmq"
    removed = resolve([natsmq], milvus_version="2.6.0")
    assert removed.effective_mq is None and removed.panic == "mq natsmq is not valid"  # the WAL selector first


def test_woodpecker_last_in_26_default(tmp_path):
    path = write(
        tmp_path,
        """\
        rocksmq:
          path: ""
        pulsar:
          address: ""
        kafka:
          brokerList: ""
        """,
    )
    assert resolve([path], milvus_version="2.6.1", mode="cluster").effective_mq == "woodpecker"
    assert resolve([path], milvus_version="2.5.1", mode="cluster").panic == PANIC_NOTHING


def test_merge_order_later_wins_and_23_reads_milvus_yaml_only(tmp_path):
    base = SAMPLES / "milvus-2.3-standalone-rocksmq.yaml"
    user = SAMPLES / "user-2.5-standalone-natsmq.yaml"
    merged = resolve([base, user], milvus_version="2.5.0")
    assert merged.effective_mq == "natsmq"
    assert merged.origin("mq.type").file == str(user)
    old = resolve([base, user], milvus_version="2.3.5")
    assert old.effective_mq == "rocksmq"
    assert any("reads milvus.yaml only" in line for line in old.explanation)


def test_env_overrides_yaml_only_when_asked():
    user = SAMPLES / "user-2.5-standalone-natsmq.yaml"
    env = {"MQ_TYPE": "rocksmq", "NATSMQ_SERVER_PORT": "5222", "HOME": "/root"}
    assert resolve([user]).effective_mq == "natsmq"
    res = resolve([user], env=env)
    assert res.effective_mq == "rocksmq"
    assert res.origin("natsmq.server.port").source == "env"
    assert res.value("natsmq.server.port") == "5222"
    assert res.origin("mq.type").detail == "MQ_TYPE"


def test_operator_cr_reads_stream_type_version_and_spec_config():
    res = resolve([SAMPLES / "operator-cr-natsmq.yaml"])
    assert (res.effective_mq, res.mode, res.milvus_version) == ("natsmq", "standalone", "2.5.4")
    assert res.origin("mq.type").detail == "spec.dependencies.msgStreamType"
    assert res.value("natsmq.server.port") == "4222"
    assert res.origin("natsmq.server.port").line == 27


def test_operator_empty_stream_type_uses_operator_default(tmp_path):
    path = write(
        tmp_path,
        """\
        apiVersion: milvus.io/v1alpha1
        kind: MilvusCluster
        metadata:
          name: demo
        spec:
          dependencies:
            pulsar:
              external: true
              endpoint: pulsar-proxy:6650
        """,
        "cr.yaml",
    )
    res = resolve([path])
    assert (res.mode, res.effective_mq) == ("cluster", "pulsar")
    assert res.value("pulsar.address") == "pulsar-proxy:6650"


def test_helm_values_natsmq_and_chart_defaults(tmp_path):
    res = resolve([SAMPLES / "helm-values-natsmq.yaml"])
    assert (res.effective_mq, res.mode, res.milvus_version) == ("natsmq", "standalone", "2.4.15")
    assert res.origin("natsmq.server.storeDir").line == 30  # inside extraConfigFiles.user.yaml
    bare = write(tmp_path, "image:\n  all:\n    tag: v2.4.5\n", "values.yaml")
    assert resolve([bare]).mode == "cluster"  # the chart's default
    assert resolve([bare]).effective_mq == "pulsar"


def test_kind_detection_and_forcing(tmp_path):
    path = write(tmp_path, "cluster:\n  enabled: false\n")
    assert resolve([path]).kinds == ["helm-values"]
    assert resolve([path], kind="milvus-yaml").kinds == ["milvus-yaml"]
    with pytest.raises(InputError, match="unknown --kind"):
        resolve([path], kind="chart")


def test_crlf_bom_four_spaces_and_multi_document(tmp_path):
    path = tmp_path / "milvus.yaml"
    path.write_bytes(
        b"\xef\xbb\xbf---\r\nmq:\r\n    type: natsmq\r\nnatsmq:\r\n    server:\r\n        storeDir: /srv/nats\r\n"
    )
    res = resolve([path])
    assert res.effective_mq == "natsmq"
    assert res.origin("natsmq.server.storeDir").line == 6
    multi = write(
        tmp_path,
        """\
        apiVersion: v1
        kind: Secret
        metadata:
          name: creds
        ---
        apiVersion: milvus.io/v1beta1
        kind: Milvus
        metadata:
          name: m
        spec:
          dependencies:
            msgStreamType: kafka
        """,
        "multi.yaml",
    )
    assert resolve([multi]).effective_mq == "kafka"


@pytest.mark.parametrize(
    "text, message, location",
    [
        ("mq:\n  type: {{ .Values.mq }}\n", "unrendered template placeholder {{ .Values.mq }}", ":2:9"),
        ("mq:\n  type: [unclosed\nrocksmq: {}\n", "invalid YAML", ":3:"),
        ("- a\n- b\n", "expected a mapping", ":1"),
    ],
)
def test_bad_documents_are_clean_input_errors(tmp_path, text, message, location):
    path = write(tmp_path, text)
    with pytest.raises(InputError) as caught:
        resolve([path])
    assert message in caught.value.message
    where = caught.value.location or ""
    assert where.startswith(str(path)) and location in where


def test_missing_file_and_bad_options(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        resolve([tmp_path / "absent.yaml"])
    with pytest.raises(InputError, match="--mode"):
        resolve([SAMPLES / "milvus-cluster-pulsar.yaml"], mode="distributed")
    with pytest.raises(InputError, match="--milvus-version"):
        resolve([SAMPLES / "milvus-cluster-pulsar.yaml"], milvus_version="latest")


# What Milvus does with each corpus file, reasoned from its dependency factory (mustSelectMQType) and paramtable:
CORPUS_EXPECTED = {
    # stock-like milvus.yaml, mq.type default, rocksmq.path set -> standalone picks rocksmq (#52475)
    "milvus-yaml/01_": "rocksmq",
    "milvus-yaml/03_": "rocksmq",
    "milvus-yaml/05_": "rocksmq",
    "milvus-yaml/09_": "rocksmq",
    "milvus-yaml/11_": "rocksmq",
    "milvus-yaml/15_": "rocksmq",
    "milvus-yaml/17_": "rocksmq",
    "milvus-yaml/19_": "rocksmq",
    "milvus-yaml/21_": "rocksmq",
    "milvus-yaml/23_": "rocksmq",
    "milvus-yaml/25_": "rocksmq",
    "milvus-yaml/27_": "rocksmq",
    "milvus-yaml/29_": "rocksmq",
    # explicit mq.type rocksmq
    "milvus-yaml/13_": "rocksmq",
    "milvus-yaml/31_": "rocksmq",
    "milvus-yaml/33_": "rocksmq",
    # A whole milvus.yaml takes Milvus's code defaults, where rocksmq.path and pulsar.address are
    # empty (a real 2.3.5 panics `no available mq config found` on such a file):
    # only rocksmq retention keys, 2.3.3 (which reads milvus.yaml only): nothing enabled
    "milvus-yaml/35_": None,
    # pulsar block with a scheme, no mq.type, no rocksmq.path: pulsar is the first enabled backend
    "milvus-yaml/37_": "pulsar",
    # mounted as user.yaml (CORPUS_ROLES): explicit pulsar over the stock file's pulsar.address
    "milvus-yaml/41_": "pulsar",
    # only minio keys, named milvus.yaml: nothing enabled (as a user.yaml, --role overlay, rocksmq)
    "milvus-yaml/45_": None,
    # a Milvus 1.x-style file (storage.minio.access_key: ${MINIO_ROOT_USER}): no MQ key at all, and Milvus reads
    # the placeholders literally (its file source substitutes nothing): code defaults enable nothing
    "milvus-yaml/39_": None,
    # operator: msgStreamType decides; empty -> rocksmq standalone / pulsar cluster; 2.6 woodpecker explicit
    "operator-cr/01_": "kafka",
    "operator-cr/03_": "pulsar",
    "operator-cr/05_": "kafka",
    "operator-cr/07_": "pulsar",
    "operator-cr/09_": "rocksmq",
    "operator-cr/11_": "rocksmq",
    "operator-cr/13_": "woodpecker",
    "operator-cr/15_": "kafka",
    # helm: cluster charts deploy pulsar(v3); standalone messageQueue; user.yaml natsmq wins over the chart
    "helm-values/01_": "pulsar",
    "helm-values/03_": "pulsar",
    "helm-values/05_": "rocksmq",
    "helm-values/07_": "woodpecker",
    "helm-values/09_": "natsmq",
    "helm-values/11_": "pulsar",
}
CORPUS_ROLES = {"milvus-yaml/41_": "overlay"}  # the MANIFEST's mount: /milvus/configs/user.yaml
CORPUS_ERRORS = {
    "milvus-yaml/43_": "${MILVUS_ETCD_ENDPOINTS_YAML}",
    "milvus-yaml/47_": "docker-compose",
}


def corpus_files() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.glob("*/*") if p.suffix in (".yaml", ".tpl", ".yml"))


@pytest.mark.parametrize("path", corpus_files(), ids=lambda p: p.name[:40])
def test_corpus_resolves_like_milvus_or_fails_cleanly(path):
    require_corpus()
    short = f"{path.parent.name}/{path.name[:3]}"
    if short in CORPUS_ERRORS:
        with pytest.raises(InputError) as caught:
            resolve([path])
        assert CORPUS_ERRORS[short] in caught.value.one_line()
        return
    assert short in CORPUS_EXPECTED, f"no expectation written down for {path.name}"
    assert resolve([path], role=CORPUS_ROLES.get(short)).effective_mq == CORPUS_EXPECTED[short]
