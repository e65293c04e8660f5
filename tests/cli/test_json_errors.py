"""`--json` contract for failures: exactly one object on stdout, `{"error": {...}}`, same exit code as in text mode."""

from __future__ import annotations

import datetime as dt
import json
import os
import pty
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.helpers.cli import CliResult, run_cli
from tests.helpers.files import write_yaml
from tests.helpers.paths import FIXTURES, REPO, SAMPLES
from tests.helpers.servers import free_port

ERROR_FIELDS = {"code", "kind", "message", "file", "line", "column", "hint"}


def error_of(result, code: int, kind: str) -> dict:
    """The error object of a run that must have failed with `code`: stdout holds that one object and nothing else."""
    assert result.code == code, (result.code, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    parsed = json.loads(result.stdout)  # raises on a second object or any other text
    assert list(parsed) == ["error"]
    error = parsed["error"]
    assert set(error) == ERROR_FIELDS
    assert error["code"] == code and error["kind"] == kind
    assert isinstance(error["message"], str) and error["message"]
    return error


def same_code_without_json(*args: str) -> int:
    return run_cli(*[a for a in args if a != "--json"]).code


@pytest.fixture
def bad_yaml(tmp_path):
    return write_yaml(tmp_path, "mq:\n  type: [unclosed\nrocksmq: {}\n")


def finished(proc: subprocess.Popen, timeout: float = 120) -> CliResult:
    stdout, stderr = proc.communicate(timeout=timeout)
    return CliResult(proc.returncode, stdout, stderr)


def start(argv: list[str], stdin=subprocess.DEVNULL, env: dict | None = None) -> subprocess.Popen:
    """`python ARGV` the way run_cli runs mqctl, for tests that signal it, type into it or patch it first."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1", **(env or {})}
    return subprocess.Popen(
        [sys.executable, *argv],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        text=True,
        env=env,
        preexec_fn=_interruptible,
    )


def _interruptible() -> None:
    """A test worker may run with SIGINT ignored (pytest-xdist's workers do), and a child inherits that:
    mqctl, as a background job should, then leaves Ctrl-C ignored. The user's terminal never does."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# one failure per command group, each through its own command
def test_config_input_error_names_file_line_and_column(bad_yaml):
    error = error_of(run_cli("config", "explain", str(bad_yaml), "--json"), 2, "input")
    assert error["file"] == str(bad_yaml) and error["line"] == 3 and error["column"] == 8
    assert error["message"].startswith("invalid YAML") and error["hint"]
    assert same_code_without_json("config", "explain", str(bad_yaml), "--json") == 2


def test_file_without_a_line(tmp_path):
    path = tmp_path / "milvus.yaml"
    path.write_bytes(b"mq:\n  type: \xff\n")
    error = error_of(run_cli("config", "validate", str(path), "--json"), 2, "input")
    assert (error["file"], error["line"], error["column"]) == (str(path), None, None)
    assert error["message"].startswith("not UTF-8")


def test_config_precondition_masks_the_password(tmp_path):
    config = write_yaml(tmp_path, "mq:\n  type: default\n")
    url = f"http://root:S3CRETPW@127.0.0.1:{free_port()}"
    result = run_cli("config", "explain", str(config), "--etcd", url, "--json")
    error = error_of(result, 3, "precondition")
    assert "unreachable" in error["message"]
    assert "S3CRETPW" not in result.stdout + result.stderr


def test_channels_unreachable_server():
    url = f"nats://127.0.0.1:{free_port()}"
    error = error_of(run_cli("channels", "list", "--nats", url, "--json"), 3, "precondition")
    assert "cannot connect to NATS" in error["message"] and error["hint"]


def test_retention_missing_source(tmp_path):
    args = ("retention", "apply", "--config", str(SAMPLES / "milvus-2.3-standalone-natsmq.yaml"), "--json")
    error = error_of(run_cli(*args), 2, "input")
    assert "needs the streams" in error["message"] and "--nats" in error["hint"]
    assert same_code_without_json(*args) == 2


def test_migrate_bad_config_and_missing_option(bad_yaml):
    error = error_of(run_cli("migrate", "--to", "natsmq", "--config", str(bad_yaml), "--json"), 2, "input")
    assert error["file"] == str(bad_yaml) and error["line"] == 3
    error = error_of(run_cli("migrate", "plan", "--json"), 2, "input")
    assert error["message"] == "no --config given" and error["file"] is None


def test_replay_without_target():
    error = error_of(run_cli("replay", "--rocksmq", str(REPO), "--json"), 2, "input")
    assert "--to-spark" in error["message"]


def test_sandbox_not_a_sandbox(tmp_path):
    args = ("sandbox", "status", "--dir", str(tmp_path / "none"), "--json")
    error = error_of(run_cli(*args), 3, "precondition")
    assert "is not a sandbox" in error["message"] and "sandbox up" in error["hint"]
    assert same_code_without_json(*args) == 3


# the command line itself: click's usage errors become the same object
@pytest.mark.parametrize(
    "args, words",
    [
        (("config", "explain", "--bogus", "--json"), "No such option '--bogus'"),
        (("sandbox", "up", "--dir", "x", "--timeout", "abc", "--json"), "Invalid value for '--timeout'"),
        (("config", "get", "--json"), "Missing argument 'FILE'"),
        (("channels", "nosuch", "--json"), "No such command 'nosuch'"),
        (("retention", "show", "--json", "--wide", "--nats"), "'--nats' requires an argument"),
    ],
)
def test_usage_errors(args, words):
    result = run_cli(*args)
    error = error_of(result, 2, "usage")
    assert words in error["message"] and error["hint"].startswith("see `mqctl") and error["hint"].endswith(" --help`")
    # the human form on stderr is the one documented line, not click's Usage/Try/Error block
    assert result.stderr.splitlines() == [f"error: {error['message']} — {error['hint']}"]
    plain = run_cli(*(a for a in args if a != "--json"))
    assert plain.code == 2 and plain.stderr.splitlines() == [f"error: {error['message']} — {error['hint']}"]


def test_root_help_states_the_contract():
    assert '{"error": {"code", "kind",' in run_cli("--help").stdout


def test_findings_are_a_result_not_an_error():
    result = run_cli("config", "validate", str(SAMPLES / "broken-mq-config.yaml"), "--json")
    assert result.code == 1
    assert "error" not in result.json() and result.json()["findings"]


def test_without_json_stdout_stays_empty(bad_yaml):
    result = run_cli("config", "explain", str(bad_yaml))
    assert result.code == 2 and result.stdout == "" and result.stderr.startswith(f"error: {bad_yaml}:3:8: ")


def test_json_after_double_dash_is_a_value(tmp_path):
    result = run_cli("config", "explain", str(tmp_path / "absent.yaml"), "--", "--json")
    assert result.code == 2 and result.stdout == ""


BROKEN_STATUS = textwrap.dedent(
    """
        import sys
        import mqctl.sandbox.server

        def broken(directory):
            raise RuntimeError("lost http://admin:S3CRETPW@db:2379 half way")

        mqctl.sandbox.server.status = broken
        from mqctl.cli import main
        main(sys.argv[1:])
        """
)


def test_unexpected_exception_is_an_internal_error_object(tmp_path):
    """A bug (here a domain function that raises) still answers with the object, the password masked."""
    result = finished(start(["-c", BROKEN_STATUS, "sandbox", "status", "--dir", str(tmp_path), "--json"]))
    error = error_of(result, 3, "internal")
    assert error["message"] == "internal error: RuntimeError: lost http://admin:******@db:2379 half way"
    assert "--debug" in error["hint"] and "S3CRETPW" not in result.stdout + result.stderr
    assert finished(start(["-c", BROKEN_STATUS, "sandbox", "status", "--dir", str(tmp_path)])).code == 3


def test_debug_adds_the_traceback_and_keeps_code_and_object(tmp_path):
    args = ["-c", BROKEN_STATUS, "--debug", "sandbox", "status", "--dir", str(tmp_path), "--json"]
    result = finished(start(args))
    assert result.code == 3 and json.loads(result.stdout)["error"]["kind"] == "internal"
    assert "Traceback (most recent call last)" in result.stderr and "def broken" not in result.stdout


def test_ctrl_c_while_waiting_on_a_server():
    """SIGINT while `channels list` waits on a server that accepts and never answers."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        proc = start(["-m", "mqctl", "channels", "list", "--nats", f"nats://127.0.0.1:{port}", "--json"])
        silent.settimeout(60)
        connection, _ = silent.accept()  # the CLI is inside its NATS handshake now
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
        result = finished(proc)
        connection.close()
    error = error_of(result, 3, "aborted")
    assert error["message"] == "interrupted (Ctrl-C)"


def test_declined_confirmation_is_an_error_object(tmp_path):
    """On a terminal a `no` at the prompt ends with exit 3 and nothing written: the object says so."""
    config = write_yaml(tmp_path, "mq:\n  type: rocksmq\n")
    primary, secondary = pty.openpty()
    proc = start(["-m", "mqctl", "config", "set", str(config), "mq.type", "pulsar", "--json"], stdin=secondary)
    os.close(secondary)
    os.write(primary, b"n\n")
    result = finished(proc)
    os.close(primary)
    error = error_of(result, 3, "aborted")
    assert error["message"].startswith("stopped before a result")
    assert config.read_text() == "mq:\n  type: rocksmq\n"


def test_a_fixed_now_moves_every_age_and_a_bad_one_is_an_input_error(tmp_path):
    """MQCTL_NOW is the moment ages are measured against: a year on, the fixture's streams are a year older;
    an unreadable value is one error naming the variable, before any store is opened."""
    store = str(FIXTURES / "natsmq" / "store")
    config = write_yaml(tmp_path, "mq:\n  type: natsmq\n")
    args = ("retention", "show", "--nats-store", store, "--config", str(config), "--json")

    def ages(env: dict | None = None) -> dict:
        return {
            c["name"]: c["actual"]["oldest_message_age_seconds"]
            for c in run_cli(*args, env=env).json()["channels"]
            if c["actual"]["messages"]
        }

    today = ages({"MQCTL_NOW": ""})  # empty: the wall clock, whatever the environment running the tests says
    later = ages({"MQCTL_NOW": "2099-01-01T00:00:00Z"})
    assert today and set(today) == set(later)
    year_2099 = dt.datetime(2099, 1, 1, tzinfo=dt.timezone.utc).timestamp()
    for name, age in later.items():
        assert age - today[name] == pytest.approx(year_2099 - time.time(), abs=120)
    bad = run_cli(*args, env={"MQCTL_NOW": "tomorrow"})
    error = error_of(bad, 2, "input")
    assert "MQCTL_NOW" in error["message"] and "ISO 8601" in error["message"]


def _nats_servers_over(folder) -> list[int]:
    """PIDs of nats-server processes whose command line names a file under `folder`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "nats-server" in argv and str(folder) in argv:
            found.append(int(proc.name))
    return found


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_a_store_read_cleans_up_and_reports_once(tmp_path, signum):
    """A stopping signal while `channels list --nats-store` reads through its private nats-server: exit 3, one
    error line and one JSON object, no private server left running and no private copy left in TMPDIR."""
    store = FIXTURES / "natsmq" / "store"
    for attempt in range(5):
        private = tmp_path / f"tmp{attempt}"
        private.mkdir()
        proc = start(
            ["-m", "mqctl", "channels", "list", "--nats-store", str(store), "--json"], env={"TMPDIR": str(private)}
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not _nats_servers_over(private) and proc.poll() is None:
            time.sleep(0.01)
        assert _nats_servers_over(private) or proc.poll() is not None, "the private nats-server never started"
        proc.send_signal(signum)
        result = finished(proc)
        if result.code != 0:
            break
        # A loaded machine let the whole read finish before the signal came: a complete answer, nothing left.
        assert result.json()["totals"]["channels"] == 5
        assert not _nats_servers_over(private) and not list(private.iterdir())
    else:
        pytest.fail("the read finished before the signal in every attempt")
    error = error_of(result, 3, "aborted")
    expected = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
    assert error["message"] == f"interrupted ({expected})"
    assert result.stderr.strip().splitlines()[-1] == f"error: interrupted ({expected})"
    assert not _nats_servers_over(private)
    assert not list(private.iterdir())
