"""Square brackets in user text print as typed: Rich markup is never read from file names, keys, values,
channel names, options or hints (no MarkupError, nothing silently dropped)."""

from __future__ import annotations

import io
import os
import shutil

import pytest
from rich.console import Console

from mqctl.cli.terminal import Output
from tests.helpers.cli import run_cli, run_cli_subprocess
from tests.helpers.paths import FIXTURES, REPO, SAMPLES

ROCKSMQ = FIXTURES / "rocksmq" / "rdb_data"
STORE = FIXTURES / "natsmq" / "store"


def clean(result) -> str:
    both = result.stdout + result.stderr
    assert "MarkupError" not in both and "Traceback" not in both and "internal error" not in both
    return both


def test_spark_master_option_is_echoed_verbatim(tmp_path):
    result = run_cli_subprocess(
        "replay", "--to-spark", "--rocksmq", str(ROCKSMQ), "--output", str(tmp_path / "out"), "--master", "local[x]"
    )
    assert result.code == 2
    assert "--master 'local[x]' is not a Spark master URL" in clean(result)


def test_install_hint_keeps_its_extra(tmp_path):
    """With pyspark unimportable the hint names the extra to install: `mqctl[spark]`, not `mqctl`."""
    broken = tmp_path / "site" / "pyspark"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('pyspark is not installed here')\n")
    result = run_cli_subprocess(
        "replay",
        "--to-spark",
        "--rocksmq",
        str(ROCKSMQ),
        "--output",
        str(tmp_path / "out"),
        env={"PYTHONPATH": os.pathsep.join([str(broken.parent), str(REPO)])},
    )
    assert result.code == 3
    assert "error: pyspark is not installed — pip install 'mqctl[spark]'" in clean(result)


def test_markup_in_a_value_is_reported_as_written(tmp_path):
    config = tmp_path / "milvus.yaml"
    config.write_text('mq:\n  type: "[red]natsmq"\n')
    result = run_cli("config", "validate", str(config))
    assert result.code == 1
    text = clean(result)
    assert "mq.type '[red]natsmq' is invalid" in text and "panic `mq type [red]natsmq is invalid`" in text


@pytest.fixture
def bracketed(tmp_path):
    """A config file named a[b].yaml with a key `[bold]x` and values that look like markup."""
    path = tmp_path / "a[b].yaml"
    path.write_text('mq:\n  type: "[red]natsmq"\n"[bold]x": "[i]v"\n')
    return path


def test_bracketed_file_and_key_through_every_config_command(bracketed):
    for command in ("explain", "validate"):
        result = run_cli("config", command, str(bracketed))
        assert result.code == (0 if command == "explain" else 1)
        text = clean(result)
        assert "a[b].yaml:2" in text and "[red]natsmq" in text

    got = run_cli("config", "get", str(bracketed), "mq.type")
    assert got.code == 0 and f"mq.type = [red]natsmq    [yaml: {bracketed}:2]" in clean(got)
    odd = run_cli("config", "get", str(bracketed), "[bold]x")
    assert odd.code == 2 and "'[bold]x'" in clean(odd)

    refused = run_cli("config", "set", str(bracketed), "[bold]x", "[u]w", "--yes")
    assert refused.code == 2 and "invalid key '[bold]x': '[bold]x' is not a plain YAML key" in clean(refused)

    changed = run_cli("config", "set", str(bracketed), "natsmq.server.monitor.logFile", "[u]w.log", "--yes")
    assert changed.code == 0
    text = clean(changed)
    assert (
        '+      logFile: "[u]w.log"' in text and "a[b].yaml\n+++ b/" in text and f"Wrote {bracketed} (backup: " in text
    )
    assert 'logFile: "[u]w.log"' in bracketed.read_text()

    removed = run_cli("config", "unset", str(bracketed), "natsmq.server.monitor.logFile", "--dry-run")
    assert removed.code == 0 and '-      logFile: "[u]w.log"' in clean(removed)

    switched = run_cli("config", "switch", str(bracketed), "--to", "rocksmq", "--dry-run")
    assert switched.code == 0 and '-  type: "[red]natsmq"' in clean(switched)

    missing = run_cli("config", "get", str(bracketed.with_name("nope[x].yaml")), "mq.type")
    assert missing.code == 2 and "nope[x].yaml: no such file" in clean(missing)


def test_bracketed_channel_names_and_paths(tmp_path):
    folder = tmp_path / "r[x]"
    folder.mkdir()
    shutil.copytree(ROCKSMQ, folder / "rdb_data")  # without its _meta_kv: a warning naming the folder
    listed = run_cli("channels", "list", "--rocksmq", str(folder / "rdb_data"))
    assert listed.code == 1  # data without its metadata is a warning
    text = clean(listed)
    assert f"channels of rocksmq:{folder}/rdb_data" in text
    assert f"warning: rocksmq:{folder}/rdb_data: no rdb_data_meta_kv folder beside it" in text

    for source in (["--rocksmq", str(folder / "rdb_data")], ["--nats-store", str(STORE)]):
        for command in ("show", "peek"):
            result = run_cli("channels", command, "by-dev[bold]x", *source)
            assert result.code == 2 and "no channel 'by-dev[bold]x' in" in clean(result)


def test_progress_descriptions_are_plain_text():
    out = Output()
    shown = io.StringIO()
    out.err = Console(file=shown, force_terminal=True, width=100)
    with out.progress(transient=False) as progress:
        progress.add_task("by-dev[bold]x [red]y", total=1)
    assert "by-dev[bold]x [red]y" in shown.getvalue()


def test_bracketed_config_path_in_the_migration_plan(tmp_path):
    folder = tmp_path / "m[x]"
    folder.mkdir()
    config = folder / "milvus.yaml"
    shutil.copy(SAMPLES / "milvus-2.3-standalone-rocksmq.yaml", config)
    result = run_cli(
        "migrate",
        "plan",
        "--config",
        str(config),
        "--to",
        "natsmq",
        "--milvus",
        "http://127.0.0.1:1",
        "--milvus-version",
        "2.2.0",
        "--stop-cmd",
        "true",
        "--start-cmd",
        "true",
        "--log-file",
        "m.log",
        env={"COLUMNS": "300"},
    )
    assert result.code == 3
    assert f"switch {config} to natsmq" in clean(result)
