"""Two ways to run `mqctl ARGS` as a user would (no stdin, not a terminal, NO_COLOR=1, COLUMNS=200):

- `run_cli` (the default) calls `mqctl.cli.run` in this process with stdout, stderr, stdin, the environment
  and the working directory swapped for the call: fast, and an internal error's traceback lands in the
  pytest report (on the test's captured stderr).
- `run_cli_subprocess` starts `python -m mqctl`: for what needs a fresh interpreter — commands that start
  Spark (a JVM would stay in the pytest process), fork or kill themselves, or where signals are the point.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BASE_ENV = {"NO_COLOR": "1", "COLUMNS": "200"}
# what Spark itself prints while it starts, before mqctl's log configuration holds (not mqctl's to silence)
SPARK_START = ("WARNING: Using incubator modules", "Setting default log level", "To adjust logging level")


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def run_cli_subprocess(
    *args: str, env: Mapping[str, str] | None = None, timeout: float = 600, cwd: str | os.PathLike[str] | None = None
) -> CliResult:
    """Run `mqctl ARGS` as a real subprocess (no stdin, not a terminal), as a user or CI would; this checkout's
    mqctl whatever the working directory (PYTHONPATH), unless `env` sets PYTHONPATH itself."""
    from tests.helpers.paths import REPO

    python_path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    full_env = {**os.environ, **BASE_ENV, "PYTHONPATH": python_path, **(env or {})}
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


class _NotATerminal(io.StringIO):
    """An empty stdin, as `stdin=subprocess.DEVNULL` gives a subprocess: reads end at once, never a TTY."""

    def isatty(self) -> bool:
        return False


class CliTimeout(BaseException):
    """An in-process run took longer than its timeout (a BaseException, so the CLI's own handlers let it pass
    after the command's cleanups ran)."""


def run_cli(
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float = 600,
) -> CliResult:
    """Run `mqctl ARGS` in this process, as `python -m mqctl ARGS` would (minus installing signal handlers and
    exiting): same stdout, stderr and exit code as `run_cli_subprocess`. A run past `timeout` seconds fails
    the test (with what the command printed so far)."""
    out, err = io.StringIO(), io.StringIO()
    internal: list[str] = []
    try:
        with (
            _deadline(timeout),
            _environment({**BASE_ENV, **(env or {})}),
            _working_directory(cwd),
            _streams(_NotATerminal(), out, err),
            _internal_tracebacks(internal),
        ):
            code = _main(list(args))
    except CliTimeout:
        raise AssertionError(
            f"`mqctl {' '.join(args)}` did not finish within {timeout:g} s\nstdout:\n{out.getvalue()}\n"
            f"stderr:\n{err.getvalue()}"
        ) from None
    for text in internal:  # shown with the test's captured stderr when it fails
        sys.stderr.write(f"internal error inside `mqctl {' '.join(args)}`:\n{text}")
    return CliResult(code, out.getvalue(), err.getvalue())


def _main(args: list[str]) -> int:
    """`mqctl.cli.main` without `interrupts.install()` (the handlers would stay in pytest), `sys.exit`, and the
    `errors="backslashreplace"` it sets on a real stdout (a StringIO encodes nothing)."""
    from mqctl import cli

    try:
        if not args or args in (["--help"], ["-h"]) or args == ["--version"]:
            return cli.main(args)  # prints the root help or the version and returns, before any signal handler
        _reset_json_once()
        return cli.run(args)
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else (0 if done.code is None else 1)


def _reset_json_once() -> None:
    """The terminal prints at most one JSON object per process run; each in-process run is a run of its own."""
    terminal = sys.modules.get("mqctl.cli.terminal")
    if terminal is not None:
        terminal._json_printed = False  # type: ignore[attr-defined]


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise CliTimeout in the main thread after `seconds` (SIGALRM; blocking calls are interrupted too)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise CliTimeout

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def _environment(changes: Mapping[str, str]) -> Iterator[None]:
    """Apply `changes` to os.environ for the call, then put back exactly what was there (the command's own
    changes included)."""
    saved = dict(os.environ)
    os.environ.update(changes)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _working_directory(cwd: str | os.PathLike[str] | None) -> Iterator[None]:
    if cwd is None:
        yield
        return
    before = os.getcwd()
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(before)


@contextlib.contextmanager
def _streams(stdin: io.StringIO, stdout: io.StringIO, stderr: io.StringIO) -> Iterator[None]:
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved


@contextlib.contextmanager
def _internal_tracebacks(found: list[str]) -> Iterator[None]:
    """Keep the traceback of an unexpected exception the CLI turns into its one-line "internal error" (the
    subprocess runner would need --debug to show it)."""
    from mqctl import cli
    from mqctl.errors import MqctlError

    original = cli._traceback_for

    def keep(debug: bool) -> None:
        error = sys.exc_info()[1]
        if error is not None and not isinstance(error, MqctlError):
            found.append(traceback.format_exc())
        original(debug)

    cli._traceback_for = keep
    try:
        yield
    finally:
        cli._traceback_for = original


def migrate_plan(cli: Callable[..., CliResult], config: Path | str, to: str, version: str, *extra: str) -> CliResult:
    """`mqctl migrate plan --config CONFIG --to TO --milvus-version VERSION --json` through `cli`, against a Milvus
    URI nothing listens on (the plan is read from the config and etcd)."""
    return cli(
        "migrate",
        "plan",
        "--config",
        str(config),
        "--to",
        to,
        "--milvus",
        "http://127.0.0.1:19530",
        "--milvus-version",
        version,
        *extra,
        "--json",
    )


def signal_during_spark(*args: str, signum: int, after: float = 5) -> tuple[int, list[str], str]:
    """Run `mqctl ARGS` in a process group of its own and send `signum` to the whole group (mqctl, its JVM, the
    Python workers), as a terminal's Ctrl-C does, `after` seconds after Spark's start-up banner (the job runs by
    then); (exit code, the non-empty stderr lines but Spark's own start-up ones, stdout)."""
    from tests.helpers.paths import REPO

    proc = subprocess.Popen(
        [sys.executable, "-m", "mqctl", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        cwd=REPO,
        env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO)},
        start_new_session=True,
    )
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:  # Spark has started once its banner is out; the job follows within seconds
        lines.append(line)
        if line.startswith("Setting default log level"):
            break
    import time

    time.sleep(after)
    os.killpg(proc.pid, signum)
    stdout, rest = proc.communicate(timeout=300)
    printed = [line.rstrip("\n") for line in [*lines, *rest.splitlines(keepends=True)]]
    return proc.returncode, [line for line in printed if line.strip() and not line.startswith(SPARK_START)], stdout
