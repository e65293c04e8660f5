"""Where the tests find the repository, its fixtures, the sample configs and the shared corpus."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample-configs"
CORPUS = REPO.parent / "shared" / "corpus"
FIXTURES = REPO / "tests" / "fixtures"
ROCKSMQ = FIXTURES / "rocksmq" / "rdb_data"
NATS_STORE = FIXTURES / "natsmq" / "store"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_corpus() -> None:
    """Skip without the corpus on a developer's machine; under CI its absence is a failure."""
    if CORPUS.is_dir():
        return
    if IN_CI:
        pytest.fail(f"the shared corpus is missing at {CORPUS} (CI=true: these tests must run, not skip)")
    pytest.skip(f"shared corpus absent at {CORPUS}")
