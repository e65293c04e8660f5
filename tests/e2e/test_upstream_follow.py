"""`mqctl replay --to-spark --follow --woodpecker` on a WAL that upstream's own code grows while the query runs: a
copy of the Woodpecker v0.1.13 fixture (written through Milvus 2.6's wp adapter), its etcd state in a real etcd,
then the reference writer opens the log again as a streaming node taking the pchannel over does (Woodpecker fences
the last segment and starts a new one) and appends an insert, a delete and a time tick. The follow query must pick
the new segment up, and the rows it wrote must be the manifest's, message for message, exactly once."""

from __future__ import annotations

import shutil
import signal
import time

import pytest

from tests.helpers import upstream_writer as upstream
from tests.helpers.follow import batches, start_follow, wait_for_batches
from tests.helpers.paths import IN_CI
from tests.helpers.streaming_meta import put

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.etcd]

if upstream.go_binary() is None:
    if IN_CI:
        pytest.fail("no `go` on PATH: CI=true on a machine that has Go (.ci/run) must build the reference writer")
    pytest.skip("no `go` on PATH: the reference writer cannot be built on this machine", allow_module_level=True)

LINE = upstream.LINES[0]  # the 2.6 line: Milvus's own wp adapter appends


def test_follow_picks_up_what_upstreams_writer_appends(spark, tmp_path, etcd_url):
    import httpx

    source = upstream.UPSTREAM_FIXTURES / f"{LINE.name}-local"
    folder = tmp_path / source.name
    shutil.copytree(source, folder)
    httpx.post(f"{etcd_url}/v3/kv/deleterange", json={"key": "AA==", "range_end": "AA=="}).raise_for_status()
    for key, value in upstream.etcd_items(folder):
        put(etcd_url, key.decode(), value)
    writer = upstream.build(LINE, tmp_path)
    before = upstream.manifest(folder)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    proc, _, _ = start_follow(upstream.wal_path(folder), "upstream_fixture", out, ckpt)
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 300
        wait_for_batches(proc, lines, len(before["logs"][0]["entries"]), deadline)
        upstream.run_phase(writer, folder, etcd_url, "local", "append")
        after = upstream.manifest(folder)
        added = after["logs"][0]["entries"][len(before["logs"][0]["entries"]) :]
        assert [e["type"] for e in added] == ["Insert", "Delete", "TimeTick"]
        assert {e["segment_id"] for e in added} == {max(e["segment_id"] for e in before["logs"][0]["entries"]) + 1}
        wait_for_batches(proc, lines, len(after["logs"][0]["entries"]), deadline)
        proc.send_signal(signal.SIGINT)
        assert proc.stderr is not None and proc.stdout is not None
        stderr, stdout = proc.stderr.read(), proc.stdout.read()
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, "".join(lines) + stderr
    read = sum(batch[2] for batch in batches(lines))
    assert read == len(after["logs"][0]["entries"]), "".join(lines) + stderr
    assert "stopped: SIGINT" in " ".join(stdout.split()), stdout + stderr
    rows = sorted((r["pk"], r["_op"], r["_ts"], r["_seq"]) for r in spark.read.parquet(str(out)).collect())
    assert rows == upstream.replayed_rows(after)
    assert [r for r in rows if r[0] in (20, 21) or (r[0] == 11 and r[1] == "delete" and r[3] >= 2 * 10**10)]
