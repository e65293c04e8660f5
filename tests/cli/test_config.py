"""`mqctl config ...` end to end, as a user runs it: output, JSON contract and exit codes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers.paths import CORPUS, SAMPLES, require_corpus
from tests.helpers.servers import free_port

REPORT_KEYS = {"effective_mq", "mode", "milvus_version", "explanation", "findings"}
FINDING_KEYS = {"code", "severity", "message", "key", "file", "line", "hint"}


@pytest.fixture
def sample_copy(tmp_path):
    def copy(name: str) -> Path:
        target = tmp_path / name
        shutil.copyfile(SAMPLES / name, target)
        return target

    return copy


def test_explain_people_and_json(cli):
    people = cli("config", "explain", str(SAMPLES / "milvus-2.3-standalone-rocksmq.yaml"), "--milvus-version", "2.3.5")
    assert people.code == 0, people.stderr
    assert "Milvus starts rocksmq (standalone, Milvus 2.3.5)" in people.stdout
    assert "natsmq never takes part in default" in people.stdout
    assert "\x1b[" not in people.stdout  # NO_COLOR and not a terminal
    data = cli("config", "explain", str(SAMPLES / "operator-cr-natsmq.yaml"), "--json").json()
    assert set(data) >= REPORT_KEYS
    assert (data["effective_mq"], data["mode"], data["milvus_version"]) == ("natsmq", "standalone", "2.5.4")
    assert set(data["findings"][0]) >= FINDING_KEYS


def test_explain_reports_a_panic_as_null(cli):
    result = cli(
        "config", "explain", str(SAMPLES / "user-2.5-standalone-natsmq.yaml"), "--milvus-version", "2.6.0", "--json"
    )
    assert result.code == 0
    data = result.json()
    assert data["effective_mq"] is None and data["panic"] == "mq natsmq is not valid"
    assert data["findings"][0]["code"] == "MQ102"


def test_validate_exit_codes(cli):
    broken = cli("config", "validate", str(SAMPLES / "broken-mq-config.yaml"), "--json")
    assert broken.code == 1
    found = {f["code"]: f for f in broken.json()["findings"]}
    assert found["MQ100"]["line"] == 4 and found["MQ100"]["hint"] == "did you mean 'natsmq'?"
    assert {"MQ111", "MQ113", "MQ115", "MQ116", "MQ120", "MQ122"} <= set(found)
    assert cli("config", "validate", str(SAMPLES / "operator-cr-natsmq.yaml")).code == 0
    strict = cli("config", "validate", str(SAMPLES / "operator-cr-natsmq.yaml"), "--strict")
    assert strict.code == 1 and "MQ103" in strict.stdout
    cluster = cli("config", "validate", str(SAMPLES / "milvus-2.3-standalone-natsmq.yaml"), "--mode", "cluster")
    assert cluster.code == 1 and "MQ101" in cluster.stdout


def test_validate_check_host_and_env(cli, tmp_path):
    path = tmp_path / "user.yaml"
    path.write_text(f"mq:\n  type: natsmq\nnatsmq:\n  server:\n    port: -1\n    storeDir: {tmp_path}/nats\n")
    result = cli("config", "validate", str(path), "--check-host", "--json")
    assert result.code == 0, result.stdout
    assert "MQ112" in [f["code"] for f in result.json()["findings"]]
    env = cli("config", "validate", str(path), "--env", "--json", env={"MQ_TYPE": "pulsar"})
    data = env.json()
    assert data["effective_mq"] == "pulsar"
    assert "MQ150" in [f["code"] for f in data["findings"]]
    assert cli("config", "validate", str(path), "--json").json()["effective_mq"] == "natsmq"


@pytest.mark.parametrize(
    "text, where",
    [
        ("mq:\n  type: {{ .Values.mq }}\n", ":2:9: unrendered template placeholder {{ .Values.mq }}"),
        ("mq:\n  type: [x\n", ":3:1: invalid YAML"),
    ],
)
def test_bad_input_is_exit_2_one_line(cli, tmp_path, text, where):
    path = tmp_path / "milvus.yaml"
    path.write_text(text)
    result = cli("config", "validate", str(path))
    assert result.code == 2
    assert f"{path}{where}" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    missing = cli("config", "explain", str(tmp_path / "nope.yaml"))
    assert missing.code == 2 and "no such file" in missing.stderr
    assert cli("config", "explain", str(path), "--mode", "galaxy").code == 2


def test_rules_lists_every_code(cli):
    from mqctl.config.rules.report import RULES

    people = cli("config", "rules")
    assert people.code == 0 and all(rule.code in people.stdout for rule in RULES)
    data = cli("config", "rules", "--json").json()
    assert [r["code"] for r in data["rules"]] == [rule.code for rule in RULES]


def test_get_value_origin_and_secrets(cli, tmp_path):
    result = cli("config", "get", str(SAMPLES / "helm-values-natsmq.yaml"), "natsmq.server.storeDir", "--json")
    assert result.code == 0
    assert result.json() | {"file": None} == {
        "key": "natsmq.server.storeDir",
        "value": "/var/lib/milvus/nats",
        "source": "yaml",
        "file": None,
        "line": 30,
        "detail": "extraConfigFiles.user.yaml:natsmq.server.storeDir",
    }
    default = cli("config", "get", str(SAMPLES / "milvus-cluster-pulsar.yaml"), "natsmq.server.maxPayload")
    assert "natsmq.server.maxPayload = 8388608" in default.stdout and "default" in default.stdout
    secret = tmp_path / "milvus.yaml"
    secret.write_text("kafka:\n  saslPassword: hunter2\n")
    shown = cli("config", "get", str(secret), "kafka.saslPassword")
    assert shown.code == 0 and "hunter2" not in shown.stdout and "******" in shown.stdout


def test_set_asks_without_yes_and_writes_with_it(cli, sample_copy):
    path = sample_copy("user-2.5-standalone-natsmq.yaml")
    before = path.read_bytes()
    refused = cli("config", "set", str(path), "natsmq.server.port", "4333")
    assert refused.code == 3 and "--yes" in refused.stderr
    assert "+    port: 4333" in refused.stdout
    assert path.read_bytes() == before
    dry = cli("config", "set", str(path), "natsmq.server.port", "4333", "--dry-run", "--json")
    assert dry.code == 0 and dry.json()["written"] is False and path.read_bytes() == before
    done = cli("config", "set", str(path), "natsmq.server.port", "4333", "--yes", "--json")
    assert done.code == 0, done.stderr
    data = done.json()
    assert data["written"] and Path(data["backup"]).read_bytes() == before
    assert path.read_bytes() == before.replace(b"port: 4222 #", b"port: 4333 #")
    again = cli("config", "set", str(path), "natsmq.server.port", "4333", "--yes")
    assert again.code == 0 and "No change" in again.stdout


def test_set_wrong_type_is_exit_2(cli, sample_copy):
    path = sample_copy("user-2.5-standalone-natsmq.yaml")
    result = cli("config", "set", str(path), "natsmq.server.port", "lots", "--yes")
    assert result.code == 2 and "must be an integer" in result.stderr


def test_set_secret_diff_is_redacted(cli, tmp_path):
    path = tmp_path / "milvus.yaml"
    path.write_text("kafka:\n  brokerList: b:9092\n")
    result = cli("config", "set", str(path), "kafka.saslPassword", "hunter2", "--yes")
    assert result.code == 0 and "hunter2" not in result.stdout + result.stderr
    assert "saslPassword: hunter2" in path.read_text()


def test_unset(cli, sample_copy):
    path = sample_copy("user-2.5-standalone-natsmq.yaml")
    result = cli("config", "unset", str(path), "natsmq.server.monitor", "--yes")
    assert result.code == 0 and "monitor" not in path.read_text()
    assert cli("config", "unset", str(path), "natsmq.server.monitor", "--yes").code == 0


def test_switch(cli, sample_copy):
    path = sample_copy("helm-values-natsmq.yaml")
    refused = cli("config", "switch", str(path), "--to", "natsmq", "--milvus-version", "2.6.0", "--yes")
    assert refused.code == 3 and "removed in Milvus 2.6" in refused.stderr
    done = cli("config", "switch", str(path), "--to", "rocksmq", "--store-dir", "/srv/rdb", "--yes")
    assert done.code == 0, done.stderr
    assert cli("config", "explain", str(path), "--json").json()["effective_mq"] == "rocksmq"
    assert cli("config", "get", str(path), "rocksmq.path").stdout.startswith("rocksmq.path = /srv/rdb")
    cr = sample_copy("operator-cr-natsmq.yaml")
    dry = cli("config", "switch", str(cr), "--to", "pulsar", "--dry-run")
    assert dry.code == 0 and "+    msgStreamType: pulsar" in dry.stdout and "natsmq" in cr.read_text()


def test_kind_can_be_forced(cli, tmp_path):
    path = tmp_path / "odd.yaml"
    path.write_text("services:\n  milvus:\n    image: milvusdb/milvus\n")
    assert cli("config", "explain", str(path)).code == 2
    forced = cli("config", "explain", str(path), "--kind", "milvus-yaml", "--json")
    # read as a whole milvus.yaml without MQ keys, nothing is enabled: Milvus's code defaults (seen on 2.3.5)
    assert forced.code == 0 and forced.json()["fails"] == "no available mq config found"
    overlay = cli("config", "explain", str(path), "--kind", "milvus-yaml", "--role", "overlay", "--json")
    assert overlay.code == 0 and overlay.json()["effective_mq"] == "rocksmq"


def test_every_corpus_file_gives_a_clean_result_or_a_clean_error(cli):
    require_corpus()
    files = sorted(p for p in CORPUS.glob("*/*") if p.suffix in (".yaml", ".tpl", ".yml"))
    assert files
    for path in files:
        result = cli("config", "validate", str(path), "--json")
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr, path
        if result.code == 2:
            assert result.stderr.startswith(f"error: {path}:") and len(result.stderr.strip().splitlines()) == 1
        else:
            assert result.code in (0, 1), (path, result.stderr)
            assert set(result.json()) >= REPORT_KEYS


def test_passwords_inside_urls_are_never_printed(cli, tmp_path):
    path = tmp_path / "milvus.yaml"
    path.write_text(
        "mq:\n  type: pulsar\npulsar:\n  address: pulsar+ssl://admin:S3CRETPW@broker:6651\n"
        "  port: 6650\nkafka:\n  brokerList: user:KPW2@b:9092\n"
    )
    runs = [
        cli("config", "explain", str(path)),
        cli("config", "explain", str(path), "--json"),
        cli("config", "validate", str(path), "--json"),
        cli("config", "get", str(path), "pulsar.address"),
        cli("config", "set", str(path), "pulsar.port", "6651", "--dry-run"),
    ]
    for run in runs:
        assert run.code in (0, 1), run.stderr
        assert "S3CRETPW" not in run.stdout + run.stderr and "KPW2" not in run.stdout + run.stderr
    assert "pulsar+ssl://admin:******@broker:6651" in runs[3].stdout
    assert any(f["code"] == "MQ122" for f in runs[2].json()["findings"])


def test_helm_chart_supplies_the_address_of_what_it_deploys(cli, tmp_path):
    in_cluster = tmp_path / "standalone-kafka.yaml"
    in_cluster.write_text("cluster:\n  enabled: false\nstandalone:\n  messageQueue: kafka\nkafka:\n  enabled: true\n")
    external = tmp_path / "external-kafka.yaml"
    external.write_text(
        "cluster:\n  enabled: true\npulsarv3:\n  enabled: false\nexternalKafka:\n  enabled: true\n"
        "  brokerList: kafka.example:9092\n"
    )
    for path in (in_cluster, external):
        result = cli("config", "validate", str(path), "--strict", "--json")
        assert result.code == 0, result.stdout
        assert result.json()["effective_mq"] == "kafka"
        assert not [f for f in result.json()["findings"] if f["code"] == "MQ105"]
    assert "kafka.brokerList = kafka.example:9092" in cli("config", "explain", str(external)).stdout


def test_rocksmq_with_an_empty_path_and_a_bad_port_are_errors_once(cli, tmp_path):
    path = tmp_path / "milvus.yaml"
    path.write_text('mq:\n  type: rocksmq\nrocksmq:\n  path: ""\nnatsmq:\n  server:\n    port: abc\n')
    result = cli("config", "validate", str(path), "--json")
    assert result.code == 1
    codes = [f["code"] for f in result.json()["findings"]]
    assert "MQ107" in codes and codes.count("MQ111") == 1 and "MQ115" not in codes
    path.write_text("mq:\n  type: natsmq\nnatsmq:\n  server:\n    storeDir: /srv/nats\n    port:\n")
    empty = cli("config", "validate", str(path), "--json").json()["findings"]
    assert [f["message"] for f in empty if f["code"] == "MQ111"] == [
        "natsmq.server.port is empty (1-65535, or -1 for random)"
    ]


def test_get_of_a_misspelled_key_says_so(cli):
    result = cli("config", "get", str(SAMPLES / "milvus-2.3-standalone-natsmq.yaml"), "natsmq.server.prot")
    assert result.code == 2 and "Traceback" not in result.stderr
    assert "unknown key 'natsmq.server.prot'" in result.stderr and "did you mean natsmq.server.port?" in result.stderr
    section = cli("config", "get", str(SAMPLES / "milvus-cluster-pulsar.yaml"), "natsmq.server")
    assert "unknown key" not in section.stderr  # a known section that the file does not write


def test_get_reads_a_quoted_user_yaml_in_helm_values(cli, tmp_path):
    values = tmp_path / "values.yaml"
    values.write_text('cluster:\n  enabled: false\nextraConfigFiles:\n  user.yaml: "mq:\\n  type: natsmq\\n"\n')
    result = cli("config", "get", str(values), "mq.type", "--json")
    assert result.code == 0, result.stderr
    assert result.json()["value"] == "natsmq" and result.json()["source"] == "yaml"
    edit = cli("config", "set", str(values), "mq.type", "rocksmq", "--yes")  # an edit still needs a block text
    assert edit.code == 2 and "block text" in edit.stderr


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "milvus.yaml"
    shutil.copy(SAMPLES / "milvus-2.3-standalone-rocksmq.yaml", path)
    return path


def _one_clean_line(result) -> None:
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1


def test_password_in_etcd_url_is_not_printed(cli, config):
    result = cli("config", "explain", str(config), "--etcd", f"http://root:EtcdPw9@127.0.0.1:{free_port()}")
    assert result.code == 3
    _one_clean_line(result)
    assert "EtcdPw9" not in result.stderr and "root:******@" in result.stderr


@pytest.mark.parametrize("port", ["70000", "0", "-5"])
def test_set_refuses_a_port_validate_rejects(cli, config, port):
    before = config.read_bytes()
    result = cli("config", "set", str(config), "natsmq.server.port", port, "--yes")
    assert result.code == 2
    _one_clean_line(result)
    assert f"natsmq.server.port must be a port, got '{port}'" in result.stderr
    assert config.read_bytes() == before


def test_switch_refuses_an_out_of_range_port(cli, config):
    result = cli("config", "switch", str(config), "--to", "natsmq", "--port", "70000", "--yes")
    assert result.code == 2 and "must be a port" in result.stderr


def test_set_takes_a_negative_value(cli, config):
    result = cli("config", "set", str(config), "natsmq.server.port", "-1", "--yes")
    assert result.code == 0, result.stderr
    assert "port: -1" in config.read_text()
    get = cli("config", "get", str(config), "natsmq.server.port", "--json")
    assert get.json()["value"] == "-1"
    validate = cli("config", "validate", str(config), "--json")
    assert "MQ112" in {finding["code"] for finding in validate.json()["findings"]}


def test_unknown_option_after_set_is_still_refused(cli, config):
    before = config.read_bytes()
    result = cli("config", "set", str(config), "natsmq.server.port", "4223", "--yse")
    assert result.code == 2 and "--yse" in result.stderr
    assert config.read_bytes() == before


def test_a_folder_where_a_config_file_is_expected(cli):
    result = cli("config", "explain", str(SAMPLES))
    assert result.code == 2
    _one_clean_line(result)
    assert "is a directory, not a config file" in result.stderr


@pytest.mark.parametrize(
    ("sample", "key"),
    [
        ("milvus-2.3-standalone-rocksmq.yaml", "rocksmq"),
        ("operator-cr-natsmq.yaml", "spec.config"),
        ("helm-values-natsmq.yaml", "standalone"),
    ],
)
def test_get_of_a_section_is_refused_not_shown_as_unset(cli, sample, key):
    result = cli("config", "get", str(SAMPLES / sample), key)
    assert result.code == 2
    _one_clean_line(result)
    assert f"{key} is a section" in result.stderr and "(not set)" not in result.stdout


FLOW_AND_LIST_SECRETS = """\
minio: {address: localhost, secretAccessKey: FlowSecret1, accessKeyID: FlowKey1}
etcd:
  auth:
    password:
      - ListPw4
pulsar:
  authParams: |
    {"token": "BlockTok5"}
natsmq:
  server:
    port: 4222
"""


@pytest.mark.parametrize(
    ("command", "key", "value"),
    [
        ("set", "minio.address", "minio"),
        ("set", "natsmq.server.port", "4223"),
        ("set", "etcd.auth.enabled", "true"),
        ("unset", "etcd", None),
        ("set", "minio.secretAccessKey", "NewSecret6"),
    ],
)
def test_diff_hides_secrets_in_flow_mappings_lists_and_blocks(cli, tmp_path, command, key, value):
    path = tmp_path / "milvus.yaml"
    path.write_text(FLOW_AND_LIST_SECRETS)
    result = cli("config", command, str(path), key, *([value] if value else []), "--dry-run", "--json")
    assert result.code == 0, result.stderr
    diff = result.json()["diff"]
    assert diff and diff in result.stderr
    for secret in ("FlowSecret1", "FlowKey1", "ListPw4", "BlockTok5", "NewSecret6"):
        assert secret not in result.stdout + result.stderr
    assert path.read_text() == FLOW_AND_LIST_SECRETS
