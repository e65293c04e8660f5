"""`mqctl migrate` on Milvus 2.6.14+ / 3.x: the plan of the online WAL switch (AlterWAL), and the refusals
before it, against a real etcd 3.5 holding the key Milvus writes (`<etcd.rootPath>/config/mqtype`)."""

from __future__ import annotations

import pytest

from tests.helpers.cli import migrate_plan
from tests.helpers.files import ROCKSMQ_YAML, write_yaml
from tests.helpers.paths import SAMPLES

PLAN_STEPS = ["check", "configure", "clean-target", "alter-wal", "verify", "settle", "cleanup"]


@pytest.fixture
def config(tmp_path):
    return write_yaml(tmp_path, ROCKSMQ_YAML)


# ---------------------------------------------------------------------------- CLI: migrate plan


def test_plan_2_6_lists_the_alter_wal_steps(config, cli):
    result = migrate_plan(cli, config, "woodpecker", "2.6.17")
    assert result.code == 0, result.stderr
    plan = result.json()
    assert plan["procedure"] == "alter-wal" and plan["refused"] is False
    assert plan["source_mq"] == "rocksmq" and plan["target_mq"] == "woodpecker"
    assert [s["name"] for s in plan["steps"]] == PLAN_STEPS
    alter = plan["steps"][PLAN_STEPS.index("alter-wal")]["action"]
    assert "POST http://127.0.0.1:9091/management/wal/alter" in alter and '"target_wal_name": "woodpecker"' in alter
    codes = {f["code"]: f["level"] for f in plan["findings"]}
    assert codes["source-from-file"] == "warning" and codes["backported"] == "warning"
    assert config.read_text() == ROCKSMQ_YAML
    text = cli("migrate", "plan", "--config", str(config), "--to", "woodpecker", "--milvus", "http://h:19530",
               "--milvus-version", "2.6.17")  # fmt: skip
    assert text.code == 0 and "alter-wal" in text.stdout and "rocksmq -> woodpecker" in text.stdout


def test_plan_3_0_has_no_backport_warning(config, cli):
    plan = migrate_plan(cli, config, "woodpecker", "3.0.0").json()
    assert not {"backported", "stale-config-get"} & {f["code"] for f in plan["findings"]}


@pytest.mark.parametrize(
    ("to", "version", "code", "words"),
    [
        ("pulsar", "2.6.17", "switch-unsupported", "only between woodpecker and another MQ"),
        ("natsmq", "2.6.17", "switch-unsupported", "natsmq was removed in Milvus 2.6"),
        ("rocksmq", "2.6.17", "switch-unsupported", "already runs rocksmq"),
    ],
)
def test_plan_2_6_refuses_what_the_matrix_does_not_have(config, cli, to, version, code, words):
    result = migrate_plan(cli, config, to, version)
    assert result.code == 3
    plan = result.json()
    assert plan["refused"] is True
    (error,) = [f for f in plan["findings"] if f["code"] == code]
    assert error["level"] == "error" and words in error["message"]


def test_plan_reads_the_pinned_source_from_etcd(config, pinned, etcd_url, cli):
    result = migrate_plan(cli, config, "rocksmq", "2.6.17", "--etcd", etcd_url)
    assert result.code == 0, result.stderr
    plan = result.json()
    assert plan["source_mq"] == "woodpecker"  # etcd's pin, not the file's rocksmq
    assert {f["code"]: f["level"] for f in plan["findings"]}["pinned"] == "info"
    assert "WAL switch success: woodpecker switch to rocksmq" in plan["steps"][PLAN_STEPS.index("verify")]["action"]


def test_plan_refuses_without_an_etcd_config_source(config, tmp_path, etcd_url, cli):
    never_booted = migrate_plan(cli, config, "woodpecker", "2.6.17", "--etcd", etcd_url)
    assert never_booted.code == 3
    assert "no-etcd-config-source" in {f["code"] for f in never_booted.json()["findings"]}
    with_embed = ROCKSMQ_YAML.replace("  rootPath: by-dev\n", "  rootPath: by-dev\n  use:\n    embed: true\n")
    embedded = write_yaml(tmp_path, with_embed, "embed.yaml")
    result = migrate_plan(cli, embedded, "woodpecker", "2.6.17")
    assert result.code == 3
    (error,) = [f for f in result.json()["findings"] if f["code"] == "no-etcd-config-source"]
    assert "etcd.use.embed is true" in error["message"]


def test_plan_refuses_a_target_without_settings(tmp_path, cli):
    config = write_yaml(tmp_path, "mq:\n  type: woodpecker\n")
    result = migrate_plan(cli, config, "rocksmq", "2.6.17")
    assert result.code == 3
    (error,) = [f for f in result.json()["findings"] if f["code"] == "target-unconfigured"]
    assert "rocksmq.path is empty" in error["message"]


def test_migrate_run_refuses_on_2_6(config, cli):
    result = cli(
        "migrate", "--config", str(config), "--to", "woodpecker", "--milvus", "http://127.0.0.1:1",
        "--milvus-version", "2.6.17", "--yes",
    )  # fmt: skip
    assert result.code == 3 and "Traceback" not in result.stderr
    assert "does not run the online WAL switch" in result.stderr and "mqctl migrate plan" in result.stderr
    assert config.read_text() == ROCKSMQ_YAML
    assert not (config.parent / ".mqctl-migrate.json").exists()


def test_plan_checks_helm_streaming_enabled_and_a_config_that_cannot_start(tmp_path, cli):
    values = """\
cluster:
  enabled: false
image:
  all:
    repository: milvusdb/milvus
    tag: v2.6.17
standalone:
  messageQueue: rocksmq
streaming:
  enabled: false
"""
    path = write_yaml(tmp_path, values, "values.yaml")
    result = migrate_plan(cli, path, "woodpecker", "2.6.17")
    assert result.code == 3
    findings = {f["code"]: f for f in result.json()["findings"]}
    assert findings["streaming-disabled"]["level"] == "error"
    assert "streaming.enabled is false" in findings["streaming-disabled"]["message"]
    natsmq = migrate_plan(cli, SAMPLES / "helm-values-natsmq.yaml", "woodpecker", "2.6.17")
    assert natsmq.code == 3 and natsmq.json()["source_mq"] is None
    (error,) = [f for f in natsmq.json()["findings"] if f["code"] == "source-unknown"]
    assert "mq natsmq is not valid" in error["message"]


def test_migrate_run_on_2_6_before_alter_wal_says_upgrade(config, cli):
    result = cli(
        "migrate", "--config", str(config), "--to", "woodpecker", "--milvus", "http://127.0.0.1:1",
        "--milvus-version", "2.6.5", "--yes",
    )  # fmt: skip
    assert result.code == 3 and "no online WAL switch" in result.stderr and "upgrade to 2.6.14+" in result.stderr
    assert config.read_text() == ROCKSMQ_YAML
