"""The operator's own commands (stop, start, logs) and the waits around them.

Commands given as strings are split into argv and run without a shell unless the operator
opts in with ``--shell``; their output is kept (tail only) as evidence in the journal.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shlex
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlparse

from mqctl.errors import InputError, PreconditionError

OUTPUT_TAIL = 2000  # characters of a command's output kept as evidence


@dataclass
class CommandRun:
    """What running one operator command showed."""

    command: str
    returncode: int | None
    seconds: float
    output_tail: str


def split_command(command: str, *, shell: bool) -> list[str] | str:
    if shell:
        return command
    try:
        argv = shlex.split(command)
    except ValueError as err:
        raise InputError(f"cannot split command {command!r}: {err}", hint="quote it properly, or pass --shell") from err
    if not argv:
        raise InputError("empty command", hint="pass the command that stops/starts Milvus")
    return argv


def run_command(command: str, *, shell: bool = False, timeout: float = 600) -> CommandRun:
    """Run an operator command to completion; a missing program is reported, not raised."""
    started = time.monotonic()
    try:
        proc = subprocess.run(
            split_command(command, shell=shell),
            shell=shell,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        code, output = proc.returncode, (proc.stdout or "") + (proc.stderr or "")
    except FileNotFoundError as err:
        code, output = None, f"program not found: {err.filename}"
    except subprocess.TimeoutExpired as err:
        code, output = None, f"timed out after {timeout:.0f} s: {err.output or ''}"
    return CommandRun(command, code, round(time.monotonic() - started, 3), output[-OUTPUT_TAIL:])


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.25) -> bool:
    """Poll `predicate` until it is true or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def http_healthy(url: str, timeout: float = 2.0) -> bool:
    """Milvus's /healthz answers 200 with `OK` only when every component is healthy."""
    import httpx

    from mqctl import http

    try:
        response = http.request("GET", url, timeout=timeout)
    except (httpx.HTTPError, http.DeadlineExceeded, http.BodyTooLarge):
        return False
    return response.status_code == 200 and "OK" in response.text


def port_open(uri: str, timeout: float = 1.0) -> bool:
    """True when something accepts TCP connections at the host:port of `uri`."""
    try:
        parsed = urlparse(uri if "://" in uri else f"tcp://{uri}")
        with socket.create_connection((parsed.hostname or "127.0.0.1", parsed.port or 19530), timeout=timeout):
            return True
    except (OSError, ValueError):  # ValueError: a port that is not a number, or a bracket missing
        return False


MILVUS_LOG_TIME = re.compile(r"\[(\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d+) ([+-]\d\d:\d\d)\]")


def log_time(line: str) -> dt.datetime | None:
    """The timestamp Milvus puts at the start of each log line (`[2026/11/22 05:07:12.265 +00:00]`)."""
    match = MILVUS_LOG_TIME.search(line)
    if not match:
        return None
    return dt.datetime.strptime(f"{match.group(1)} {match.group(2)}", "%Y/%m/%d %H:%M:%S.%f %z")


@dataclass
class MilvusLog:
    """Milvus's log, read from a file (from an offset) or from an operator command's output."""

    file: str | None = None
    command: str | None = None
    shell: bool = False

    @property
    def available(self) -> bool:
        return bool(self.file or self.command)

    def mark(self) -> int:
        """Where the log ends now, so later reads only see what comes after."""
        try:
            return os.path.getsize(self.file) if self.file else 0
        except OSError:
            return 0

    def lines_since(self, offset: int, since: dt.datetime) -> list[str]:
        if self.file:
            try:
                with open(self.file, "rb") as handle:
                    handle.seek(offset if offset <= os.path.getsize(self.file) else 0)
                    text = handle.read().decode("utf-8", errors="replace")
            except OSError as err:
                raise PreconditionError(
                    f"cannot read the Milvus log {self.file}: {err.strerror}",
                    hint="pass the file Milvus writes its log to with --log-file",
                ) from None
        else:
            text = self._command_output()
        return [line for line in text.splitlines() if (stamp := log_time(line)) is not None and stamp >= since]

    def _command_output(self) -> str:
        try:
            proc = subprocess.run(
                split_command(self.command or "", shell=self.shell),
                shell=self.shell,
                capture_output=True,
                text=True,
                timeout=60,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            raise PreconditionError(f"--log-cmd {self.command!r} failed: {err}") from None
        if proc.returncode != 0:
            raise PreconditionError(
                f"--log-cmd {self.command!r} exited {proc.returncode}: {proc.stderr.strip()[-300:]}"
            )
        return proc.stdout + proc.stderr

    def wait_for(self, wanted: Callable[[str], bool], *, offset: int, since: dt.datetime, timeout: float) -> str | None:
        """The last line matching `wanted` written after `since`, waiting up to `timeout` for one."""
        found: list[str] = []

        def seen() -> bool:
            found[:] = [line for line in self.lines_since(offset, since) if wanted(line)]
            return bool(found)

        wait_until(seen, timeout, interval=0.5)
        return found[-1] if found else None
