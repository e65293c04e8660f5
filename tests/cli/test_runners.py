"""The in-process runner is a faithful stand-in for `python -m mqctl`: same bytes, same exit codes, and an
internal error's traceback reaches the test report."""

from __future__ import annotations

import os
import signal
import socket
import sys
import time

import pytest

from tests.helpers.cli import run_cli, run_cli_subprocess
from tests.helpers.paths import FIXTURES, SAMPLES

ROCKSMQ = str(FIXTURES / "rocksmq" / "rdb_data")
COMMANDS = {
    "root help": ("--help",),
    "a Rich table": ("channels", "list", "--rocksmq", ROCKSMQ),
    "findings, exit 1": ("config", "validate", str(SAMPLES / "broken-mq-config.yaml")),
    "one JSON object": ("channels", "peek", "by-dev-rootcoord-dml_0", "--rocksmq", ROCKSMQ, "--limit", "3", "--json"),
    "a usage error, exit 2": ("config", "explain", "--no-such-option"),
    "an input error as JSON": ("config", "explain", str(SAMPLES / "absent.yaml"), "--json"),
    "a plan refused, exit 3": (
        "migrate",
        "plan",
        "--config",
        str(SAMPLES / "milvus-2.3-standalone-rocksmq.yaml"),
        "--to",
        "natsmq",
        "--milvus",
        "http://127.0.0.1:1",
    ),
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_both_runners_print_the_same_bytes(name):
    args = COMMANDS[name]
    in_process, subprocess = run_cli(*args), run_cli_subprocess(*args)
    assert (in_process.code, in_process.stdout, in_process.stderr) == (
        subprocess.code,
        subprocess.stdout,
        subprocess.stderr,
    )
    assert in_process.stdout or in_process.stderr


def test_a_json_error_after_a_json_result_in_an_earlier_run_is_still_printed():
    """The terminal prints one JSON object per run; an earlier in-process run must not use it up."""
    assert run_cli("channels", "list", "--rocksmq", ROCKSMQ, "--json").code == 0
    failed = run_cli("config", "explain", str(SAMPLES / "absent.yaml"), "--json")
    assert failed.code == 2 and failed.json()["error"]["kind"] == "input"


def test_the_environment_streams_and_directory_are_put_back(tmp_path):
    before = (dict(os.environ), os.getcwd(), sys.stdin, sys.stdout, sys.stderr, signal.getsignal(signal.SIGALRM))
    result = run_cli("config", "explain", "milvus.yaml", env={"MQCTL_NOW": "2027-01-01T00:00:00Z"}, cwd=tmp_path)
    assert result.code == 2 and str(tmp_path / "milvus.yaml") not in result.stderr  # relative to the cwd given
    assert "milvus.yaml" in result.stderr
    after = (dict(os.environ), os.getcwd(), sys.stdin, sys.stdout, sys.stderr, signal.getsignal(signal.SIGALRM))
    assert after == before


def test_an_internal_error_keeps_its_traceback_for_the_report(monkeypatch, capsys, tmp_path):
    """The CLI turns a bug into one line; the in-process runner also writes its traceback where pytest shows
    a failing test's output."""
    import mqctl.sandbox.server

    def broken(directory):
        raise RuntimeError("lost http://admin:S3CRETPW@db:2379 half way")

    monkeypatch.setattr(mqctl.sandbox.server, "status", broken)
    result = run_cli("sandbox", "status", "--dir", str(tmp_path), "--json")
    assert result.code == 3 and result.json()["error"]["kind"] == "internal"
    assert "Traceback" not in result.stderr and "S3CRETPW" not in result.stdout + result.stderr
    report = capsys.readouterr().err
    assert "Traceback (most recent call last)" in report and 'raise RuntimeError("lost' in report


def test_a_run_past_its_timeout_fails_the_test_with_what_it_printed():
    """A server that accepts and never answers: mqctl would wait its own --timeout, the runner stops first."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"nats://127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        with pytest.raises(AssertionError, match=r"did not finish within 0\.5 s"):
            run_cli("channels", "list", "--nats", url, "--timeout", "30", timeout=0.5)
        assert time.monotonic() - started < 10
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
