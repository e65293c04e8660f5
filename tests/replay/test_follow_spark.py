"""Follow mode on a real local Spark (Structured Streaming) over the real Milvus 2.3.5 fixtures.

Growth between runs is real MQ data: stored inserts and time ticks re-serialized with new keys and later
TSOs, appended to a copy of the RocksMQ store (RocksDB keys as Milvus writes them) or published to a
private nats-server over a copy of the natsmq store. Every output is read back with Spark (which honours
the file sink's `_spark_metadata` log) and compared with a batch read of the same source.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mqctl.mq.sources import SourceOptions
from tests.helpers.natsmq import publish
from tests.helpers.paths import NATS_STORE, REPO, ROCKSMQ
from tests.helpers.replay_follow import DML_0, batch_keys, follow, grown, output_keys

pytestmark = pytest.mark.spark


@pytest.fixture
def live_nats(tmp_path):
    """A live nats-server over a temporary copy of the natsmq fixture (tests publish to it)."""
    from mqctl.mq.nats.server import private_nats_server

    store = tmp_path / "store"
    shutil.copytree(NATS_STORE, store)
    with private_nats_server(store, writable=True) as url:
        yield url


# ---------------------------------------------------------------------------- helpers
def items_channel(source) -> str:
    """A DML channel that holds an insert of `items`."""
    from mqctl.mq.decode.messages import decode

    return next(
        ch.name
        for ch in source.list_channels()
        if "rootcoord-dml" in ch.name
        and any(
            (m := decode(raw.data, raw.headers)).type_code == 400 and m.collection == "items"
            for raw in source.iter_messages(ch.name)
        )
    )


def rocksmq_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "milvus" / "rdb_data"
    shutil.copytree(ROCKSMQ, copy)
    shutil.copytree(ROCKSMQ.with_name("rdb_data_meta_kv"), copy.with_name("rdb_data_meta_kv"))
    return copy


def rocksmq_append(store: Path, channel: str, payloads: list[bytes]) -> list[int]:
    """Append messages to a channel of a (copied) RocksMQ store, under new ids after its last one."""
    from rocksdict import Options, Rdict

    from mqctl.mq.rocksmq.reader import RocksMQSource

    with RocksMQSource(store) as source:
        bounds = source.id_range(channel)
    assert bounds is not None
    db = Rdict(str(store), options=Options(raw_mode=True))
    ids = [bounds[1] + 7 * (n + 1) for n in range(len(payloads))]  # gaps, as the shared id allocator leaves them
    try:
        for message_id, payload in zip(ids, payloads):
            db.put(f"{channel}/{message_id}".encode(), payload)
    finally:
        db.close()
    return ids


def rocksmq_purge(store: Path, channel: str, through: int) -> None:
    """What RocksMQ retention does: delete a channel's messages with ids up to `through`."""
    from rocksdict import Options, Rdict

    from mqctl.mq.rocksmq.reader import RocksMQSource

    with RocksMQSource(store) as source:
        doomed = [raw.id for raw in source.iter_messages(channel, None, through)]
    db = Rdict(str(store), options=Options(raw_mode=True))
    try:
        for message_id in doomed:
            db.delete(f"{channel}/{message_id}".encode())
    finally:
        db.close()


def nats_purge(url: str, channel: str, keep_from: int) -> None:
    """What JetStream max_age/max_bytes do: remove a stream's messages below a sequence."""
    from mqctl.mq.nats.client import JetStreamSource

    with JetStreamSource(url) as source:
        source._run(source.api(f"STREAM.PURGE.{channel}", {"seq": keep_from}))


