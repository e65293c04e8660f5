"""The end-to-end suites run every command as a subprocess: they start Milvus sandboxes and Spark, kill
themselves on purpose (MQCTL_CRASH_AFTER_STEP) and must leave nothing behind in the pytest process."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.helpers.cli import CliResult, run_cli_subprocess


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    return run_cli_subprocess
