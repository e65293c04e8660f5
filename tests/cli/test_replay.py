"""`mqctl replay --to-spark` end to end through the CLI, against the real Milvus 2.3.5 fixtures."""

from __future__ import annotations

import json
import socket

import pytest

from tests.helpers.cli import run_cli_subprocess
from tests.helpers.paths import NATS_STORE, ROCKSMQ
from tests.helpers.replay import expected_deletes, expected_inserts, replayed
from tests.helpers.servers import free_port


@pytest.fixture
def cli():
    """Replay starts Spark (a JVM) and changes the environment for it: each run gets a fresh interpreter."""
    return run_cli_subprocess


@pytest.mark.spark
def test_nats_store_rows_to_parquet_match_what_was_inserted(cli, spark, tmp_path):
    out = tmp_path / "skus"
    result = cli(
        "replay",
        "--to-spark",
        "--nats-store",
        str(NATS_STORE),
        "--collection",
        "skus",
        "--output",
        str(out),
        "--partitions",
        "2",
        "--master",
        "local[2]",
        "--json",
    )
    assert result.code == 0, result.stderr
    summary = result.json()
    expected_rows = len(expected_inserts("natsmq", "skus")) + len(expected_deletes("natsmq", "skus"))
    assert summary["written"] and summary["rows"] == expected_rows and summary["schema_origin"] == "inferred"
    assert summary["source"] == f"nats-store:{NATS_STORE.resolve()}" and summary["messages"] > summary["rows"]
    assert summary["messages"] == sum(c["messages"] for c in summary["channels"]) and summary["rows_per_second"] > 0
    inserts, deletes = replayed(spark.read.parquet(str(out)).collect(), "skus")
    assert inserts == expected_inserts("natsmq", "skus") and deletes == expected_deletes("natsmq", "skus")


@pytest.mark.spark
def test_config_source_messages_as_json_with_checkpoint(cli, spark, tmp_path):
    config = tmp_path / "milvus.yaml"
    config.write_text(f"mq:\n  type: rocksmq\nrocksmq:\n  path: {ROCKSMQ}\n")
    out, ckpt = tmp_path / "messages", tmp_path / "replay.ckpt"
    args = (
        "replay",
        "--to-spark",
        "--config",
        str(config),
        "--shape",
        "messages",
        "--types",
        "insert,delete",
        "--output",
        str(out),
        "--format",
        "json",
        "--partition-by",
        "type",
        "--resume-file",
        str(ckpt),
        "--master",
        "local[2]",
    )
    first = cli(*args)
    assert first.code == 0, first.stderr
    assert "run 1" in first.stdout and "Spark start-up" in first.stdout
    frame = spark.read.json(str(out))
    totals = {
        (r["type"], r["collection"]): r["n"]
        for r in frame.groupBy("type", "collection").sum("rows").withColumnRenamed("sum(rows)", "n").collect()
    }
    assert totals[("Insert", "items")] == len(expected_inserts("rocksmq", "items"))
    assert totals[("Delete", "skus")] == len(expected_deletes("rocksmq", "skus"))
    assert {r.replay_run for r in frame.select("replay_run").distinct().collect()} == {1}
    positions = json.loads(ckpt.read_text())["positions"]

    second = cli(*args, "--json")
    assert second.code == 0, second.stderr
    assert second.json()["written"] is False and second.json()["rows"] == 0
    assert json.loads(ckpt.read_text())["positions"] == positions and spark.read.json(str(out)).count() == frame.count()

    other_types = cli(*[("insert" if arg == "insert,delete" else arg) for arg in args])
    assert (
        other_types.code == 2
        and "belongs to a replay of types insert,delete, not of types insert" in other_types.stderr
    )


@pytest.mark.spark
def test_a_table_outlives_the_run_that_wrote_it(cli, spark, tmp_path):
    """Each CLI run is a new Spark session: the table must be in a catalog that remembers it."""
    args = (
        "replay",
        "--to-spark",
        "--rocksmq",
        str(ROCKSMQ),
        "--collection",
        "skus",
        "--table",
        "skus_t",
        "--master",
        "local[1]",
    )
    first = cli(*args, "--json", cwd=str(tmp_path))
    assert first.code == 0, first.stderr
    again = cli(*args, "--mode", "append", "--partitions", "1", cwd=str(tmp_path))
    assert again.code == 0, again.stderr
    channels = len(first.json()["channels"])
    assert f"--partitions 1 raised to {channels}: every channel is read in at least one partition" in again.stderr
    refused = cli(*args, "--mode", "error", cwd=str(tmp_path))
    assert refused.code == 3 and "table skus_t already exists and --mode is error" in refused.stderr
    stored = spark.read.parquet(str(tmp_path / "spark-warehouse" / "skus_t")).count()
    assert first.json()["rows"] > 0 and stored == 2 * first.json()["rows"]