# ---------------------------------------------------------------------------- the command, end to end
def test_cli_follow_writes_every_row_once_stops_on_sigint_and_resumes_with_nothing_new(spark, tmp_path):
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    command = [
        sys.executable, "-m", "mqctl", "replay", "--to-spark", "--follow", "--rocksmq", str(ROCKSMQ),
        "--collection", "items", "--output", str(out), "--checkpoint-location", str(ckpt),
        "--master", "local[2]", "--trigger", "1", "--wide",
    ]  # fmt: skip
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    try:
        deadline = time.monotonic() + 240
        assert proc.stderr is not None
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("batch 0:"):
                break
        assert any(line.startswith("batch 0: 39 rows from 352 messages") for line in lines), "".join(lines)
        time.sleep(2)  # idle triggers run meanwhile
        proc.send_signal(signal.SIGINT)
        stderr = proc.stderr.read()  # through the same buffer as readline: nothing read ahead is lost
        assert proc.stdout is not None
        stdout = proc.stdout.read()
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, "".join(lines) + stderr
    flat = " ".join(stdout.split())  # long paths wrap the lines at the terminal's width
    assert "stopped: SIGINT" in flat and "1 batch(es), 39 rows from 352 messages" in flat, stdout + stderr
    wide = "".join(lines) + stderr
    assert f"  {DML_0} at 470633384162885984: behind 0 messages" in wide  # after its last time tick
    assert output_keys(spark, out) == batch_keys(spark, {"rocksmq": str(ROCKSMQ)})
    saved = json.loads((ckpt / "mqctl-follow.json").read_text())
    assert saved["started_from"] == "earliest" and saved["source"] == f"rocksmq:{ROCKSMQ.resolve()}"

    again = subprocess.run(
        [*command[:-3], "--available-now", "--from", "latest", "--json"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    result = json.loads(again.stdout)
    assert result["resumed"] is True and result["batches"] == 0 and result["rows"] == 0
    assert result["stopped"] == "caught up (available now)" and result["started_from"] == "earliest"
    assert output_keys(spark, out) == batch_keys(spark, {"rocksmq": str(ROCKSMQ)})


# ---------------------------------------------------------------------------- growth, visibility, caps
def test_rocksmq_growth_is_read_once_and_only_up_to_the_last_time_tick(spark, tmp_path):
    from mqctl.mq.rocksmq.reader import RocksMQSource

    store = rocksmq_copy(tmp_path)
    source = SourceOptions(rocksmq=store)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    first, _ = follow(spark, source, out, ckpt)
    assert first.batches == 1 and first.rows == 39

    with RocksMQSource(store) as mq:
        insert, tick, pks = grown(mq, DML_0, 5000)
    [insert_id] = rocksmq_append(store, DML_0, [insert])
    buffered, _ = follow(spark, source, out, ckpt)
    assert buffered.batches == 0 and buffered.rows == 0  # no time tick after the insert yet: not visible

    [tick_id] = rocksmq_append(store, DML_0, [tick])
    third, batches = follow(spark, source, out, ckpt)
    assert third.batches == 1 and third.rows == len(pks) and third.messages == 2
    assert third.positions[DML_0] == tick_id + 1 and batches[0].behind == 0
    written = output_keys(spark, out)
    assert [key for key in written if key[1] >= 5000] == [("insert", pk, DML_0, insert_id) for pk in pks]
    assert written == batch_keys(spark, {"rocksmq": str(store)})


def test_max_messages_per_trigger_splits_the_backlog_into_batches_without_changing_the_rows(spark, tmp_path):
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    result, batches = follow(spark, SourceOptions(rocksmq=ROCKSMQ), out, ckpt, max_messages_per_trigger=100)
    assert result.messages == 352 and len(batches) == 4  # 352 messages, at most 100 a batch
    assert all(batch.messages <= 100 for batch in batches)
    assert output_keys(spark, out) == batch_keys(spark, {"rocksmq": str(ROCKSMQ)})


def test_nats_growth_between_runs_is_read_exactly_once(spark, live_nats, tmp_path):
    from mqctl.mq.nats.client import JetStreamSource

    source = SourceOptions(nats=live_nats)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    first, _ = follow(spark, source, out, ckpt)
    assert first.batches == 1 and first.rows == 8  # 6 inserts and 2 deletes after the switch to natsmq

    with JetStreamSource(live_nats) as mq:
        channel = items_channel(mq)
        insert, tick, pks = grown(mq, channel, 7000)
        before = mq.id_range(channel)
    assert before is not None
    publish(live_nats, channel, [insert, tick])
    second, _ = follow(spark, source, out, ckpt)
    assert second.batches == 1 and second.rows == len(pks) and second.positions[channel] == before[1] + 3
    written = output_keys(spark, out)
    assert [key for key in written if key[1] >= 7000] == [("insert", pk, channel, before[1] + 1) for pk in pks]
    assert written == batch_keys(spark, {"nats": live_nats})


# ---------------------------------------------------------------------------- data loss
def test_retention_overtaking_the_query_fails_it_unless_data_loss_is_allowed(spark, live_nats, tmp_path):
    from mqctl.errors import PreconditionError
    from mqctl.mq.nats.client import JetStreamSource

    source = SourceOptions(nats=live_nats)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    first, _ = follow(spark, source, out, ckpt)
    with JetStreamSource(live_nats) as mq:
        channel = items_channel(mq)
        lost_insert, lost_tick, lost_pks = grown(mq, channel, 8000)
        kept_insert, kept_tick, kept_pks = grown(mq, channel, 8100)
        last = mq.id_range(channel)
    assert last is not None
    publish(live_nats, channel, [lost_insert, lost_tick, kept_insert, kept_tick])
    nats_purge(live_nats, channel, last[1] + 3)  # the first two new messages go before the query read them

    with pytest.raises(PreconditionError) as failed:
        follow(spark, source, out, ckpt)
    message, position = failed.value.message, first.positions[channel]
    lost = last[1] + 3 - position  # the new two, and any the first run left behind its last time tick
    assert (
        f"channel {channel}: {lost} message(s) lost" in message and f"positions {position} to {last[1] + 2}" in message
    )
    assert not [key for key in output_keys(spark, out) if key[1] >= 8000]

    allowed, _ = follow(spark, source, out, ckpt, allow_data_loss=True)
    assert allowed.rows == len(kept_pks)
    new = sorted(key[1] for key in output_keys(spark, out) if key[1] >= 8000)
    assert new == kept_pks and not set(lost_pks) & set(new)


def test_rocksmq_purge_past_the_query_position_is_data_loss(spark, tmp_path):
    from mqctl.errors import PreconditionError
    from mqctl.mq.rocksmq.reader import RocksMQSource

    store = rocksmq_copy(tmp_path)
    source = SourceOptions(rocksmq=store)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    first, _ = follow(spark, source, out, ckpt)
    position = first.positions[DML_0]
    with RocksMQSource(store) as mq:
        insert, tick, _ = grown(mq, DML_0, 9000)
    ids = rocksmq_append(store, DML_0, [insert, tick, tick])
    rocksmq_purge(store, DML_0, ids[1])
    with pytest.raises(PreconditionError) as failed:
        follow(spark, source, out, ckpt)
    assert f"channel {DML_0}: messages (how many is unknown" in failed.value.message
    assert f"positions {position} to {ids[2] - 1}" in failed.value.message


def test_idle_trigger_reports_are_not_counted_as_batches(spark, tmp_path):
    """Spark reports an idle trigger every noDataProgressEventInterval, with offsets of a batch that never ran:
    a slow machine sees them between the first batch and the stop, and they are no batch."""
    import threading

    from mqctl.replay.follow import FollowRequest, run_follow
    from mqctl.replay.model import ReplayRequest

    interval = "spark.sql.streaming.noDataProgressEventInterval"
    previous = spark.conf.get(interval)
    spark.conf.set(interval, "100ms")
    replay = ReplayRequest(SourceOptions(rocksmq=ROCKSMQ), output=str(tmp_path / "out"), collection="items")
    request = FollowRequest(replay, str(tmp_path / "ckpt"), trigger_seconds=0.2)
    batches: list[Any] = []

    def stop_after_idle_triggers() -> None:
        while not batches:
            time.sleep(0.1)
        time.sleep(3)  # 15 idle triggers, and as many idle reports
        os.kill(os.getpid(), signal.SIGINT)

    stopper = threading.Thread(target=stop_after_idle_triggers, daemon=True)
    stopper.start()
    try:
        result = run_follow(request, spark=spark, on_batch=batches.append)
    finally:
        spark.conf.set(interval, previous)
    assert result.stopped == "SIGINT"
    assert [(b.batch, b.rows, b.messages) for b in batches] == [(0, 39, 352)]
    assert (result.batches, result.rows, result.messages) == (1, 39, 352)
