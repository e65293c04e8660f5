"""The end-to-end suites run every command as a subprocess: they start Milvus sandboxes and Spark, kill
themselves on purpose (MQCTL_CRASH_AFTER_STEP) and must leave nothing behind in the pytest process."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.helpers.cli import CliResult, run_cli_subprocess


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    return run_cli_subprocess


@pytest.fixture(autouse=True)
def wall_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """A live Milvus, etcd and nats-server keep the wall clock (nats-server expires by it): ages of what they
    hold right now are measured against it, even when MQCTL_NOW moves the clock for the fixture tests."""
    monkeypatch.delenv("MQCTL_NOW", raising=False)