def test_unknown_channel_is_exit_2(cli, tmp_path):
    result = cli(
        "replay",
        "--to-spark",
        "--rocksmq",
        str(ROCKSMQ),
        "--channels",
        "by-dev-rootcoord-dml_99",
        "--output",
        str(tmp_path / "o"),
    )
    assert result.code == 2 and "Traceback" not in result.stderr
    assert "unknown channel 'by-dev-rootcoord-dml_99'" in result.stderr and "by-dev-rootcoord-dml_0" in result.stderr


@pytest.mark.parametrize("name", ["nope", "²"])  # "²".isdigit() holds, int("²") once crashed the stream scan
def test_collection_not_in_stream_and_no_milvus_is_exit_2(cli, tmp_path, name):
    result = cli(
        "replay", "--to-spark", "--rocksmq", str(ROCKSMQ), "--collection", name, "--output", str(tmp_path / "o")
    )
    assert result.code == 2 and "Traceback" not in result.stderr
    assert f"collection '{name}' not found in the stream" in result.stderr and "--milvus" in result.stderr


def test_existing_output_with_mode_error_is_exit_3(cli, tmp_path):
    (tmp_path / "o").mkdir()
    result = cli(
        "replay", "--to-spark", "--rocksmq", str(ROCKSMQ), "--collection", "items", "--output", str(tmp_path / "o")
    )
    assert result.code == 3 and "already exists and --mode is error" in result.stderr
    assert "--mode append" in result.stderr


@pytest.mark.extra  # pyspark
def test_missing_java_says_how_to_install_it(cli, tmp_path):
    result = cli(
        "replay",
        "--to-spark",
        "--rocksmq",
        str(ROCKSMQ),
        "--collection",
        "items",
        "--output",
        str(tmp_path / "o"),
        env={"JAVA_HOME": str(tmp_path / "no-java")},
    )
    assert result.code == 3 and "Traceback" not in result.stderr
    assert "no Java runtime found" in result.stderr and "openjdk-17-jre-headless" in result.stderr
    assert not (tmp_path / "o").exists()


def test_unreachable_nats_is_exit_3(cli, tmp_path):
    result = cli(
        "replay",
        "--to-spark",
        "--nats",
        f"nats://127.0.0.1:{free_port()}",
        "--timeout",
        "1",
        "--output",
        str(tmp_path / "o"),
    )
    assert result.code == 3 and "Traceback" not in result.stderr
    assert "cannot connect to NATS" in result.stderr


def test_unreachable_milvus_never_prints_the_password_of_its_uri(cli, tmp_path):
    milvus = f"http://reader:s3cr3t-pw@127.0.0.1:{free_port()}"
    result = cli(
        "replay",
        "--to-spark",
        "--rocksmq",
        str(ROCKSMQ),
        "--collection",
        "items",
        "--milvus",
        milvus,
        "--output",
        str(tmp_path / "o"),
    )
    assert result.code == 3 and "Traceback" not in result.stderr
    assert "cannot connect to Milvus at http://127.0.0.1:" in result.stderr
    assert "s3cr3t-pw" not in result.stderr + result.stdout and "reader" not in result.stderr


@pytest.mark.parametrize(
    "args,message",
    [
        ((), "choose where to replay to: --to-spark"),
        (("--to-spark", "--output", "o"), "no MQ source given"),
        (("--to-spark", "--rocksmq", str(ROCKSMQ), "--nats", "nats://x", "--output", "o"), "choose one source"),
        (("--to-spark", "--rocksmq", str(ROCKSMQ)), "give exactly one target"),
        (("--to-spark", "--rocksmq", str(ROCKSMQ), "--output", "o", "--format", "xml"), "--format 'xml'"),
        (
            ("--to-spark", "--rocksmq", str(ROCKSMQ), "--output", "o", "--resume-file", "c", "--mode", "overwrite"),
            "--mode overwrite cannot go with it",
        ),
        (
            ("--to-spark", "--rocksmq", str(ROCKSMQ), "--output", "o", "--from", "last week"),
            "--from 'last week' is neither",
        ),
        (("--to-spark", "--rocksmq", str(ROCKSMQ), "--output", "o", "--to", "soon"), "--to 'soon' is neither"),
        # str.isdigit() holds for these, int() refuses them: once an internal error
        (("--to-spark", "--rocksmq", str(ROCKSMQ), "--output", "o", "--from", "²"), "--from '²' is neither"),
        (("--to-spark", "--rocksmq", str(ROCKSMQ), "--output", "o", "--from", "id:²"), "--from 'id:²' is neither"),
        (("--to-spark", "--rocksmq", str(ROCKSMQ), "--output", "o", "--to", "tso:①"), "--to 'tso:①' is neither"),
        (("--to-spark", "--rocksmq", str(ROCKSMQ), "--output", "o", "--master", "mars"), "not a Spark master URL"),
        (
            ("--to-spark", "--rocksmq", str(ROCKSMQ), "--output", "o", "--remote", "http://h:15002"),
            "--remote 'http://h:15002' is not a Spark Connect URL",
        ),
        (("--to-spark", "--rocksmq", str(ROCKSMQ), "--output", "o", "--spark-conf", "novalue"), "not KEY=VALUE"),
        (
            (
                "--to-spark",
                "--rocksmq",
                str(ROCKSMQ),
                "--output",
                "o",
                "--resume-file",
                "c",
                "--to",
                "2024-05-01T00:00:00Z",
            ),
            "--resume-file needs --to as a sequence/id",
        ),
        (
            ("--to-spark", "--rocksmq", str(ROCKSMQ), "--output", "o", "--partition-by", "nope"),
            "--partition-by 'nope' is not a column of the messages shape",
        ),
    ],
)
def test_bad_usage_is_one_line_and_exit_2(cli, tmp_path, args, message):
    result = cli("replay", "--shape", "messages", *args, cwd=str(tmp_path))
    assert result.code == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


