"""Fixtures the CLI tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mqctl.config.resolve import pinning
from mqctl.config.resolve.sources import EtcdConfig


@pytest.fixture
def pinned(etcd_url: str) -> Iterator[EtcdConfig]:
    """etcd holding mq.type as a 2.6.14+ coordinator pins it: `by-dev/config/mqtype` = woodpecker."""
    etcd = EtcdConfig(etcd_url, root="by-dev")
    etcd.put(pinning.PIN_KEY, "woodpecker")
    yield etcd
    etcd.delete(pinning.PIN_KEY)
