"""No replay output may be, hold or lie inside the data it reads: refused before Spark starts, nothing touched."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.paths import FIXTURES


def fingerprint(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def sources(tmp_path):
    rocks = tmp_path / "volumes" / "rdb_data"
    shutil.copytree(FIXTURES / "rocksmq" / "rdb_data", rocks)
    shutil.copytree(FIXTURES / "rocksmq" / "rdb_data_meta_kv", tmp_path / "volumes" / "rdb_data_meta_kv")
    store = tmp_path / "nats"
    shutil.copytree(FIXTURES / "natsmq" / "store", store)
    (tmp_path / "link").symlink_to(rocks)
    return tmp_path


CASES = {
    "the store itself, overwritten": (["--nats-store", "nats"], ["--output", "nats", "--mode", "overwrite"], "is"),
    "the RocksMQ folder's parent": (["--rocksmq", "volumes/rdb_data"], ["--output", "volumes"], "holds"),
    "RocksMQ's metadata": (["--rocksmq", "volumes/rdb_data"], ["--output", "volumes/rdb_data_meta_kv"], "is"),
    "inside RocksMQ, appended": (
        ["--rocksmq", "volumes/rdb_data"],
        ["--output", "volumes/rdb_data/out", "--mode", "append"],
        "is inside",
    ),
    "through a symlink": (["--rocksmq", "volumes/rdb_data"], ["--output", "link/out"], "is inside"),
    "the resume file inside the store": (
        ["--nats-store", "nats"],
        ["--output", "out", "--resume-file", "nats/jetstream/resume.json"],
        "is inside",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_output_overlapping_a_source_is_refused_before_anything_runs(sources, case):
    source, target, how = CASES[case]
    before = {name: fingerprint(sources / name) for name in ("volumes", "nats")}
    result = run_cli("replay", "--to-spark", *source, *target, "--json", cwd=str(sources))
    assert result.code == 2, (result.code, result.stdout, result.stderr)
    error = result.json()["error"]
    assert error["kind"] == "input" and f" {how} " in error["message"], error
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert {name: fingerprint(sources / name) for name in ("volumes", "nats")} == before
    assert not (sources / "out").exists()


@pytest.fixture
def wal_folder(tmp_path, sources):
    """A Woodpecker folder (the RocksMQ fixture's messages as segments) beside the other sources."""
    from tests.helpers.woodpecker_wal import fixture_logs, write_wal

    root = sources / "wp"
    write_wal(root, fixture_logs(), active_last=True)
    return root


def _url_forms(root: Path, inside: str) -> dict[str, str]:
    """Every way Spark (Hadoop's Path) accepts to name `root/inside` as a local output."""
    absolute = root / inside
    dotted = root / "volumes" / ".." / inside
    return {
        "file:///": f"file://{absolute}",
        "file:/": f"file:{absolute}",
        "file://localhost/": f"file://localhost{absolute}",
        "file:relative": f"file:{inside}",
        "file:// with ..": f"file://{dotted}",
        "plain with ..": str(dotted),
        "relative": inside,
    }


@pytest.mark.parametrize("form", list(_url_forms(Path("/x"), "y")))
@pytest.mark.parametrize(
    ("source", "inside", "how"),
    [
        (["--rocksmq", "volumes/rdb_data"], "volumes", "holds"),
        (["--nats-store", "nats"], "nats", "is"),
        (["--woodpecker", "wp"], "wp", "is"),
    ],
    ids=["rocksmq-parent", "nats-store", "woodpecker"],
)
def test_every_output_form_spark_accepts_is_resolved_before_the_guard(sources, wal_folder, form, source, inside, how):
    """`--output file://<the source> --mode overwrite` emptied the source before: the guard skipped every URL."""
    output = _url_forms(sources, inside)[form]
    before = {name: fingerprint(sources / name) for name in ("volumes", "nats", "wp")}
    result = run_cli(
        "replay", "--to-spark", *source, "--output", output, "--mode", "overwrite", "--json", cwd=str(sources)
    )  # fmt: skip
    assert result.code == 2, (form, result.code, result.stdout, result.stderr)
    error = result.json()["error"]
    assert error["kind"] == "input" and f" {how} " in error["message"], error
    assert "Traceback" not in result.stderr
    assert {name: fingerprint(sources / name) for name in ("volumes", "nats", "wp")} == before


def test_a_symlinked_file_url_is_followed(sources):
    result = run_cli(
        "replay", "--to-spark", "--rocksmq", "volumes/rdb_data", "--output", f"file://{sources}/link/out", "--json",
        cwd=str(sources),
    )  # fmt: skip
    assert result.code == 2 and " is inside " in result.json()["error"]["message"], result.stdout


def test_a_file_url_naming_another_host_is_refused(sources):
    result = run_cli(
        "replay", "--to-spark", "--rocksmq", "volumes/rdb_data", "--output", "file://otherhost/tmp/out", "--json",
        cwd=str(sources),
    )  # fmt: skip
    assert result.code == 2 and "names host 'otherhost'" in result.json()["error"]["message"], result.stdout


def test_a_resume_file_url_is_the_local_file_it_names(sources):
    """`--checkpoint file:///X` was written to `./file:/X`; now it is X, and X inside a source is refused."""
    inside = sources / "nats" / "resume.json"
    result = run_cli(
        "replay", "--to-spark", "--nats-store", "nats", "--output", "out", "--resume-file", f"file://{inside}",
        "--json", cwd=str(sources),
    )  # fmt: skip
    assert result.code == 2 and " is inside " in result.json()["error"]["message"], result.stdout
    assert not (sources / "file:").exists()


def test_a_resume_file_on_another_filesystem_is_refused(sources):
    result = run_cli(
        "replay", "--to-spark", "--nats-store", "nats", "--output", "out", "--resume-file", "s3://b/resume.json",
        "--json", cwd=str(sources),
    )  # fmt: skip
    assert result.code == 2 and "only to a local path" in result.json()["error"]["message"], result.stdout
    assert not (sources / "s3:").exists()


def test_a_follow_checkpoint_location_url_is_checked_as_its_folder(sources):
    result = run_cli(
        "replay", "--to-spark", "--follow", "--rocksmq", "volumes/rdb_data", "--output", "out",
        "--checkpoint-location", f"file://{sources}/volumes/rdb_data/cp", "--json", cwd=str(sources),
    )  # fmt: skip
    assert result.code == 2 and " is inside " in result.json()["error"]["message"], result.stdout


@pytest.mark.parametrize("output", ["s3a://wal/by-dev/out", "s3://wal", "s3n://wal/by-dev"])
def test_an_object_store_output_over_the_bucket_wal_is_refused(sources, output):
    result = run_cli(
        "replay", "--to-spark", "--woodpecker", "s3://wal/by-dev", "--s3-endpoint", "http://127.0.0.1:9",
        "--output", output, "--mode", "overwrite", "--json", cwd=str(sources),
    )  # fmt: skip
    assert result.code == 2 and "overlaps the Woodpecker WAL" in result.json()["error"]["message"], result.stdout


def test_a_table_replay_run_inside_a_source_folder_is_refused(sources):
    """On a local master Spark writes ./spark-warehouse and ./metastore_db: inside the store when run from there."""
    before = fingerprint(sources / "nats")
    result = run_cli(
        "replay", "--to-spark", "--nats-store", ".", "--table", "t", "--json", cwd=str(sources / "nats")
    )  # fmt: skip
    assert result.code == 2 and "Spark's warehouse" in result.json()["error"]["message"], result.stdout
    assert fingerprint(sources / "nats") == before