def test_broken_checkpoint_is_exit_2_with_its_location(cli, tmp_path):
    ckpt = tmp_path / "c.json"
    ckpt.write_text("{not json")
    result = cli(
        "replay", "--to-spark", "--rocksmq", str(ROCKSMQ), "--output", str(tmp_path / "o"), "--resume-file", str(ckpt)
    )
    assert result.code == 2 and f"{ckpt}:1:2" in result.stderr


@pytest.mark.spark
def test_executors_without_mqctl_fail_in_one_line_with_the_fix(cli, tmp_path):
    import sys

    bare_python = getattr(sys, "_base_executable", None)  # the interpreter under the venv, without mqctl
    if not bare_python or bare_python == sys.executable:
        pytest.skip("needs a virtualenv whose base interpreter lacks mqctl")
    result = cli(
        "replay",
        "--to-spark",
        "--rocksmq",
        str(ROCKSMQ),
        "--collection",
        "items",
        "--output",
        str(tmp_path / "o"),
        "--master",
        "local[1]",
        env={"PYSPARK_PYTHON": bare_python, "PYTHONPATH": ""},  # the workers must not find mqctl on a path
        cwd=str(tmp_path),
    )
    assert result.code == 3 and "Traceback" not in result.stderr
    assert f"error: the Spark job failed: Python worker on {socket.gethostname()} (Python " in result.stderr
    assert f"{bare_python}, no runtime shipped) cannot import " in result.stderr
    assert "pip install mqctl into that Python, point PYSPARK_PYTHON" in result.stderr


@pytest.mark.spark
def test_same_job_on_a_pseudo_cluster_with_separate_executors(cli, spark, tmp_path):
    """`--master local-cluster[...]` runs executors in JVMs of their own, as a real cluster does."""
    from mqctl.mq.rocksmq.reader import RocksMQSource

    out = tmp_path / "messages.orc"
    result = cli(
        "replay",
        "--to-spark",
        "--rocksmq",
        str(ROCKSMQ),
        "--output",
        str(out),
        "--format",
        "orc",
        "--master",
        "local-cluster[2,1,1024]",
        "--json",
    )
    assert result.code == 0, result.stderr
    with RocksMQSource(ROCKSMQ) as rocks:
        stored = sum(channel.messages for channel in rocks.list_channels())
    assert result.json()["messages"] == stored == spark.read.orc(str(out)).count()


def test_the_old_resume_file_option_still_works_with_a_note(cli, tmp_path):
    """--checkpoint was the resume file's name (as Milvus's channel checkpoints and Spark's checkpoint folder were
    also called): kept for one release, it reads the same file and says the new name on stderr."""
    ckpt = tmp_path / "c.json"
    ckpt.write_text("{not json")
    result = cli(
        "replay", "--to-spark", "--rocksmq", str(ROCKSMQ), "--output", str(tmp_path / "o"), "--checkpoint", str(ckpt)
    )
    assert result.code == 2 and f"{ckpt}:1:2" in result.stderr
    assert "--checkpoint FILE is now --resume-file FILE" in result.stderr
    both = cli(
        "replay", "--to-spark", "--rocksmq", str(ROCKSMQ), "--output", "o", "--checkpoint", "a", "--resume-file", "b"
    )
    assert both.code == 2 and "give one of them" in both.stderr
