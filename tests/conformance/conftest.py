"""Fixtures of the conformance suite: `cli`, the in-process runner whose answers the real Milvus binary judges."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.helpers.cli import CliResult, run_cli


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    return run_cli
