"""Hostile sizes for the reference writer's bulk variant (tests/reference/writer/bulk.go): each is refused before
anything is connected or written, with one line naming the flag, exit 2, and no manifest."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers import upstream_writer as upstream

pytestmark = pytest.mark.skipif(upstream.go_binary() is None, reason="no `go` on PATH")


@pytest.fixture(scope="module")
def binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    line = next(line for line in upstream.LINES if line.tags == "woodpecker_direct")
    return upstream.build(line, tmp_path_factory.mktemp("writer"))


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        ({"-entries": "0"}, "-entries 0"),
        ({"-entries": "-3"}, "-entries -3"),
        ({"-entries": "99999999999"}, "-entries 99999999999"),
        ({"-entry-bytes": "0"}, "-entry-bytes 0"),
        ({"-entry-bytes": "1099511627776"}, "-entry-bytes 1099511627776"),
        ({"-in-flight": "-1"}, "-in-flight -1"),
        ({"-in-flight": "1000000000"}, "-in-flight 1000000000"),
        ({"-in-flight": "1024", "-entry-bytes": "16777216"}, "holds more than"),
    ],
)
def test_hostile_bulk_sizes_fail_in_one_line(binary, tmp_path, flags, named):
    out = tmp_path / "out"
    args = [str(binary), "-variant", "bulk", "-out", str(out), "-etcd", "http://127.0.0.1:9"]
    args += [part for pair in flags.items() for part in pair]
    result = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("writer: ") and named in line, line
    assert not (out / "manifest.json").exists()


def test_the_go_checks_of_the_bulk_bounds_pass():
    """bulk_test.go: every bound refused in one line naming its flag, the defaults accepted."""
    line = next(line for line in upstream.LINES if line.tags == "woodpecker_direct")
    command = ["go", "test", f"-modfile={line.modfile}", f"-tags={line.tags}", "-run", "TestCheckBulk", "-count=1", "."]
    result = subprocess.run(
        command, cwd=upstream.WRITER, env=upstream.go_env(), capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("ok"), result.stdout
