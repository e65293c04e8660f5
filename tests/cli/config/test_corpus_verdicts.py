"""Every real config of the shared corpus has a recorded verdict: what Milvus does with it, and why.

The corpus (../shared/corpus, public files written by other people, see its MANIFEST.tsv) stays outside the
repository. Each row says what `mqctl config explain --json` must answer: the MQ Milvus starts, the way it
fails at startup, or the exit code for a file that is not a Milvus config at all. The expected value is
Milvus's behaviour (reason: its code, or the operator's or chart's); where mqctl does not agree yet, the row
is a strict xfail naming the bug. `--milvus-version` comes from the MANIFEST (the image the file was used
with), `--role` only where the MANIFEST knows the mount.
Under CI=true a missing corpus fails these tests instead of skipping them.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.paths import CORPUS, require_corpus


@dataclass(frozen=True)
class Verdict:
    file: str  # path inside the corpus
    args: tuple[str, ...]
    reason: str  # one line, from Milvus / operator / chart code
    mq: str | None = None  # the MQ Milvus starts
    fails: str | None = None  # or: how Milvus stops at startup (words of its panic)
    exit_code: int = 0  # 2: not a Milvus config mqctl (or Milvus) can read
    bug: str | None = None  # mqctl disagrees today: strict xfail


# Milvus selection rules cited below:
# - 2.0: cmd/roles/roles.go newMsgFactory: rocksmq for a standalone, pulsar for a cluster.
# - 2.1/2.2: internal/util/dependency/factory.go Init: standalone takes rocksmq when rocksmq.path != "", else
#   initMQRemoteService (pulsar, then kafka); a cluster takes pulsar, then kafka.
# - 2.3-2.5: same file, mustSelectMQType: an explicit mq.type is used as is; `default` takes rocksmq
#   (standalone, rocksmq.path != ""), else pulsar (pulsar.address != ""), else kafka (kafka.brokerList != "");
#   natsmq never by default (milvus PR #26791).
# - 2.6+: mustSelectWALName, the same order with woodpecker last.
# - Code defaults (pkg/util/paramtable/service_param.go): rocksmq.path and pulsar.address "" from 2.3 (seen on
#   a real 2.3.5); kafka.brokerList "" up to 2.4, "localhost:9092" from 2.5.
STOCK_DEFAULT = "mq.type default in standalone: mustSelectMQType takes rocksmq first and the file sets rocksmq.path"
STOCK_26 = (
    "2.6 mustSelectWALName: rocksmq first in standalone (then pulsar, kafka, woodpecker); the file sets rocksmq.path"
)
BY_ROLE = "2.1/2.2 factory.go Init: a standalone takes rocksmq when rocksmq.path is set (no mq.type before 2.3)"
OPERATOR = "milvus-operator writes mq.type from spec.dependencies.msgStreamType (milvus_webhook.go defaultMsgStream)"
CHART = "milvus-helm config.tpl: a cluster gets the chart's pulsar/kafka"

V = Verdict
TABLE = [
    V("milvus-yaml/01_killllerWhale__HackathonProject__milvus.yaml", ("--milvus-version", "2.0.2"),
      "2.0 chooses by role: cmd/roles/roles.go newMsgFactory(localMsg) gives a standalone rocksmq, a cluster pulsar", mq="rocksmq"),
    V("milvus-yaml/03_dsakovych__docker-utils__milvus_milvus.yaml", ("--milvus-version", "2.2.2"),
      BY_ROLE + "; kafka has no brokerList", mq="rocksmq"),
    V("milvus-yaml/05_askguruai__backend__milvus.yaml", ("--milvus-version", "2.2.9"), BY_ROLE, mq="rocksmq"),
    V("milvus-yaml/09_juyoung-gemiso__Get-Started-Milvus__milvus.yaml", ("--milvus-version", "2.3"),
      STOCK_DEFAULT + "; the appended gpu/resources keys are not Milvus keys and are ignored", mq="rocksmq"),
    V("milvus-yaml/11_jmp0xf__QAnything__milvus.yaml", ("--milvus-version", "2.3.13"), STOCK_DEFAULT, mq="rocksmq"),
    V("milvus-yaml/13_FingerAI-Cell__uwsgi-fastcgi__milvus_milvus.yaml", ("--milvus-version", "2.4.9"),
      "explicit mq.type rocksmq: mustSelectMQType returns it as is; pulsar.address is set but unused", mq="rocksmq"),
    V("milvus-yaml/15_elestio-examples__milvus__milvus.yaml", ("--milvus-version", "2.4"), STOCK_DEFAULT, mq="rocksmq"),
    V("milvus-yaml/17_aiondemand__aiod-enhanced-interaction__milvus.yaml", ("--milvus-version", "2.5.5"),
      STOCK_DEFAULT + " (the trimmed pulsar/kafka blocks come after rocksmq in the order)", mq="rocksmq"),
    V("milvus-yaml/19_daniel-barber__empathic-conversational-agent-lab__milvus.yaml", ("--milvus-version", "2.5.10"),
      STOCK_DEFAULT + "; the appended top-level version/server_config keys are ignored", mq="rocksmq"),
    V("milvus-yaml/21_lequan310__FilumAssm__milvus.yaml", ("--milvus-version", "2.5.14"), STOCK_DEFAULT, mq="rocksmq"),
    V("milvus-yaml/23_ducanhMU__RAGHouse__milvus.yaml", ("--milvus-version", "2.6.0"), STOCK_26, mq="rocksmq"),
    V("milvus-yaml/25_Neaj-Morshad-101__neaj-devops-lab__milvus_docker_standalone_milvus.yaml",
      ("--milvus-version", "2.6.0"), STOCK_26, mq="rocksmq"),
    V("milvus-yaml/27_ultranationalism__gemini-cli-novel-agent__configs_milvus.yaml", ("--milvus-version", "2.6.8"),
      STOCK_26, mq="rocksmq"),
    V("milvus-yaml/29_cyber1026__legal-flow__docker_milvus.yaml", ("--milvus-version", "3.0"),
      STOCK_26 + " (unchanged on master)", mq="rocksmq"),
    V("milvus-yaml/31_Alimustoofaa__FaceRecognition_Milvus__milvus.yaml", ("--milvus-version", "2.6.5"),
      "explicit mq.type rocksmq with rocksmq.path set; mq.rocksmqPath and top-level version are not Milvus keys",
      mq="rocksmq"),
    V("milvus-yaml/33_congwa__EmbedAI-only__milvus_milvus.yaml", ("--milvus-version", "2.4.15"),
      "explicit mq.type rocksmq and rocksmq.path set (lrucachecapacity is not a Milvus key)", mq="rocksmq"),
    V("milvus-yaml/35_git-damboro__IdeaLab-__configs_milvus.yaml", ("--milvus-version", "2.3.3"),
      "read as the whole milvus.yaml only rocksmq retention is set: 2.3 code defaults leave rocksmq.path, "
      "pulsar.address and kafka.brokerList empty, mustSelectMQType panics (seen on a real 2.3.5)",
      fails="no available mq config found"),
    V("milvus-yaml/37_AndrewLiuZhangZong__ai_lemo_qa__config_milvus.yaml", ("--milvus-version", "2.4.15"),
      "whole milvus.yaml: rocksmq.path code default is empty, pulsar.address 'pulsar://localhost' is not, "
      "so PulsarEnable() and mustSelectMQType takes pulsar", mq="pulsar"),
    V("milvus-yaml/39_akumm7491__multi-agent-code-analyzer__configs_milvus.yaml", ("--milvus-version", "2.3.3"),
      "no real MQ key (msgChannel.type is invented): 2.3 code defaults enable nothing, mustSelectMQType panics; "
      "the ${MINIO_ROOT_USER} placeholders are read literally (Milvus's yaml source substitutes nothing)",
      fails="no available mq config found"),
    V("milvus-yaml/41_zilliztech__milvus-cdc__tests_deployment_milvus_upstream.yaml",
      ("--milvus-version", "2.5", "--role", "overlay"),
      "mounted as user.yaml (MANIFEST): explicit mq.type pulsar over the stock file's pulsar.address localhost",
      mq="pulsar"),
    V("milvus-yaml/43_codeadeel__milvus-onprem__templates_2.6_milvus.yaml.tpl", (),
      "an unrendered envsubst template: the bare ${MILVUS_ETCD_ENDPOINTS_YAML} line is a YAML syntax error, "
      "Milvus's yaml loader cannot read it either", exit_code=2),
    V("milvus-yaml/45_pmikuli__movie-recommendation-system__volumes_milvus.yaml", ("--milvus-version", "2.5"),
      "whole milvus.yaml with only minio keys: on 2.5 rocksmq.path and pulsar.address default to empty but "
      "kafka.brokerList to localhost:9092 (service_param.go), so mustSelectMQType takes kafka", mq="kafka"),
    V("milvus-yaml/47_jniranjanreddy__myhomelab__milvus.yaml", (),
      "a docker-compose file saved as milvus.yaml, not a Milvus config", exit_code=2),
    V("operator-cr/01_zilliztech__milvus-operator__config_samples_milvus_kafka.yaml", (), OPERATOR, mq="kafka"),
    V("operator-cr/03_zilliztech__milvus-operator__config_samples_milvus_pulsar_v2.yaml", (), OPERATOR, mq="pulsar"),
    V("operator-cr/05_zilliztech__milvus-operator__config_samples_milvus_kafka_external_secret.yaml", (),
      OPERATOR + " (the Secret document beside the CR is not part of it)", mq="kafka"),
    V("operator-cr/07_zilliztech__milvus-operator__config_samples_milvuscluster_external_dependencies.yaml", (),
      "MilvusCluster without msgStreamType: the webhook's defaultMsgStream picks pulsar for a cluster", mq="pulsar"),
    V("operator-cr/09_ilievlad__milvus-backup-demo__milvus.yaml", (),
      "Milvus CR (standalone) without msgStreamType: defaultMsgStream picks rocksmq for a standalone", mq="rocksmq"),
    V("operator-cr/11_TiagoAvelino__ocp-ai__milvus_milvus.yaml", (), OPERATOR, mq="rocksmq"),
    V("operator-cr/13_teochenglim__milvus-ha-operator-crd__milvus-cluster.yaml", (),
      OPERATOR + "; woodpecker exists from 2.6 (image 2.6.0) and runs in a cluster", mq="woodpecker"),
    V("operator-cr/15_sindhuhack__milvustest__tests_python_client_deploy_milvus_crd.yaml", (),
      OPERATOR + "; the extra pulsar dependency block is deployed but unused", mq="kafka"),
    V("helm-values/01_zilliztech__milvus-helm__charts_milvus_values.yaml", (),
      CHART + ": cluster.enabled with pulsarv3.enabled gives pulsar (standalone.messageQueue is for standalone only)",
      mq="pulsar"),
    V("helm-values/03_milvus-io__milvus-helm__charts_milvus_values.yaml", (),
      CHART + ": cluster.enabled with pulsar.enabled gives pulsar", mq="pulsar"),
    V("helm-values/05_NandaKumar8776__ticketing-system-backend__milvus-values.yaml", (),
      "milvus-helm config.tpl: not cluster.enabled and standalone.messageQueue rocksmq writes mq.type rocksmq",
      mq="rocksmq"),
    V("helm-values/07_Neaj-Morshad-101__neaj-devops-lab__milvus_kubernetes_milvus-distributed_2.6.2_milvus-cluster-2.6.2-config.yaml",
      (), "a rendered ConfigMap whose default.yaml says mq.type woodpecker (2.6.2 has woodpecker)", mq="woodpecker"),
    V("helm-values/09_sindhuhack__milvustest__tests_python_client_chaos_nats-standalone-values.yaml", (),
      "extraConfigFiles is mounted as user.yaml, read after milvus.yaml (paramtable defaultYaml): its mq.type "
      "natsmq wins over the chart's rocksmq", mq="natsmq"),
    V("helm-values/11_xiaocai2333__milvus-preformance-benchmark__milvus-values.yaml", (),
      CHART + ": cluster.enabled with pulsar.enabled gives pulsar", mq="pulsar"),
]  # fmt: skip


def test_a_missing_corpus_fails_under_ci(monkeypatch, tmp_path):
    import tests.helpers.paths as this

    monkeypatch.setattr(this, "CORPUS", tmp_path / "absent")
    monkeypatch.setattr(this, "IN_CI", True)
    with pytest.raises(pytest.fail.Exception, match="CI=true"):
        require_corpus()
    monkeypatch.setattr(this, "IN_CI", False)
    with pytest.raises(pytest.skip.Exception):
        require_corpus()


def corpus_files() -> set[str]:
    return {f"{p.parent.name}/{p.name}" for p in CORPUS.glob("*/*") if p.is_file()}


def test_every_corpus_file_has_a_verdict():
    require_corpus()
    with open(CORPUS / "MANIFEST.tsv", newline="") as manifest:
        listed = {row["file"] for row in csv.DictReader(manifest, delimiter="\t")}
    recorded = [v.file for v in TABLE]
    assert len(recorded) == len(set(recorded)), "a file has two rows"
    assert set(recorded) == listed == corpus_files()


def test_rows_are_complete():
    for verdict in TABLE:
        outcomes = [verdict.mq is not None, verdict.fails is not None, verdict.exit_code != 0]
        assert sum(outcomes) == 1, verdict.file
        assert verdict.reason.strip() and "\n" not in verdict.reason


def _case(verdict: Verdict):
    marks = [pytest.mark.xfail(strict=True, reason=verdict.bug)] if verdict.bug else []
    return pytest.param(verdict, id=verdict.file.split("__")[0], marks=marks)


@pytest.mark.parametrize("verdict", [_case(v) for v in TABLE])
def test_explain_gives_milvus_verdict(verdict: Verdict):
    require_corpus()
    result = run_cli("config", "explain", str(CORPUS / verdict.file), *verdict.args, "--json")
    assert "Traceback" not in result.stderr
    answer = result.json()
    if verdict.exit_code:
        assert result.code == verdict.exit_code and answer["error"]["code"] == verdict.exit_code, verdict.reason
        return
    assert result.code == 0, (verdict.reason, result.stderr)
    assert answer["effective_mq"] == verdict.mq, (verdict.reason, answer["effective_mq"], answer["fails"])
    if verdict.fails:
        assert verdict.fails in (answer["fails"] or ""), (verdict.reason, answer["fails"])
    else:
        assert answer["fails"] is None, (verdict.reason, answer["fails"])
