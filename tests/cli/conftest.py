"""Fixtures the CLI tests share: `cli`, the in-process runner (run_cli), and etcd states."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from mqctl.config.resolve import pinning
from mqctl.config.resolve.sources import EtcdConfig
from tests.helpers.cli import CliResult, run_cli


@pytest.fixture
def cli() -> Callable[..., CliResult]:
    """The in-process CLI runner (modules whose commands need a fresh interpreter override it)."""
    return run_cli


@pytest.fixture
def pinned(etcd_url: str) -> Iterator[EtcdConfig]:
    """etcd holding mq.type as a 2.6.14+ coordinator pins it: `by-dev/config/mqtype` = woodpecker."""
    etcd = EtcdConfig(etcd_url, root="by-dev")
    etcd.put(pinning.PIN_KEY, "woodpecker")
    yield etcd
    etcd.delete(pinning.PIN_KEY)
