"""Milvus 2.6.14+ / 3.x: mq.type pinned in etcd at first boot, and the online WAL switch (AlterWAL): the rules,
the documented AlterWAL call, and what the yaml alone means (through `config explain/switch` and `migrate plan`:
tests/cli/config/test_wal_pinning.py)."""

from __future__ import annotations

import json

import pytest

from mqctl.config.resolve import pinning, wal
from mqctl.config.resolve.resolution import resolve
from mqctl.config.rules.report import RULE_BY_CODE, validate
from mqctl.errors import PreconditionError
from tests.helpers.files import ROCKSMQ_YAML, write_yaml


@pytest.fixture
def config(tmp_path):
    return write_yaml(tmp_path, ROCKSMQ_YAML)


def test_pinning_starts_with_2_6_14_and_stays_in_3_x():
    assert not pinning.pins(None)
    assert not pinning.pins((2, 5, 16))
    assert not pinning.pins((2, 6, 13))
    assert pinning.pins((2, 6, 14)) and pinning.pins((2, 6, 17)) and pinning.pins((3, 0, 0))
    assert not wal.applies((2, 5, 16)) and wal.applies((2, 6, 0)) and wal.applies((3, 0, 0))


@pytest.mark.parametrize(
    ("source", "target", "mode"),
    [
        ("rocksmq", "woodpecker", "standalone"),
        ("woodpecker", "rocksmq", "standalone"),
        ("pulsar", "woodpecker", "cluster"),
        ("woodpecker", "pulsar", "cluster"),
        ("kafka", "woodpecker", "cluster"),
        ("woodpecker", "kafka", "cluster"),
    ],
)
def test_alter_wal_allows_woodpecker_and_another_mq(source, target, mode):
    assert wal.blocker(source, target, mode, (2, 6, 17)) is None
    assert wal.blocker(source, target, mode, (3, 0, 0)) is None


@pytest.mark.parametrize(
    ("source", "target", "mode", "version", "why"),
    [
        ("rocksmq", "pulsar", "standalone", (2, 6, 17), "only between woodpecker and another MQ"),
        ("pulsar", "kafka", "cluster", (3, 0, 0), "only between woodpecker and another MQ"),
        ("natsmq", "woodpecker", "standalone", (2, 6, 17), "natsmq was removed in Milvus 2.6"),
        ("rocksmq", "natsmq", "standalone", (2, 6, 17), "natsmq was removed in Milvus 2.6"),
        ("rocksmq", "woodpecker", "standalone", (2, 6, 13), "no online WAL switch"),
        ("woodpecker", "woodpecker", "standalone", (2, 6, 17), "already runs woodpecker"),
        ("woodpecker", "rocksmq", "cluster", (2, 6, 17), "rocksmq runs in standalone only"),
    ],
)
def test_alter_wal_refuses_what_the_matrix_does_not_have(source, target, mode, version, why):
    assert why in (wal.blocker(source, target, mode, version) or "")


def test_the_request_is_the_documented_call():
    command = wal.request("woodpecker", "http://10.0.0.5:9091/")
    assert command.startswith("curl -X POST http://10.0.0.5:9091/management/wal/alter ")
    body = command.split("-d ", 1)[1].strip("'")
    assert json.loads(body) == {"target_wal_name": "woodpecker"}


def test_without_etcd_the_yaml_is_only_the_first_boot_value(config):
    res = resolve([config], milvus_version="2.6.17")
    assert res.effective_mq == "rocksmq"
    assert any("pins mq.type in etcd (by-dev/config/mqtype)" in line for line in res.explanation)
    (found,) = [f for f in validate(res) if f.code == "MQ161"]
    assert found.severity == "warning" and found.line == 4 and "--etcd" in (found.hint or "")
    assert RULE_BY_CODE["MQ161"].severity == "warning" and RULE_BY_CODE["MQ160"].severity == "info"


@pytest.mark.parametrize("version", ["2.6.13", "2.5.16", "2.3.5"])
def test_versions_without_pinning_are_unchanged(config, version):
    res = resolve([config], milvus_version=version)
    assert not any("pins mq.type" in line for line in res.explanation)
    assert not any(f.code in ("MQ160", "MQ161") for f in validate(res))


def test_file_switch_refused_from_2_6_only():
    wal.refuse_file_switch((2, 5, 16), "pulsar")  # 2.3-2.5 keep switching by file
    wal.refuse_file_switch(None, "pulsar")
    with pytest.raises(PreconditionError, match="pinned in etcd") as pinned_err:
        wal.refuse_file_switch((2, 6, 17), "woodpecker")
    hint = pinned_err.value.hint or ""
    assert "/management/wal/alter" in hint and "streaming.enabled" in hint
    with pytest.raises(PreconditionError, match="milvus #42798") as early:
        wal.refuse_file_switch((2, 6, 5), "woodpecker")
    assert "upgrade to 2.6.14+" in (early.value.hint or "")
