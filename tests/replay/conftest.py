"""Fixtures the replay tests of a Woodpecker WAL share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="module")
def wal(tmp_path_factory: pytest.TempPathFactory, logs: list[Any]) -> Path:
    """The fixture's logs as a local Woodpecker folder whose last segment is still active."""
    from tests.helpers.woodpecker_wal import write_wal

    root = tmp_path_factory.mktemp("wal") / "wp"
    write_wal(root, logs, active_last=True)
    return root
