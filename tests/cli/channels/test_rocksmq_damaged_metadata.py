"""A `_meta_kv` whose write-ahead log was cut short is never read as normal: the metadata behind the messages
is a warning (exit 1) in `channels list/show` and `retention show`, where it used to print wrong counts."""

from __future__ import annotations

import shutil

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.paths import FIXTURES, SAMPLES


@pytest.fixture
def truncated(tmp_path):
    for name in ("rdb_data", "rdb_data_meta_kv"):
        shutil.copytree(FIXTURES / "rocksmq" / name, tmp_path / name)
    (log,) = (tmp_path / "rdb_data_meta_kv").glob("*.log")
    with log.open("r+b") as handle:
        handle.truncate(log.stat().st_size // 2)
    return tmp_path / "rdb_data"


def test_the_fixture_itself_has_no_warning():
    result = run_cli("channels", "list", "--rocksmq", str(FIXTURES / "rocksmq" / "rdb_data"), "--json")
    assert result.code == 0 and result.json()["warnings"] == []


@pytest.mark.parametrize(
    "argv",
    [
        ["channels", "list"],
        ["channels", "show", "by-dev-rootcoord-dml_0"],
        ["retention", "show", "--config", str(SAMPLES / "milvus-2.3-standalone-rocksmq.yaml")],
    ],
)
def test_metadata_behind_the_messages_is_a_warning(truncated, argv):
    result = run_cli(*argv, "--rocksmq", str(truncated), "--json")
    warnings = result.json()["warnings"]
    assert any("the metadata is behind the messages" in w for w in warnings), result.stdout
    assert result.code == 1
    text = run_cli(*argv, "--rocksmq", str(truncated))
    assert "warning: topic by-dev-rootcoord-dml_0" in text.stderr
