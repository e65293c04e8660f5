"""`retention apply` interrupted at any moment after the confirmation reports what the streams hold, read back
from the store, never what it meant to do: a real nats-server (live --nats) or a real natsmq store (--nats-store)
is changed, the process signals itself at the N-th call into mqctl's MQ code after the confirmation, for N
spread over the whole apply (updates, restores, verification, closing, the read-back itself), and the report is
then compared with the limits the server holds."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers.natsmq import max_age_keeping, natsmq_yaml, stream_limits
from tests.helpers.paths import FIXTURES, REPO
from tests.helpers.servers import start_nats

STORE = FIXTURES / "natsmq" / "store"
POINTS = {"live": 10, "store": 6}  # moments per source (each a real apply: ~1 s live, ~3 s on a store)

# after `_confirmed` returns, count the calls into mqctl/mq/ and mqctl/interrupts.py and signal at call {at}
# (0: only count, and write the count to MQCTL_TEST_COUNT at exit)
SWEEP = """
import atexit, os, signal, sys
sys.argv = ["mqctl", *{args!r}]
at, counted = {at}, [0]
def profile(frame, event, arg):
    if event != "call" or not ("/mqctl/mq/" in frame.f_code.co_filename or frame.f_code.co_filename.endswith(
            "/mqctl/interrupts.py")):
        return
    counted[0] += 1
    if counted[0] == at:
        os.kill(os.getpid(), signal.{signal})
from mqctl.mq import retention_apply
confirmed = retention_apply._confirmed
def confirmed_then_count(confirm, plan):
    confirmed(confirm, plan)
    sys.setprofile(profile)
retention_apply._confirmed = confirmed_then_count
atexit.register(lambda: open(os.environ["MQCTL_TEST_COUNT"], "w").write(str(counted[0])))
from mqctl.cli import main
sys.exit(main())
"""


def run_apply(args: list[str], at: int, signal: str, count_file: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SWEEP.format(args=args, at=at, signal=signal))],
        capture_output=True,
        text=True,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "NO_COLOR": "1", "MQCTL_TEST_COUNT": str(count_file)},
        timeout=180,
    )


def dml_limits(url: str) -> dict[str, tuple]:
    return {name: limits[:3] for name, limits in stream_limits(url).items()}


class Source:
    """A fresh copy of the fixture's store for each run: served live (--nats), or given as --nats-store."""

    def __init__(self, kind: str, folder: Path):
        self.kind, self.folder, self.runs = kind, folder, 0

    def fresh(self) -> Path:
        self.runs += 1
        store = self.folder / f"store-{self.runs}"
        shutil.copytree(STORE, store)
        return store

    def limits_after(self, args_for, at: int, signal: str, count_file: Path):
        """(the run, the limits before, the limits after) for one apply signalled at call `at`."""
        store = self.fresh()
        server = self.folder / f"run-{self.runs}"
        server.mkdir()
        proc, url = start_nats(server, store_dir=store) if self.kind == "live" else (None, "")
        try:
            if proc is None:  # --nats-store: the store is read by a server of the test's own, before and after
                before = self._served(store)
                result = run_apply(args_for(str(store)), at, signal, count_file)
                return result, before, self._served(store)
            before = dml_limits(url)
            result = run_apply(args_for(url), at, signal, count_file)
            return result, before, dml_limits(url)
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=10)

    def _served(self, store: Path) -> dict[str, tuple]:
        copy = self.folder / f"served-{self.runs}-{len(list(self.folder.iterdir()))}"
        shutil.copytree(store, copy)
        server = self.folder / f"{copy.name}-server"
        server.mkdir()
        proc, url = start_nats(server, store_dir=copy)
        try:
            return dml_limits(url)
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def check_report(result: subprocess.CompletedProcess[str], before: dict, after: dict, new: dict) -> str:
    """The report against the limits the server holds; returns what the report said (for the sweep's spread)."""
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr + result.stdout, result.stderr
    changed = sorted(name for name in new if new[name] != before[name])
    holding_new = sorted(name for name in changed if after[name] == new[name])
    holding_old = sorted(name for name in changed if after[name] == before[name])
    if result.returncode == 0:
        report = json.loads(result.stdout)
        assert report["verified"] is True and holding_new == changed, (report, after)
        return "applied"
    assert result.returncode == 3, (result.returncode, result.stdout, result.stderr)
    error = json.loads(result.stdout)["error"]
    message = error["message"]
    assert error["kind"] == "aborted" and message.startswith("interrupted ("), message
    assert len([line for line in result.stderr.splitlines() if line.startswith("error:")]) == 1, result.stderr
    if "before any change: nothing changed" in message or "no stream was changed" in message:
        assert holding_old == changed, (message, after)
        return "nothing changed"
    if re.search(r"all \d+ stream\(s\) hold the new limits", message):
        assert holding_new == changed, (message, after)
        return "all new"
    named_new = re.search(r"hold the new limits \(([^)]*)\)", message)
    named_old = re.search(r"keep the old ones \(([^)]*)\)", message)
    assert (sorted(named_new[1].split(", ")) if named_new else []) == holding_new, (message, after)
    assert (sorted(named_old[1].split(", ")) if named_old else []) == holding_old, (message, after)
    return "part"


@pytest.mark.parametrize("kind", ["live", "store"])
def test_an_interrupt_at_any_moment_reports_what_the_store_holds(tmp_path, kind):
    config = natsmq_yaml(tmp_path, max_age=max_age_keeping(STORE), max_msgs="200")
    option = "--nats" if kind == "live" else "--nats-store"

    def args_for(location: str) -> list[str]:
        return ["retention", "apply", "--config", str(config), option, location, "--yes", "--json"]

    source = Source(kind, tmp_path)
    count_file = tmp_path / "count"
    whole, before, new = source.limits_after(args_for, 0, "SIGINT", count_file)  # no signal: the calls counted
    assert whole.returncode == 0 and json.loads(whole.stdout)["verified"] is True, whole.stderr
    assert new != before
    calls = int(count_file.read_text())
    assert calls > POINTS[kind] * 2, calls
    said = set()
    for index in range(1, POINTS[kind] + 1):
        at = max(1, calls * index // (POINTS[kind] + 1))
        signal = ("SIGINT", "SIGTERM")[index % 2]
        result, start, after = source.limits_after(args_for, at, signal, count_file)
        assert start == before
        said.add(check_report(result, before, after, new))
    assert said & {"nothing changed", "part", "all new"}, said  # the sweep met the apply half way, not only its end
