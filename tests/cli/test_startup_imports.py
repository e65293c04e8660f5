"""What a command imports decides how fast it starts (issue 33; figures: bench/cli_startup.py, docs/benchmarks.md).

Each command runs in a fresh interpreter, and the modules it loaded are read from sys.modules afterwards: `channels list --json` loads neither Rich (nothing is shown to people) nor the message decoders (a listing
parses one header per first and last message), and none of them loads pymilvus's package, grpc, pandas or
pyspark. A command of a group whose commands live in modules of their own (`mqctl channels`) loads its own module
and builds its own command only. Not timed: the modules are the property, the seconds are the bench's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers.paths import FIXTURES, REPO

HEAVY = ("pymilvus", "grpc", "pandas", "pyspark", "numpy")


def imported(*args: str) -> set[str]:
    """The modules a fresh `mqctl ARGS` run (a new interpreter; exit 0 expected) leaves in sys.modules: those it
    imported, whether by an import statement or importlib."""
    script = (
        "import json, sys; from mqctl.cli import run; c = run(sys.argv[1:]); print(json.dumps(sorted(sys.modules)))"
    )
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("PYTHONWARNINGS", None)
    done = subprocess.run(
        [sys.executable, "-c", script, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    names = set(json.loads(done.stdout.splitlines()[-1]))
    assert "mqctl.cli" in names
    return names


CHANNELS_COMMANDS = ("listing", "show", "peek", "decode", "checkpoints", "woodpecker")


def heavy(names: set[str]) -> list[str]:
    return sorted(n for n in names if n.split(".")[0] in HEAVY and not n.startswith("pymilvus.grpc_gen."))


@pytest.mark.parametrize(
    "source",
    [("--rocksmq", str(FIXTURES / "rocksmq" / "rdb_data")), ("--nats-store", str(FIXTURES / "natsmq" / "store"))],
    ids=["rocksmq", "nats-store"],
)
def test_channels_list_json_imports_no_renderer_no_decoders(source):
    names = imported("channels", "list", "--json", *source)
    assert "mqctl.mq.channels" in names
    assert not heavy(names)
    assert not sorted(n for n in names if n == "rich" or n.startswith("rich.")), "Rich loaded for JSON output"
    assert "mqctl.mq.decode.messages" not in names and "mqctl.mq.decode.bodies" not in names
    others = [f"mqctl.cli.channels.{module}" for module in CHANNELS_COMMANDS if module != "listing"]
    assert "mqctl.cli.channels.listing" in names
    assert not [m for m in others if m in names], "the group's other commands were imported"
    assert "mqctl.mq.retention_model" not in names  # retention's shapes
    assert "mqctl.mq.channel_detail" not in names  # show's and peek's shapes
    if source[0] == "--rocksmq":  # nats-py logs through logging, --nats-store resolves a config with findings
        assert "logging" not in names and "mqctl.findings" not in names


def test_channels_help_still_lists_every_command():
    """The other side of the lazy group: its help imports every command's module and lists them in order."""
    script = "import sys; from mqctl.cli import run; run(sys.argv[1:]); print(sorted(sys.modules))"
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("PYTHONWARNINGS", None)
    done = subprocess.run(
        [sys.executable, "-c", script, "channels", "--help"], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    *help_lines, modules = done.stdout.splitlines()
    listed = [line.split()[1] for line in help_lines if line.startswith("│ ") and len(line.split()) > 2]
    assert [name for name in listed if name in ("list", *CHANNELS_COMMANDS[1:])] == ["list", *CHANNELS_COMMANDS[1:]]
    assert all(f"mqctl.cli.channels.{module}" in modules for module in CHANNELS_COMMANDS)


def test_channels_list_table_still_loads_rich():
    """The other side of the same switch: a table for people is drawn by Rich, loaded when first used."""
    names = imported("channels", "list", "--rocksmq", str(FIXTURES / "rocksmq" / "rdb_data"))
    assert "rich.console" in names
    assert not heavy(names)


def test_the_console_script_loads_logging_only_for_a_command_that_logs(tmp_path):
    """main() quiets the root logger when logging loads (tests below): a RocksMQ listing never imports it."""
    seen = tmp_path / "logging-imported"
    script = (
        "import atexit, sys\nfrom mqctl.cli import main\n"
        "atexit.register(lambda: open(sys.argv[1], 'w').write(str('logging' in sys.modules)))\nmain(sys.argv[2:])\n"
    )
    args = ["channels", "list", "--json", "--rocksmq", str(FIXTURES / "rocksmq" / "rdb_data")]
    done = subprocess.run([sys.executable, "-c", script, str(seen), *args], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["channels"]
    assert seen.read_text() == "False"


@pytest.mark.parametrize("before", ["", "import logging"], ids=["loaded-later", "loaded-before"])
@pytest.mark.parametrize("debug", [False, True], ids=["quiet", "debug"])
def test_a_root_logger_record_stays_quiet_whenever_logging_loads(before, debug):
    """A library's root-logger record prints nothing (logging's last resort would), whether logging was loaded
    before the CLI started or by a command afterwards; --debug shows it."""
    script = (
        f"{before}\nfrom mqctl.cli import _quiet_warnings\n_quiet_warnings(debug={debug})\n"
        "import logging\nlogging.getLogger('a.library').warning('a library record')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert ("a library record" in done.stderr) == debug
