"""Every read-only command's `--json` on the repository's fixtures, byte for byte as recorded in tests/cli/golden/.

Recorded before the package is moved around, so that a restructuring proves it changed no output: a difference
is either a bug of the move or a deliberate change, re-recorded with `MQCTL_RECORD_GOLDEN=1 python -m pytest
tests/cli/test_golden_json.py` and reviewed in the diff. Paths that depend on the machine (the checkout, the
test's temporary folder) are written as `<repo>` and `<tmp>`; nothing else is rewritten, so a time or a count that
moves is a finding, not noise."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.paths import FIXTURES, REPO

GOLDEN = Path(__file__).parent / "golden"
RECORD = os.environ.get("MQCTL_RECORD_GOLDEN") == "1"
SAMPLES = REPO / "sample-configs"
CONFIGS = sorted(p.name for p in SAMPLES.glob("*.yaml"))

# name -> (arguments, where a source is copied first: None, "rocksmq", "natsmq" or "woodpecker")
COMMANDS: dict[str, tuple[list[str], str | None]] = {
    **{f"config-explain-{c}": (["config", "explain", f"<repo>/sample-configs/{c}"], None) for c in CONFIGS},
    **{f"config-validate-{c}": (["config", "validate", f"<repo>/sample-configs/{c}"], None) for c in CONFIGS},
    **{f"config-get-mq.type-{c}": (["config", "get", f"<repo>/sample-configs/{c}", "mq.type"], None) for c in CONFIGS},
    "config-explain-2.3.5-rocksmq": (
        ["config", "explain", "<repo>/sample-configs/milvus-2.3-standalone-rocksmq.yaml", "--milvus-version", "2.3.5"],
        None,
    ),
    "config-switch-natsmq-dry-run": (
        ["config", "switch", "<tmp>/milvus.yaml", "--to", "natsmq", "--dry-run"],
        "config",
    ),
    "config-set-dry-run": (
        ["config", "set", "<tmp>/milvus.yaml", "natsmq.server.retention.maxAge", "4320", "--dry-run"],
        "config",
    ),
    "config-rules": (["config", "rules"], None),
    "channels-list-rocksmq": (["channels", "list", "--rocksmq", "<tmp>/rdb_data"], "rocksmq"),
    "channels-show-rocksmq": (["channels", "show", "--rocksmq", "<tmp>/rdb_data", "by-dev-rootcoord-dml_0"], "rocksmq"),
    "channels-peek-rocksmq": (
        ["channels", "peek", "--rocksmq", "<tmp>/rdb_data", "by-dev-rootcoord-dml_0", "--limit", "20"],
        "rocksmq",
    ),
    "retention-show-rocksmq": (["retention", "show", "--rocksmq", "<tmp>/rdb_data"], "rocksmq"),
    "channels-list-natsmq": (["channels", "list", "--nats-store", "<tmp>/store"], "natsmq"),
    "channels-show-natsmq": (["channels", "show", "--nats-store", "<tmp>/store", "by-dev-rootcoord-dml_0"], "natsmq"),
    "channels-peek-natsmq": (
        ["channels", "peek", "--nats-store", "<tmp>/store", "by-dev-rootcoord-dml_0", "--limit", "20"],
        "natsmq",
    ),
    "retention-show-natsmq": (["retention", "show", "--nats-store", "<tmp>/store"], "natsmq"),
    "channels-list-woodpecker": (["channels", "list", "--woodpecker", "<tmp>/wp"], "woodpecker"),
    "channels-woodpecker": (["channels", "woodpecker", "<tmp>/wp"], "woodpecker"),
    "channels-woodpecker-log-2": (["channels", "woodpecker", "<tmp>/wp", "--log", "2"], "woodpecker"),
    "channels-show-woodpecker": (["channels", "show", "--woodpecker", "<tmp>/wp", "2"], "woodpecker"),
    "channels-peek-woodpecker": (["channels", "peek", "--woodpecker", "<tmp>/wp", "2", "--limit", "20"], "woodpecker"),
}


def _materialise(kind: str | None, tmp: Path) -> None:
    """Copy the fixture a command reads into `tmp`, so that nothing reads the repository's own copy."""
    if kind == "rocksmq":
        shutil.copytree(FIXTURES / "rocksmq" / "rdb_data", tmp / "rdb_data")
        shutil.copytree(FIXTURES / "rocksmq" / "rdb_data_meta_kv", tmp / "rdb_data_meta_kv")
    elif kind == "natsmq":
        shutil.copytree(FIXTURES / "natsmq" / "store", tmp / "store")
    elif kind == "woodpecker":
        from tests.helpers.woodpecker_wal import fixture_logs, write_wal

        write_wal(tmp / "wp", fixture_logs(), active_last=True)
    elif kind == "config":
        shutil.copy(SAMPLES / "milvus-2.3-standalone-rocksmq.yaml", tmp / "milvus.yaml")


def _normalised(text: str, tmp: Path) -> str:
    for path, name in ((tmp.resolve(), "<tmp>"), (tmp, "<tmp>"), (REPO.resolve(), "<repo>"), (REPO, "<repo>")):
        text = text.replace(str(path), name)
    return text


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_json_output_is_what_was_recorded(name, tmp_path):
    arguments, kind = COMMANDS[name]
    _materialise(kind, tmp_path)
    args = [a.replace("<repo>", str(REPO)).replace("<tmp>", str(tmp_path)) for a in arguments]
    result = run_cli(*args, "--json", cwd=str(tmp_path), env={"TZ": "UTC", "MQCTL_NOW": "2030-01-01T00:00:00Z"})
    got = {"exit": result.code, "stdout": json.loads(_normalised(result.stdout, tmp_path))}
    path = GOLDEN / f"{name}.json"
    text = json.dumps(got, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    if RECORD:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no golden output for {name}: record it with MQCTL_RECORD_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), f"{name}: --json differs from {path.name}"


def test_every_golden_file_belongs_to_a_command():
    """A golden file whose command was removed from the table would otherwise prove nothing, silently."""
    assert {p.stem for p in GOLDEN.glob("*.json")} <= set(COMMANDS)
