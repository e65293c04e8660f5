"""Watching a `replay --to-spark --follow` process: its stderr reports each micro-batch as `batch N: R rows from M
messages`; the tests read it until the messages they appended have been replayed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers.paths import REPO

BATCH = re.compile(r"^batch (\d+): ([\d,]+) rows from ([\d,]+) messages")


def batches(lines: list[str]) -> list[tuple[int, int, int]]:
    """(batch, rows, messages) of each batch line."""
    return [
        (int(m.group(1)), int(m.group(2).replace(",", "")), int(m.group(3).replace(",", "")))
        for m in map(BATCH.match, lines)
        if m
    ]


def wait_for_batches(proc: subprocess.Popen, lines: list[str], messages: int, deadline: float) -> None:
    """Read stderr into `lines` until the batches reported so far add up to `messages` messages."""
    assert proc.stderr is not None
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            return
        lines.append(line)
        if sum(batch[2] for batch in batches(lines)) >= messages:
            return


def start_follow(
    woodpecker: Path, collection: str, out: Path, checkpoint: Path
) -> tuple[subprocess.Popen, list[str], dict[str, str]]:
    """`python -m mqctl replay --to-spark --follow --woodpecker ...` writing Parquet to `out` every second on a
    local[2] Spark; returns the process, its command and environment (to run it again, e.g. --available-now)."""
    command = [
        sys.executable, "-m", "mqctl", "replay", "--to-spark", "--follow", "--woodpecker", str(woodpecker),
        "--collection", collection, "--output", str(out), "--checkpoint-location", str(checkpoint),
        "--master", "local[2]", "--trigger", "1",
    ]  # fmt: skip
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, command, env
