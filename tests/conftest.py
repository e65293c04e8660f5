"""Shared test helpers: run the CLI in-process and capture stdout, stderr and exit code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import mqctl  # noqa: F401  (first, so gRPC's fork handlers are off before any test imports grpc)

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample-configs"
CORPUS = REPO.parent / "shared" / "corpus"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self):
        return json.loads(self.stdout)


def run_cli(*args: str, env: dict | None = None, timeout: float = 600, cwd: str | None = None) -> CliResult:
    """Run `mqctl ARGS` as a real subprocess (no stdin, not a terminal), as a user or CI would."""
    full_env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "mqctl", *args], capture_output=True, text=True,
                          env=full_env, timeout=timeout, stdin=subprocess.DEVNULL, cwd=cwd)
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def cli():
    return run_cli


def write_yaml(tmp_path: Path, text: str, name: str = "milvus.yaml") -> Path:
    """Write a dedented YAML snippet into tmp_path (the config tests' input files)."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path
