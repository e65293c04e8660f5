"""Milvus 2.6.14+ / 3.x through the CLI: `config explain` with and without the etcd that holds the pinned
mq.type (a real etcd 3.5), `config switch` refused from 2.6 and still editing on 2.5, `migrate plan` refusing alike
(the rules: tests/config/resolve/test_wal.py)."""

from __future__ import annotations

import pytest

from mqctl.config.resolve import pinning
from mqctl.config.resolve.sources import EtcdConfig
from tests.helpers.cli import migrate_plan
from tests.helpers.files import ROCKSMQ_YAML, write_yaml


@pytest.fixture
def config(tmp_path):
    return write_yaml(tmp_path, ROCKSMQ_YAML)


@pytest.mark.parametrize(
    ("version", "code"),
    [("2.6.0", "MQ165"), ("2.6.5", "MQ165"), ("2.6.13", "MQ165"), ("2.6.14", "MQ161"), ("2.5.16", None)],
)
def test_explain_without_etcd_warns_on_every_2_6(config, version, code, cli):
    """2.6.0-2.6.13 do not pin, but cannot change a deployed Milvus's MQ either: the yaml may not be what runs."""
    result = cli("config", "explain", str(config), "--milvus-version", version, "--json")
    assert result.code == 0, result.stderr
    report = result.json()
    found = {f["code"]: f for f in report["findings"] if f["code"] in ("MQ161", "MQ165")}
    assert list(found) == ([code] if code else [])
    if code == "MQ165":
        assert found[code]["severity"] == "warning" and found[code]["line"] == 4
        assert "milvus #42798" in found[code]["message"] and "upgrade to 2.6.14+" in found[code]["hint"]
        assert "migrate plan" not in found[code]["hint"]  # it refuses below 2.6.14
        (step,) = [line for line in report["explanation"] if "#42798" in line]
        assert "does not support changing the MQ of a deployed Milvus" in step and "pins" not in step
    text = cli("config", "explain", str(config), "--milvus-version", version)
    shown = {c for c in ("MQ161", "MQ165") if c in text.stdout}
    assert shown == ({code} if code else set())


def test_explain_2_6_with_etcd_shows_the_pinned_value_winning(config, pinned, etcd_url, cli):
    result = cli("config", "explain", str(config), "--milvus-version", "2.6.17", "--etcd", etcd_url, "--json")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["effective_mq"] == "woodpecker" and report["mq_type"] == "woodpecker"
    (step,) = [line for line in report["explanation"] if "where the first boot pinned it" in line]
    assert "by-dev/config/mqtype = 'woodpecker' wins over the yaml (rocksmq)" in step
    codes = {f["code"]: f for f in report["findings"]}
    assert codes["MQ160"]["severity"] == "info" and "MQ161" not in codes
    assert "MQ150" not in codes  # "delete the etcd override" is no way to switch a pinned MQ
    assert codes["MQ160"]["line"] == 4 and "by-dev/config/mqtype" in codes["MQ160"]["message"]
    text = cli("config", "explain", str(config), "--milvus-version", "2.6.17", "--etcd", etcd_url)
    assert text.code == 0 and "Milvus starts woodpecker" in text.stdout and "MQ160" in text.stdout


def test_explain_2_6_13_keeps_the_plain_etcd_override(config, pinned, etcd_url, cli):
    result = cli("config", "explain", str(config), "--milvus-version", "2.6.13", "--etcd", etcd_url, "--json")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["effective_mq"] == "woodpecker"  # etcd > env > yaml, as before
    codes = {f["code"] for f in report["findings"]}
    assert "MQ150" in codes and not {"MQ160", "MQ161"} & codes
    assert not any("pinned" in line for line in report["explanation"])


def test_explain_pin_key_follows_etcd_root_path(tmp_path, etcd_url, cli):
    path = write_yaml(tmp_path, ROCKSMQ_YAML.replace("rootPath: by-dev", "rootPath: prod"))
    etcd = EtcdConfig(etcd_url, root="prod")
    etcd.put(pinning.PIN_KEY, "kafka")
    try:
        result = cli("config", "explain", str(path), "--milvus-version", "3.0.0", "--etcd", etcd_url, "--json")
        assert result.code == 0, result.stderr
        assert result.json()["effective_mq"] == "kafka"
        assert any("prod/config/mqtype = 'kafka'" in line for line in result.json()["explanation"])
    finally:
        etcd.delete(pinning.PIN_KEY)


def test_explain_2_6_with_an_etcd_that_holds_no_pin(config, etcd_url, cli):
    result = cli("config", "explain", str(config), "--milvus-version", "2.6.17", "--etcd", etcd_url, "--json")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["effective_mq"] == "rocksmq"
    assert any("etcd holds no mq.type yet" in line for line in report["explanation"])
    assert not {"MQ160", "MQ161"} & {f["code"] for f in report["findings"]}


def test_explain_2_6_without_etcd_warns(config, cli):
    result = cli("config", "explain", str(config), "--milvus-version", "2.6.17", "--json")
    assert result.code == 0, result.stderr
    (warning,) = [f for f in result.json()["findings"] if f["code"] == "MQ161"]
    assert warning["severity"] == "warning" and "only the first-boot value" in warning["message"]
    strict = cli("config", "validate", str(config), "--milvus-version", "2.6.17", "--strict")
    assert strict.code == 1 and "MQ161" in strict.stdout


@pytest.mark.parametrize("version", ["2.6.17", "2.6.5", "3.0.0"])
def test_switch_on_2_6_refuses_and_leaves_the_file_alone(config, version, cli):
    before = config.read_bytes()
    result = cli("config", "switch", str(config), "--to", "woodpecker", "--milvus-version", version, "--yes")
    assert result.code == 3
    assert config.read_bytes() == before
    assert sorted(p.name for p in config.parent.iterdir() if not p.name.startswith(".")) == ["milvus.yaml"]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert "AlterWAL" in lines[0] and "/management/wal/alter" in lines[0]
    # migrate plan lists AlterWAL's steps only where AlterWAL exists (2.6.14+); below, it refuses too
    assert ("mqctl migrate plan" in lines[0]) == (version != "2.6.5")


@pytest.mark.parametrize("version", ["2.6.0", "2.6.5", "2.6.13"])
def test_before_alter_wal_switch_and_migrate_plan_refuse_alike(config, version, cli):
    """2.6.0-2.6.13 have no supported MQ change: config switch must not send the user to a plan that cannot
    work, and migrate plan must not fall back to the 2.3-2.5 file edit."""
    switch = cli("config", "switch", str(config), "--to", "woodpecker", "--milvus-version", version, "--yes")
    plan = cli(
        "migrate", "plan", "--config", str(config), "--to", "woodpecker", "--milvus", "http://127.0.0.1:19530",
        "--milvus-version", version,
    )  # fmt: skip
    assert switch.code == plan.code == 3 and config.read_text() == ROCKSMQ_YAML
    assert switch.stderr == plan.stderr and "Traceback" not in plan.stderr
    assert "milvus #42798" in plan.stderr and "upgrade to 2.6.14+" in plan.stderr
    assert "migrate plan" not in plan.stderr and "switch-impossible" not in plan.stdout + plan.stderr
    as_json = migrate_plan(cli, config, "woodpecker", version)
    assert as_json.code == 3 and as_json.json()["error"]["message"] in plan.stderr


def test_switch_on_2_5_still_edits(config, cli):
    result = cli("config", "switch", str(config), "--to", "pulsar", "--milvus-version", "2.5.16", "--dry-run")
    assert result.code == 0, result.stderr
    assert "+  type: pulsar" in result.stdout
