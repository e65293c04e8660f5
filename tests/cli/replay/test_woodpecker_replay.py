"""Replay from a Woodpecker WAL into a real local Spark: the RocksMQ fixture's messages (written by a real Milvus
2.3.5) in the 2.6 envelope as Woodpecker segments (tests/helpers/woodpecker_wal.py), replayed as rows and as
messages, and compared with what was inserted and with the same replay from RocksMQ."""

from __future__ import annotations

import pytest

from tests.helpers import woodpecker_segments as w
from tests.helpers.cli import run_cli, run_cli_subprocess
from tests.helpers.replay import expected_deletes, expected_inserts, replayed
from tests.helpers.woodpecker_wal import write_wal


@pytest.mark.spark
@pytest.mark.parametrize("form", ["path", "file-url"])
def test_cli_replays_rows_through_the_woodpecker_source(spark, wal, tmp_path, form):
    """A `file://` output is written where it names, as a plain path is (the overlap guard resolves both)."""
    out = tmp_path / "items"
    output = str(out) if form == "path" else f"file://{out}"
    result = run_cli_subprocess(
        "replay", "--to-spark", "--woodpecker", str(wal), "--collection", "items", "--output", output,
        "--master", "local[2]", "--partitions", "2", "--json",
    )  # fmt: skip
    assert result.code == 0, result.stderr
    summary = result.json()
    assert summary["source"] == f"woodpecker:{wal.resolve()}" and summary["schema_origin"] == "stream"
    inserts, deletes = replayed(spark.read.parquet(str(out)).collect(), "items")
    assert inserts == expected_inserts("rocksmq", "items") and deletes == expected_deletes("rocksmq", "items")


@pytest.mark.spark
def test_cli_replays_rows_from_a_bucket(spark, tmp_path, logs):
    """The object layout in an S3 bucket (moto's server, signatures checked): the keys reach the executors through
    their environment only, never an option, and appear in no output."""
    pytest.importorskip("moto.server", reason="moto[server] of .[test]")
    from tests.helpers.s3 import moto_s3

    write_wal(tmp_path / "bucket" / "files" / "wp", logs, layout="object", active_last=True)
    out = tmp_path / "items"
    with moto_s3() as s3:
        s3.client().create_bucket(Bucket="wal")
        s3.upload(tmp_path / "bucket", "wal")
        s3.make_reader()
        s3.require_signatures()
        result = run_cli_subprocess(
            "replay", "--to-spark", "--woodpecker", "s3://wal/files/wp", "--s3-endpoint", s3.endpoint,
            "--collection", "items", "--output", str(out), "--master", "local[2]", "--partitions", "2", "--json",
            env=s3.env(),
        )  # fmt: skip
    assert result.code == 0, result.stderr
    assert result.json()["source"] == "woodpecker:s3://wal/files/wp"
    assert s3.reader_secret not in result.stdout + result.stderr
    inserts, deletes = replayed(spark.read.parquet(str(out)).collect(), "items")
    assert inserts == expected_inserts("rocksmq", "items") and deletes == expected_deletes("rocksmq", "items")


def test_a_corrupt_segment_stops_the_plan_in_one_line(tmp_path, logs):
    """Planning reads the logs (counts, ids): a block whose CRC fails stops the replay before Spark starts."""
    log = logs[0]
    write_wal(tmp_path / "wp", [log])
    path = tmp_path / "wp" / str(log.log_id) / "0" / "data.log"
    data = bytearray(path.read_bytes())
    data[len(w.header(0)) + 40] ^= 0x10  # inside the first block's data records
    path.write_bytes(bytes(data))
    result = run_cli(
        "replay", "--to-spark", "--woodpecker", str(tmp_path / "wp"), "--shape", "messages",
        "--output", str(tmp_path / "out"), "--master", "local[1]",
    )  # fmt: skip
    assert result.code == 3, result.stderr
    assert f"log {log.log_id} segment 0" in result.stderr and "CRC mismatch" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()


def test_woodpecker_options_are_checked_before_spark(tmp_path, wal):
    result = run_cli("replay", "--to-spark", "--woodpecker", str(tmp_path / "absent"), "--output", str(tmp_path / "o"))
    assert result.code == 2 and "does not exist" in result.stderr
    result = run_cli(
        "replay", "--to-spark", "--woodpecker", str(wal), "--from", "checkpoint", "--output", str(tmp_path / "o")
    )
    assert result.code == 2 and "--from checkpoint on a Woodpecker WAL needs --etcd URL" in result.stderr
    result = run_cli("replay", "--to-spark", "--woodpecker", str(wal), "--follow", "--output", str(tmp_path / "o"))
    assert result.code == 2 and "--follow needs --checkpoint-location DIR" in result.stderr
    result = run_cli(
        "replay", "--to-spark", "--woodpecker", str(wal), "--output", str(wal / "out"), "--shape", "messages"
    )
    assert result.code == 2 and "Woodpecker folder" in result.stderr


def test_a_wal_the_config_derives_is_checked_like_an_explicit_one(tmp_path):
    """--config of a 2.6 with local Woodpecker storage: <localStorage.path>/wp is read as --woodpecker names it, in
    batch, with --follow and with --from checkpoint: each stops at the same check with the same words."""
    w.local_segment(tmp_path / "data" / "wp" / "files" / "wp" / "1" / "0", [w.messages(3)])
    config = tmp_path / "milvus.yaml"
    config.write_text(
        f"mq:\n  type: woodpecker\nwoodpecker:\n  storage:\n    type: local\nlocalStorage:\n  path: {tmp_path}/data\n"
    )
    sources = {"derived": ("--config", str(config)), "explicit": ("--woodpecker", str(tmp_path / "data" / "wp"))}
    cases = {
        "batch": ("--partition-by", "nope"),
        "follow": ("--follow", "--checkpoint-location", str(tmp_path / "ck"), "--partition-by", "nope"),
        "from checkpoint": ("--from", "checkpoint", "--etcd", "http://127.0.0.1:1"),
    }
    for case, extra in cases.items():
        results = {
            name: run_cli("replay", "--to-spark", *source, "--output", str(tmp_path / "out"), *extra)
            for name, source in sources.items()
        }
        derived, explicit = results["derived"], results["explicit"]
        assert (derived.code, derived.stderr) == (explicit.code, explicit.stderr), case
        assert derived.code == (3 if case == "from checkpoint" else 2), derived.stderr
        wanted = "is unreachable" if case == "from checkpoint" else "--partition-by 'nope' is not a column"
        assert wanted in derived.stderr and "Traceback" not in derived.stderr
    assert not (tmp_path / "out").exists()


def test_help_states_the_verification_status():
    result = run_cli("replay", "--help")
    assert result.code == 0 and "not yet verified on a running 2.6" in " ".join(result.stdout.split())
