"""Regenerate the real-data fixtures with a real Milvus 2.3.5 (slow: run with MQCTL_REGEN_FIXTURES=1)."""

from __future__ import annotations

import os

import pytest

from mqctl.mq.rocksmq.reader import RocksMQSource
from tests.helpers.make_fixtures import load_expected, main
from tests.helpers.paths import FIXTURES

pytestmark = [
    pytest.mark.slow,
    pytest.mark.milvus,
    pytest.mark.skipif(
        os.environ.get("MQCTL_REGEN_FIXTURES") != "1", reason="set MQCTL_REGEN_FIXTURES=1 to regenerate fixtures"
    ),
]


def test_regenerate_fixtures():
    assert main(["--out", str(FIXTURES)]) == 0
    expected = load_expected()
    with RocksMQSource(FIXTURES / "rocksmq" / "rdb_data") as source:
        names = {c.name for c in source.list_channels()}
        assert any(page.acked for topic in source.topic_meta().values() for page in topic.pages)
    assert {f"{expected['channel_prefix']}{i}" for i in range(expected["dml_channels"])} <= names
    assert not [p for p in FIXTURES.rglob("*") if p.name == "LOCK" or p.name.startswith("LOG")]
    assert (FIXTURES / "natsmq" / "store" / "jetstream").is_dir()
