"""Ctrl-C, SIGTERM and SIGHUP at any moment after the interpreter reached mqctl end in one line,
`error: interrupted (...)`, and exit 3 (with --json, the one error object on stdout): while the CLI is imported,
while a command waits on a server, while its result is printed; once the exit code is decided a signal can no
longer change it. Every run is a real process; the moments "while module X is imported" and "right after the
exit code is decided" are made exact by a launcher that signals the process itself there, as a person pressing
Ctrl-C at that instant would."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.helpers.cli import signal_during_spark
from tests.helpers.paths import FIXTURES, REPO

ROCKSMQ = str(FIXTURES / "rocksmq" / "rdb_data")
NAMES = {"SIGINT": "Ctrl-C", "SIGTERM": "SIGTERM", "SIGHUP": "SIGHUP"}

# the console script's own lines (pip's wrapper: sys.argv[0] is the script, then `from mqctl.cli import main`),
# with an import hook that signals the process when `target` starts to be imported
AT_IMPORT = """
import importlib.abc, os, signal, sys
class SignalAt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == {target!r}:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.{signal})
        return None
sys.meta_path.insert(0, SignalAt())
sys.argv = ["mqctl", *{args!r}]
from mqctl.cli import main
sys.exit(main())
"""

# the signal right after the exit code is decided and the result printed
AFTER_RESULT = """
import os, signal, sys
sys.argv = ["mqctl", *{args!r}]
from mqctl import interrupts
decided = interrupts.after_result
def then_signal(code):
    decided(code)
    os.kill(os.getpid(), signal.{signal})
interrupts.after_result = then_signal
from mqctl.cli import main
sys.exit(main())
"""


def launch(script: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
        timeout=120,
    )


def assert_interrupted(result: subprocess.CompletedProcess[str], signal_name: str, *, json_mode: bool) -> None:
    assert result.returncode == 3, (result.returncode, result.stdout, result.stderr)
    assert result.stderr == f"error: interrupted ({NAMES[signal_name]})\n", result.stderr
    if json_mode:
        error = json.loads(result.stdout)["error"]
        assert error["kind"] == "aborted" and error["code"] == 3 and NAMES[signal_name] in error["message"]
    else:
        assert result.stdout == ""


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("module", ["mqctl.cli", "click", "typer", "rich.console", "mqctl.cli.channels"])
def test_a_signal_while_the_cli_is_imported_is_one_line(module, signal_name):
    # a --json run never imports Rich (tests/cli/test_startup_imports.py): there the signal has no moment to arrive
    for json_mode in (False,) if module == "rich.console" else (False, True):
        args = ["channels", "list", "--rocksmq", ROCKSMQ, *(["--json"] if json_mode else [])]
        result = launch(AT_IMPORT.format(target=module, signal=signal_name, args=args))
        assert_interrupted(result, signal_name, json_mode=json_mode)


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_a_signal_after_the_exit_code_is_decided_changes_nothing(signal_name):
    args = ["channels", "list", "--rocksmq", ROCKSMQ, "--json"]
    result = launch(AFTER_RESULT.format(signal=signal_name, args=args))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert json.loads(result.stdout)["channels"]  # the whole result, as without the signal


def console_script() -> str:
    script = Path(sys.executable).with_name("mqctl")
    return str(script) if script.exists() else shutil.which("mqctl") or ""


@pytest.fixture(scope="module")
def silent_server():
    """A TCP server that accepts and never answers: a NATS client waits on it for its whole timeout."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        yield f"nats://127.0.0.1:{server.getsockname()[1]}"


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_the_console_script_waiting_on_a_server_stops_in_one_line(silent_server, signal_name):
    if not console_script():
        pytest.skip("the mqctl console script is not installed (pip install -e .)")
    for json_mode in (False, True):
        command = [console_script(), "channels", "list", "--nats", silent_server, "--timeout", "60"]
        proc = subprocess.Popen(
            [*command, *(["--json"] if json_mode else [])],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "NO_COLOR": "1"},
        )
        time.sleep(1.5)  # well inside the command: connected, waiting for the server's INFO
        proc.send_signal(getattr(signal, signal_name))
        stdout, stderr = proc.communicate(timeout=60)
        assert_interrupted(
            subprocess.CompletedProcess(command, proc.returncode, stdout, stderr), signal_name, json_mode=json_mode
        )


@pytest.mark.parametrize("how", [{"PYTHONWARNINGS": "error"}, {"PYTHONWARNINGS": "error::DeprecationWarning"}])
def test_warnings_as_errors_do_not_stop_a_command(how):
    result = subprocess.run(
        [sys.executable, "-W", "error", "-m", "mqctl", "channels", "list", "--rocksmq", ROCKSMQ, "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **how},
        timeout=120,
    )
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert json.loads(result.stdout)["channels"]


@pytest.mark.spark
@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_a_signal_to_the_process_group_during_a_spark_replay_is_one_line(tmp_path, signal_name):
    """As a terminal's Ctrl-C (or a service manager's stop) does: the signal goes to every process of the group,
    mqctl, its JVM and the Python workers, while the job runs; what is printed after Spark's start-up banner is
    the one line, no Python traceback, no Java stack."""
    code, after_start, stdout = signal_during_spark(
        "replay", "--to-spark", "--rocksmq", str(ROCKSMQ), "--collection", "items", "--output", str(tmp_path / "out"),
        signum=getattr(signal, signal_name),
    )  # fmt: skip
    assert code == 3, after_start
    assert after_start == ["planning the replay ...", f"error: interrupted ({NAMES[signal_name]})"], after_start
    assert stdout == ""
