"""Every table read at 80, 120 and 200 columns: the identifying value of each row whole, no line past the width.

Each command runs for real (fixtures, sample configs, a failed migration's journal, a Spark replay); the
identifying values come from the same command's `--json`, so nothing here is hard-coded.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli, run_cli_subprocess
from tests.helpers.natsmq import max_age_keeping
from tests.helpers.paths import FIXTURES, SAMPLES
from tests.helpers.tables import assert_readable

ROCKSMQ = FIXTURES / "rocksmq" / "rdb_data"
STORE = FIXTURES / "natsmq" / "store"
WIDTHS = (80, 120, 200)
MIGRATE = (
    "--to",
    "natsmq",
    "--milvus",
    "http://127.0.0.1:1",
    "--stop-cmd",
    "true",
    "--start-cmd",
    "true",
    "--log-file",
    "milvus.log",
)


def natsmq_config(folder: Path) -> Path:
    path = folder / "natsmq.yaml"  # a maxAge against the fixture's unlimited streams: drift on every stream
    max_age = max_age_keeping(STORE)  # that keeps every message, so the apply deletes nothing on any date
    path.write_text(f"mq:\n  type: natsmq\nnatsmq:\n  server:\n    retention:\n      maxAge: {max_age}\n")
    return path


def migration_config(folder: Path) -> Path:
    """A config whose migration failed at preflight (no Milvus at port 1), so its journal exists."""
    config = folder / "milvus.yaml"
    shutil.copy(SAMPLES / "milvus-2.3-standalone-rocksmq.yaml", config)
    assert run_cli("migrate", "--config", str(config), *MIGRATE, "--yes").code == 3
    return config


def store_copy(folder: Path) -> Path:
    store = folder / "store"
    if not store.exists():
        shutil.copytree(STORE, store)
    return store


def where(finding: dict) -> str:
    """The location column of a findings table: file name and line, or what set the value."""
    if not finding["file"]:
        return "Milvus default"
    name = Path(finding["file"]).name
    return f"{name}:{finding['line']}" if finding["line"] else name


# name -> (arguments given the test's folder, exit code, identifying values from the --json object)
TABLES = {
    "channels list rocksmq": (
        lambda d: ["channels", "list", "--rocksmq", str(ROCKSMQ)],
        0,
        lambda j: [c["name"] for c in j["channels"]],
    ),
    "channels list natsmq": (
        lambda d: ["channels", "list", "--nats-store", str(STORE)],
        0,
        lambda j: [c["name"] for c in j["channels"]],
    ),
    "channels show rocksmq": (
        lambda d: ["channels", "show", "by-dev-rootcoord-dml_0", "--rocksmq", str(ROCKSMQ)],
        0,
        lambda j: [*j["types"], *(str(c["id"]) for c in j["collections"]), *(str(p["end_id"]) for p in j["pages"])],
    ),
    "channels show natsmq": (
        lambda d: ["channels", "show", "by-dev-rootcoord-dml_1", "--nats-store", str(STORE)],
        0,
        lambda j: [*j["types"], *(str(c["id"]) for c in j["collections"]), *j["stream"]],
    ),
    "channels peek rocksmq": (
        lambda d: [
            "channels",
            "peek",
            "by-dev-rootcoord-dml_0",
            "--rocksmq",
            str(ROCKSMQ),
            "--type",
            "insert,delete,createcollection",
        ],
        0,
        lambda j: [str(m["id"]) for m in j["messages"]],
    ),
    "channels peek natsmq": (
        lambda d: ["channels", "peek", "by-dev-rootcoord-dml_1", "--nats-store", str(STORE)],
        0,
        lambda j: [str(m["id"]) for m in j["messages"]],
    ),
    "retention show rocksmq": (
        lambda d: [
            "retention",
            "show",
            "--rocksmq",
            str(ROCKSMQ),
            "--config",
            str(SAMPLES / "milvus-2.3-standalone-rocksmq.yaml"),
        ],
        0,
        lambda j: [c["name"] for c in j["channels"]],
    ),
    "retention show natsmq": (
        lambda d: ["retention", "show", "--nats-store", str(STORE), "--config", str(natsmq_config(d))],
        1,
        lambda j: [c["name"] for c in j["channels"]] + [where(f) for f in j["findings"]],
    ),
    "retention apply": (
        lambda d: [
            "retention",
            "apply",
            "--nats-store",
            str(store_copy(d)),
            "--config",
            str(natsmq_config(d)),
            "--yes",
        ],
        0,
        lambda j: [c["stream"] for c in j["changes"]],
    ),
    "config validate": (
        lambda d: ["config", "validate", str(SAMPLES / "broken-mq-config.yaml")],
        1,
        lambda j: [where(f) for f in j["findings"]],
    ),
    "config explain": (
        lambda d: ["config", "explain", str(SAMPLES / "operator-cr-natsmq.yaml")],
        0,
        lambda j: [where(f) for f in j["findings"]],
    ),
    "config rules": (lambda d: ["config", "rules"], 0, lambda j: [r["code"] for r in j["rules"]]),
    "migrate plan": (
        lambda d: [
            "migrate",
            "plan",
            "--config",
            str(SAMPLES / "milvus-2.3-standalone-rocksmq.yaml"),
            *MIGRATE,
            "--milvus-version",
            "2.2.0",
        ],
        3,
        lambda j: [s["name"] for s in j["steps"]] + [f["code"] for f in j["findings"]],
    ),
    "migrate status": (
        lambda d: ["migrate", "status", "--config", str(migration_config(d))],
        0,
        lambda j: [s["name"] for s in j["steps"]],
    ),
}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", list(TABLES))
def test_table_reads_at_width(name, width, tmp_path):
    args, code, identifying = TABLES[name]
    argv = args(tmp_path)
    if name == "retention apply":  # the apply changes the copy: read what it will change from a dry run
        identifiers = identifying(run_cli(*argv[:-1], "--dry-run", "--json").json())
    else:
        identifiers = identifying(run_cli(*argv, "--json").json())
    result = run_cli(*argv, env={"COLUMNS": str(width)})
    assert result.code == code, result.stderr
    assert_readable(result.stdout, width, identifiers)


@pytest.mark.spark
def test_replay_summary_reads_at_the_narrowest_width(tmp_path):
    """One Spark run at 80 columns (the table code is the one every width uses; a run costs ~30 s)."""
    names = [c["name"] for c in run_cli("channels", "list", "--rocksmq", str(ROCKSMQ), "--json").json()["channels"]]
    for width in WIDTHS[:1]:
        result = run_cli_subprocess(
            "replay",
            "--to-spark",
            "--rocksmq",
            str(ROCKSMQ),
            "--output",
            str(tmp_path / f"out{width}"),
            "--format",
            "json",
            env={"COLUMNS": str(width)},
        )
        assert result.code == 0, result.stderr
        assert_readable(result.stdout, width, names)


def test_narrow_view_hides_long_ids_and_shows_ages_wide_shows_them_in_full():
    listed = run_cli("channels", "list", "--rocksmq", str(ROCKSMQ), "--json").json()["channels"]
    first = listed[1]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", first["first_time"])  # JSON keeps ISO times

    narrow = run_cli("channels", "list", "--rocksmq", str(ROCKSMQ), env={"COLUMNS": "80"}).stdout
    assert str(first["first_id"]) not in narrow
    assert "not shown at 80 columns: first id, last id (--wide shows all)" in narrow
    row = next(line for line in narrow.splitlines() if first["name"] in line)
    assert re.search(r"│ +\d+(\.\d)?[smhd] │ +\d+(\.\d)?[smhd] │$", row), row  # oldest and newest as ages

    for flag in ("--wide", "--no-trunc"):
        wide = run_cli("channels", "list", "--rocksmq", str(ROCKSMQ), flag, env={"COLUMNS": "80"}).stdout
        row = next(line for line in wide.splitlines() if first["name"] in line)
        assert str(first["first_id"]) in row and str(first["last_id"]) in row
        assert first["first_time"][:19].replace("T", " ") in row
        assert "not shown" not in wide and "first time (UTC)" in wide
