"""Follow mode end to end against a real Milvus 2.3.5 sandbox (RocksMQ and natsmq), through the CLI.

Rows are inserted before the query starts, while it runs, while it is stopped (SIGINT, then a restart on
the same checkpoint) and around a SIGKILL of the whole job; deletes too. The output's committed files (as
listed in the file sink's `_spark_metadata` log, the same files Spark reads back) must hold every insert
and every delete exactly once.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli_subprocess
from tests.helpers.paths import REPO

pytestmark = [pytest.mark.milvus, pytest.mark.spark]

COLLECTION = "follow"
BATCH_LINE = re.compile(r"^batch (\d+): ([\d,]+) rows")


class FollowProcess:
    """`mqctl replay --to-spark --follow` as a subprocess; its stderr lines are collected as they come."""

    def __init__(self, config: str, out: Path, ckpt: Path, *extra: str):
        command = [
            sys.executable, "-m", "mqctl", "replay", "--to-spark", "--follow", "--config", config,
            "--collection", COLLECTION, "--output", str(out), "--checkpoint-location", str(ckpt),
            "--master", "local[1]", "--partitions", "1", *extra,
        ]  # fmt: skip
        env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
        self.proc = subprocess.Popen(
            command,
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def rows(self) -> int:
        return sum(int(m.group(2).replace(",", "")) for line in self.lines if (m := BATCH_LINE.match(line)))

    def batches(self) -> int:
        return sum(1 for line in self.lines if BATCH_LINE.match(line))

    def wait(self, condition, what: str, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert self.proc.poll() is None, f"follow ended early ({self.proc.returncode}): {''.join(self.lines)}"
            assert time.monotonic() < deadline, f"no {what} within {timeout} s: {''.join(self.lines)}"
            time.sleep(0.2)

    def finish(self, timeout: float = 300) -> tuple[int, str]:
        stdout, _ = self.proc.communicate(timeout=timeout)
        self._reader.join(timeout=10)
        return self.proc.returncode, stdout

    def kill_all(self) -> None:
        """SIGKILL the command and everything it started (the Spark JVM and its Python workers)."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=60)


def committed_rows(out: Path) -> list[dict]:
    """The rows of the files the file sink committed (its `_spark_metadata` log), as Spark reads them back."""
    import pyarrow.parquet as pq

    files: set[str] = set()
    logs = [log for log in (out / "_spark_metadata").iterdir() if log.name.split(".")[0].isdigit()]  # no .crc
    for log in sorted(logs, key=lambda log: int(log.name.split(".")[0])):
        for line in log.read_text().splitlines()[1:]:  # first line: the log's version
            entry = json.loads(line)
            if entry.get("action") == "add":
                files.add(entry["path"].removeprefix("file://"))
            elif entry.get("action") == "delete":
                files.discard(entry["path"].removeprefix("file://"))
    rows: list[dict] = []
    for path in sorted(files):
        rows.extend(pq.read_table(path, columns=["id", "_op", "_seq"]).to_pylist())
    return rows


def milvus(info: dict):
    from pymilvus import MilvusClient

    return MilvusClient(uri=info["uri"])


def insert(info: dict, ids: range) -> None:
    from pymilvus import DataType

    client = milvus(info)
    try:
        if not client.has_collection(COLLECTION):
            schema = client.create_schema(auto_id=False)
            schema.add_field("id", DataType.INT64, is_primary=True)
            schema.add_field("vector", DataType.FLOAT_VECTOR, dim=4)
            client.create_collection(COLLECTION, schema=schema, num_shards=1)
        client.insert(COLLECTION, [{"id": i, "vector": [i / 10, 0.0, 0.0, 1.0]} for i in ids])
    finally:
        client.close()


def delete(info: dict, ids: list[int]) -> None:
    client = milvus(info)
    try:
        client.delete(COLLECTION, ids=ids)
    finally:
        client.close()


@pytest.fixture(params=["rocksmq", "natsmq"])
def box(request, tmp_path_factory):
    from mqctl.sandbox import server as sandbox

    folder = tmp_path_factory.mktemp(f"follow-{request.param}") / "milvus"
    sandbox.Sandbox(folder).create(request.param)
    info = vars(sandbox.up(str(folder), timeout=240))
    yield info
    run_cli_subprocess("sandbox", "down", "--dir", str(folder))
    shutil.rmtree(folder, ignore_errors=True)


def test_rows_inserted_before_during_and_between_runs_land_exactly_once(box, tmp_path):
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    inserted: list[int] = []
    deleted: list[int] = []

    insert(box, range(0, 100))  # before the query starts
    inserted += range(0, 100)
    first = FollowProcess(box["config"], out, ckpt, "--trigger", "1")
    first.wait(lambda: first.rows() >= 100, "batch with the first 100 rows")
    insert(box, range(100, 200))  # while it runs
    delete(box, list(range(0, 10)))
    inserted += range(100, 200)
    deleted += range(0, 10)
    first.wait(lambda: first.rows() >= 210, "batches with the rows inserted and deleted while running")
    first.proc.send_signal(signal.SIGINT)
    code, stdout = first.finish()
    assert code == 0 and "stopped: SIGINT" in stdout, "".join(first.lines) + stdout

    insert(box, range(200, 300))  # while it is stopped
    delete(box, list(range(100, 105)))
    inserted += range(200, 300)
    deleted += range(100, 105)
    second = FollowProcess(box["config"], out, ckpt, "--trigger", "1")
    second.wait(lambda: second.batches() >= 1, "a first batch after the restart")
    insert(box, range(300, 400))
    inserted += range(300, 400)
    time.sleep(1.5)  # about when the next batch is planned or written
    second.kill_all()  # SIGKILL: no cleanup, no commit of what was running

    insert(box, range(400, 450))
    inserted += range(400, 450)
    last = FollowProcess(box["config"], out, ckpt, "--available-now", "--json")
    code, stdout = last.finish()
    assert code == 0, "".join(last.lines)
    summary = json.loads(stdout)
    assert summary["resumed"] and summary["stopped"] == "caught up (available now)"

    rows = committed_rows(out)
    inserts = sorted(row["id"] for row in rows if row["_op"] == "insert")
    deletes = sorted(row["id"] for row in rows if row["_op"] == "delete")
    assert inserts == sorted(inserted)  # each exactly once: no duplicate, none missing
    assert deletes == sorted(deleted)
