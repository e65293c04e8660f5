"""`mqctl replay --to-spark --follow --woodpecker PATH` on a Woodpecker folder that grows while the query runs: the
fixture's `dml_0` messages (written by a real Milvus 2.3.5, in the 2.6 envelope) as a local-layout log whose active
segment's `data.log` gets blocks appended and whose next segment appears, as Woodpecker's disk writer does
(tests/helpers/woodpecker_segments.py), with a 2.6 transaction committed only after the query read past its
BeginTxn. The output is read back with Spark and compared with a batch read of the final folder."""

from __future__ import annotations

import base64
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import woodpecker_segments as w
from tests.helpers.follow import batches, start_follow, wait_for_batches
from tests.helpers.paths import REPO
from tests.helpers.protowire import field_int
from tests.helpers.streaming_meta import base36
from tests.helpers.woodpecker_wal import fixture_logs

DML_0 = "by-dev-rootcoord-dml_0"
PER_BLOCK = 4
TXN = 7


class LocalSegment:
    """A local-layout segment written as Woodpecker's disk writer does: the header, then whole blocks appended one
    write at a time, then (finalized) the index records and the footer."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True)
        self.path = folder / "data.log"
        self.spans: list[tuple[int, int, int, int, int]] = []
        self.entries = 0
        self.path.write_bytes(w.header(0))

    def append(self, messages: list[tuple[bytes, dict[str, str]]]) -> None:
        for i in range(0, len(messages), PER_BLOCK):
            records = [w.message(*m) for m in messages[i : i + PER_BLOCK]]
            start = self.path.stat().st_size
            data = w.block(len(self.spans), self.entries, records)
            with self.path.open("ab") as out:
                out.write(data)
            self.spans.append((len(self.spans), start, len(data), self.entries, self.entries + len(records) - 1))
            self.entries += len(records)

    def finalize(self) -> None:
        index_offset = self.path.stat().st_size
        index = b"".join(w.index(*span) for span in self.spans)
        size = index_offset + len(index)
        with self.path.open("ab") as out:
            out.write(index + w.footer(len(self.spans), self.entries, size, index_offset, len(index)))


def _txn(properties: dict[str, str]) -> dict[str, str]:
    return {**properties, "_tx": base64.b64encode(field_int(1, TXN)).decode()}


def _marker(kind: int, tso: int) -> tuple[bytes, dict[str, str]]:
    return b"", _txn({"_v": "2", "_t": str(kind), "_tt": base36(tso)})


@pytest.fixture(scope="module")
def growth():
    """dml_0's messages cut into what the folder holds at first and what is added later: an insert (message 23)
    inside transaction 7, begun in the first part and committed in the second, after four more messages."""
    [log] = [log for log in fixture_logs() if log.channel == DML_0]
    messages = log.messages
    assert messages[23][1]["_t"] == "2"  # an insert of `items`
    tick = int(messages[23][1]["_tt"], 36)
    commit_tso = int(messages[31][1]["_tt"], 36) + 1
    first = [*messages[:23], _marker(900, tick), (messages[23][0], _txn(messages[23][1])), *messages[24:28]]
    second = [*messages[28:32], _marker(901, commit_tso)]
    return {"first": first, "second": second, "third": messages[32:80], "fourth": messages[80:], "commit": commit_tso}


def _initial(root: Path, first) -> LocalSegment:
    """Segments 0 and 1 finalized (12 entries each), segment 2 active with the rest of `first`."""
    segments = [first[0:12], first[12:24], first[24:]]
    for number, messages in enumerate(segments):
        segment = LocalSegment(root / "1" / str(number))
        segment.append(messages)
        if number < 2:
            segment.finalize()
    return segment


def test_a_batch_never_ends_inside_an_open_transaction(tmp_path, growth):
    from mqctl.mq.woodpecker.source import WoodpeckerSource
    from mqctl.replay.reader.open_transactions import transaction_safe_end, transaction_safe_start

    root = tmp_path / "wp"
    active = _initial(root, growth["first"])
    with WoodpeckerSource(root) as source:
        ids = [raw.id for raw in source.iter_messages("1")]
        begin = ids[23]
        last = ids[-1]
        assert transaction_safe_end(source, "1", ids[0], last + 1) == begin  # held before the BeginTxn
        assert transaction_safe_end(source, "1", ids[0], begin) == begin  # nothing open before it
        assert transaction_safe_end(source, "1", begin, last + 1) == begin  # its outcome is not stored yet
        assert transaction_safe_start(source, "1", last + 1) == begin  # --from latest starts before it too
    active.append(growth["second"])
    with WoodpeckerSource(root) as source:
        ids = [raw.id for raw in source.iter_messages("1")]
        commit = ids[-1]
        assert transaction_safe_end(source, "1", ids[0], commit + 1) == commit + 1
        # a cap ending inside the transaction: held before it, or, from its BeginTxn on, carried on to its commit
        assert transaction_safe_end(source, "1", ids[0], ids[26]) == begin
        assert transaction_safe_end(source, "1", begin, ids[26]) == commit + 1


def _keys(rows) -> list[tuple]:
    """(op, pk, channel, message id, time tick) of every row, sorted: duplicates stay visible."""
    return sorted((row["_op"], row["id"], row["_channel"], row["_seq"], row["_ts"]) for row in rows)


@pytest.mark.spark
def test_cli_follow_reads_a_growing_wal_exactly_once_and_resumes(spark, tmp_path, growth):
    root, out, ckpt = tmp_path / "wp", tmp_path / "out", tmp_path / "ckpt"
    active = _initial(root, growth["first"])
    first, second, third = len(growth["first"]), len(growth["second"]), len(growth["third"])
    proc, command, env = start_follow(root, "items", out, ckpt)
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 300
        wait_for_batches(proc, lines, 1, deadline)
        # batch 0 ends before the BeginTxn (message 23): the open transaction and what follows it wait
        assert batches(lines)[:1] and batches(lines)[0][0] == 0 and batches(lines)[0][2] == 23, "".join(lines)
        active.append(growth["second"])  # the active segment's data.log grows, the transaction commits
        wait_for_batches(proc, lines, first + second, deadline)
        active.finalize()  # the segment rolls: its index and footer, and a new segment appears
        third_segment = LocalSegment(root / "1" / "3")
        third_segment.append(growth["third"])
        wait_for_batches(proc, lines, first + second + third, deadline)
        proc.send_signal(signal.SIGINT)
        assert proc.stderr is not None and proc.stdout is not None
        stderr = proc.stderr.read()
        stdout = proc.stdout.read()
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, "".join(lines) + stderr
    assert sum(batch[2] for batch in batches(lines)) == first + second + third, "".join(lines) + stderr
    assert "stopped: SIGINT" in " ".join(stdout.split()), stdout + stderr

    def batch_keys() -> list[tuple]:
        frame = spark.read.format("milvus_mq").option("woodpecker", str(root)).option("collection", "items").load()
        return _keys(frame.collect())

    written = _keys(spark.read.parquet(str(out)).collect())
    assert written == batch_keys() and len(written) == len(set(written))
    txn_rows = [key for key in written if key[3] == 2 * 10**10]  # first[24], the insert in the transaction: 2/0
    assert txn_rows and {key[4] for key in txn_rows} == {growth["commit"]}

    third_segment.finalize()  # Woodpecker finalizes a segment before it opens the next
    LocalSegment(root / "1" / "4").append(growth["fourth"])  # while the query is stopped
    again = subprocess.run(
        [*command[:-2], "--available-now", "--json"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0, again.stderr
    result = __import__("json").loads(again.stdout)
    assert result["resumed"] is True and result["messages"] == len(growth["fourth"])
    written = _keys(spark.read.parquet(str(out)).collect())
    assert written == batch_keys() and len(written) == len(set(written))
