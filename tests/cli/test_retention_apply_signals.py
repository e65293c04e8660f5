"""A stopping signal during `retention apply` leaves a report that says what happened: before the last update
the changed streams go back (exit 3, nothing changed); after it the limits are verified and reported applied
(exit 0). The signal is sent by the process itself at a chosen point, so the test does not race the apply."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.natsmq import max_age_keeping, natsmq_yaml, stream_limits
from tests.helpers.paths import FIXTURES, REPO
from tests.helpers.servers import start_nats

STORE = FIXTURES / "natsmq" / "store"

# patch one function of mqctl so that the process signals itself when it is called, then run the CLI
SCRIPT = """
import os, signal, sys
import importlib
module, _, attr = {module!r}.partition(":")
target = importlib.import_module(module)
target = getattr(target, attr) if attr else target
original = getattr(target, {name!r})
calls = []
def signalling(*args, **kwargs):
    calls.append(1)
    if len(calls) == 1:
        os.kill(os.getpid(), signal.{signal})
    return original(*args, **kwargs)
setattr(target, {name!r}, signalling)
from mqctl.cli import main
main({args!r})
"""


def run_signalling(module: str, name: str, signal: str, args: list[str]) -> subprocess.CompletedProcess:
    script = SCRIPT.format(module=module, name=name, signal=signal, args=args)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


@pytest.fixture
def live(tmp_path):
    store = tmp_path / "store"
    shutil.copytree(STORE, store)
    proc, url = start_nats(tmp_path, store_dir=store)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def _limits(url) -> set[tuple]:
    return {limits[:3] for name, limits in stream_limits(url).items() if name.startswith("by-dev-rootcoord-dml")}


@pytest.mark.parametrize("signal", ["SIGINT", "SIGTERM"])
def test_a_signal_after_the_last_update_is_reported_as_applied(tmp_path, live, signal):
    config = natsmq_yaml(tmp_path, max_age=max_age_keeping(STORE), max_msgs="200")
    args = ["retention", "apply", "--config", str(config), "--nats", live, "--yes", "--json"]
    result = run_signalling("mqctl.mq.retention_apply", "verify", signal, args)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["verified"] is True and report["applied"], report
    assert len(_limits(live)) == 1 and next(iter(_limits(live)))[2] == 200  # every stream holds the new limits
    assert run_cli("retention", "show", "--config", str(config), "--nats", live).code == 0  # no drift left


def test_a_signal_before_the_last_update_puts_every_stream_back(tmp_path, live):
    before = _limits(live)
    config = natsmq_yaml(tmp_path, max_age=max_age_keeping(STORE), max_msgs="200")
    args = ["retention", "apply", "--config", str(config), "--nats", live, "--yes", "--json"]
    result = run_signalling("mqctl.mq.nats.client:JetStreamSource", "update_config", "SIGINT", args)
    assert result.returncode == 3, result.stdout + result.stderr
    error = json.loads(result.stdout)["error"]
    assert error["kind"] == "aborted" and error["message"].startswith("interrupted (Ctrl-C); read back from ")
    assert "no stream was changed" in error["message"]  # what the server holds, read back after the interrupt
    assert "Traceback" not in result.stderr
    assert _limits(live) == before  # the one stream changed went back
