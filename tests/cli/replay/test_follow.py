"""Follow mode's checks that need no Spark: bad usage through the CLI (exit 2, one line, before any JVM
starts) and the pure logic of stream.py (sharing a batch cap, stream options) on the real RocksMQ fixture."""

from __future__ import annotations

import json

import pytest

from tests.helpers.paths import FIXTURES

ROCKSMQ = FIXTURES / "rocksmq" / "rdb_data"


def follow_args(tmp_path, *extra: str) -> list[str]:
    return [
        "replay", "--to-spark", "--follow", "--rocksmq", str(ROCKSMQ), "--collection", "items",
        "--output", str(tmp_path / "out"), *extra,
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--checkpoint-location", "CKPT", "--resume-file", "x.json"], "use --checkpoint-location DIR with --follow"),
        ([], "--follow needs --checkpoint-location DIR"),
        (["--checkpoint-location", "CKPT", "--mode", "append"], "--mode does not apply to --follow"),
        (["--checkpoint-location", "CKPT", "--to", "100"], "--follow reads without an end"),
        (["--checkpoint-location", "CKPT", "--trigger", "0"], "--trigger 0 is not a positive number"),
        (["--checkpoint-location", "CKPT", "--from", "yesterday"], "--from 'yesterday' is neither"),
        (["--checkpoint-location", "s3a://bucket/ckpt"], "only to a local path"),
    ],
)
def test_bad_follow_usage_is_one_line_and_exit_2(cli, tmp_path, extra, message):
    args = [str(tmp_path / "ckpt") if item == "CKPT" else item for item in extra]
    result = cli(*follow_args(tmp_path, *args))
    assert result.code == 2, result.stderr
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize("option", ["--checkpoint-location", "--available-now", "--allow-data-loss"])
def test_follow_options_without_follow_are_refused(cli, tmp_path, option):
    value = [str(tmp_path / "ckpt")] if option == "--checkpoint-location" else []
    result = cli(
        "replay", "--to-spark", "--rocksmq", str(ROCKSMQ), "--output", str(tmp_path / "out"), option, *value
    )  # fmt: skip
    assert result.code == 2 and f"{option} goes with --follow" in result.stderr


def test_output_or_checkpoint_inside_the_source_folders_is_refused(cli, tmp_path):
    inside = cli(*follow_args(tmp_path, "--checkpoint-location", str(ROCKSMQ / "ckpt")))
    assert inside.code == 2 and f"is inside the RocksMQ folder {ROCKSMQ}" in inside.stderr
    meta = ROCKSMQ.with_name("rdb_data_meta_kv")
    into_meta = cli(
        "replay", "--to-spark", "--follow", "--rocksmq", str(ROCKSMQ), "--output", str(meta / "x" / ".." / "out"),
        "--checkpoint-location", str(tmp_path / "ckpt"),
    )  # fmt: skip
    assert into_meta.code == 2 and f"is inside RocksMQ's metadata folder {meta}" in into_meta.stderr
    holding = cli(*follow_args(tmp_path, "--checkpoint-location", str(FIXTURES.parent)))
    assert holding.code == 2 and "holds the RocksMQ folder" in holding.stderr
    nested = cli(*follow_args(tmp_path, "--checkpoint-location", str(tmp_path / "out" / "ckpt")))
    assert nested.code == 2 and "overlap" in nested.stderr
    assert not (ROCKSMQ / "ckpt").exists() and not (tmp_path / "out").exists()


def test_a_checkpoint_of_spark_but_not_of_mqctl_or_of_another_query_is_refused(cli, tmp_path):
    foreign = tmp_path / "foreign"
    (foreign / "offsets").mkdir(parents=True)
    (foreign / "offsets" / "0").write_text("v1\n{}\n")
    result = cli(*follow_args(tmp_path, "--checkpoint-location", str(foreign)))
    assert result.code == 2 and "it is not a follow checkpoint of mqctl" in result.stderr

    other = tmp_path / "other"
    (other / "offsets").mkdir(parents=True)
    (other / "offsets" / "0").write_text("v1\n{}\n")
    state = {
        "format": "mqctl-follow/1",
        "source": f"rocksmq:{ROCKSMQ.resolve()}",
        "target": str((tmp_path / "out").resolve()),
        "selection": {"channels": "", "shape": "rows", "collection": "skus", "types": ""},
        "started_from": "earliest",
        "stream_options": {"startingOffsets": "earliest"},
        "created": "2026-01-01T00:00:00Z",
    }
    (other / "mqctl-follow.json").write_text(json.dumps(state))
    result = cli(*follow_args(tmp_path, "--checkpoint-location", str(other)))
    assert result.code == 2 and "belongs to a follow query of collection skus, not of collection items" in result.stderr


def test_a_batch_replay_into_a_source_folder_is_refused_too(cli, tmp_path):
    result = cli("replay", "--to-spark", "--rocksmq", str(ROCKSMQ), "--output", str(ROCKSMQ / "replayed"))
    assert result.code == 2 and f"is inside the RocksMQ folder {ROCKSMQ}" in result.stderr
    assert not (ROCKSMQ / "replayed").exists()
