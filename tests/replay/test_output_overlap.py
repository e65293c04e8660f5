"""No replay output may be, hold or lie inside the data it reads: refused before Spark starts, nothing touched."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.paths import FIXTURES


def fingerprint(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def sources(tmp_path):
    rocks = tmp_path / "volumes" / "rdb_data"
    shutil.copytree(FIXTURES / "rocksmq" / "rdb_data", rocks)
    shutil.copytree(FIXTURES / "rocksmq" / "rdb_data_meta_kv", tmp_path / "volumes" / "rdb_data_meta_kv")
    store = tmp_path / "nats"
    shutil.copytree(FIXTURES / "natsmq" / "store", store)
    (tmp_path / "link").symlink_to(rocks)
    return tmp_path


CASES = {
    "the store itself, overwritten": (["--nats-store", "nats"], ["--output", "nats", "--mode", "overwrite"], "is"),
    "the RocksMQ folder's parent": (["--rocksmq", "volumes/rdb_data"], ["--output", "volumes"], "holds"),
    "RocksMQ's metadata": (["--rocksmq", "volumes/rdb_data"], ["--output", "volumes/rdb_data_meta_kv"], "is"),
    "inside RocksMQ, appended": (
        ["--rocksmq", "volumes/rdb_data"],
        ["--output", "volumes/rdb_data/out", "--mode", "append"],
        "is inside",
    ),
    "through a symlink": (["--rocksmq", "volumes/rdb_data"], ["--output", "link/out"], "is inside"),
    "the resume file inside the store": (
        ["--nats-store", "nats"],
        ["--output", "out", "--checkpoint", "nats/jetstream/resume.json"],
        "is inside",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_output_overlapping_a_source_is_refused_before_anything_runs(sources, case):
    source, target, how = CASES[case]
    before = {name: fingerprint(sources / name) for name in ("volumes", "nats")}
    result = run_cli("replay", "--to-spark", *source, *target, "--json", cwd=str(sources))
    assert result.code == 2, (result.code, result.stdout, result.stderr)
    error = result.json()["error"]
    assert error["kind"] == "input" and f" {how} " in error["message"], error
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert {name: fingerprint(sources / name) for name in ("volumes", "nats")} == before
    assert not (sources / "out").exists()
