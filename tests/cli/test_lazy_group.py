"""Hostile command lines against the lazy `mqctl channels` group (mqctl/cli/lazy.py, mqctl/cli/channels/group.py).

Each line runs twice as a whole `mqctl` process (the console script's `main`, stdin closed): once as shipped, where
the group imports and builds only the command the line names, and once with the group made eager again (every
command module imported first and the group built by Typer's own `TyperGroup`, as before issue 33). Exit code,
stdout and stderr must be byte for byte the same; a usage error is exit 2, one line on stderr, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers.paths import FIXTURES, REPO

ROCKSMQ = str(FIXTURES / "rocksmq" / "rdb_data")

# argv[1] says which group; the rest (bytes, so non-UTF-8 arguments reach Python as the shell passes them) is mqctl's
DRIVER = """\
import importlib, sys
if sys.argv[1] == "eager":
    import typer.core
    from mqctl.cli.channels import group
    for module in group.COMMANDS.values():
        importlib.import_module(module)  # registers each command on group.app, in the declared order
    group.app.info.cls = typer.core.TyperGroup
sys.argv = ["mqctl", *sys.argv[2:]]
from mqctl.cli import main
main()
"""


def mqctl(mode: str, args: list[bytes], env: dict[str, str] | None = None) -> tuple[int, bytes, bytes]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("_MQCTL_", "COMP_"))}
    environ.update(NO_COLOR="1", COLUMNS="120", **(env or {}))
    environ.pop("PYTHONWARNINGS", None)
    done = subprocess.run(
        [sys.executable.encode(), b"-c", DRIVER.encode(), mode.encode(), *args],
        cwd=REPO,
        env=environ,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
    )
    return done.returncode, done.stdout, done.stderr


def same_as_eager(args: list[bytes], env: dict[str, str] | None = None) -> tuple[int, bytes, bytes]:
    lazy, eager = mqctl("lazy", args, env), mqctl("eager", args, env)
    assert lazy == eager, f"lazy group {lazy!r} != eager group {eager!r}"
    assert b"Traceback" not in lazy[1] + lazy[2]
    return lazy


USAGE_ERRORS = {
    "unknown-command": [b"channels", b"nosuch"],
    "prefix-of-a-command": [b"channels", b"li"],
    "near-miss": [b"channels", b"lst"],
    "non-utf8-command": [b"channels", b"l\xffst"],
    "non-utf8-option": [b"channels", b"list", b"--r\xe9cksmq", ROCKSMQ.encode()],
    "option-before-the-command": [b"channels", b"--rocksmq", ROCKSMQ.encode(), b"list"],
    "command-after-separator": [b"channels", b"--", b"list"],
    "empty-command-name": [b"channels", b""],
    "dash-command-name": [b"channels", b"-"],
    "a-command-name-as-an-extra-argument": [b"channels", b"list", b"show", b"--rocksmq", ROCKSMQ.encode()],
    "missing-option-value-then-help": [b"channels", b"list", b"--rocksmq"],
    "group-option-that-does-not-exist": [b"channels", b"--nosuch"],
    "help-after-separator": [b"channels", b"list", b"--rocksmq", ROCKSMQ.encode(), b"--", b"--help"],
}


@pytest.mark.parametrize("args", list(USAGE_ERRORS.values()), ids=list(USAGE_ERRORS))
def test_a_usage_error_is_one_line_and_exit_2_as_before(args):
    code, stdout, stderr = same_as_eager(args)
    assert code == 2, stderr
    assert stdout == b""
    assert len(stderr.splitlines()) == 1 and stderr.startswith(b"error: "), stderr


def test_a_usage_error_with_json_is_the_error_object_as_before():
    code, stdout, stderr = same_as_eager([b"channels", b"nosuch", b"--json"])
    assert code == 2
    assert b'"kind": "usage"' in stdout and b"No such command" in stdout
    assert len(stderr.splitlines()) == 1


HELP = {
    "group-help": [b"channels", b"--help"],
    "group-no-args": [b"channels"],
    "command-help": [b"channels", b"list", b"--help"],
    "help-before-the-command": [b"channels", b"--help", b"list"],
    "help-after-an-option": [b"channels", b"list", b"--json", b"--help"],
    "help-after-the-option-value": [b"channels", b"list", b"--rocksmq", ROCKSMQ.encode(), b"--help"],
    "help-as-an-option-value": [b"channels", b"show", b"--rocksmq", b"--help"],
    "command-name-as-an-option-value": [b"channels", b"list", b"--rocksmq", b"show", b"--help"],
    "short-help": [b"channels", b"peek", b"-h"],
}


@pytest.mark.parametrize("args", list(HELP.values()), ids=list(HELP))
def test_help_anywhere_on_the_line_is_as_before(args):
    code, stdout, stderr = same_as_eager(args)
    if args[-1] == b"-h" or args[-2:] == [b"--rocksmq", b"--help"]:
        # click knows only --help (`-h` is an unknown option), and after an option taking a value `--help` is
        # that value (here show's NAME is then missing): a usage error, one line, as before
        assert code == 2 and stdout == b"" and len(stderr.splitlines()) == 1, stderr
        return
    # no arguments shows the group's help as click's usage error (exit 2); asked for, it is exit 0
    assert code == (2 if args == [b"channels"] else 0), stderr
    assert b"Usage: mqctl channels" in stdout


def test_a_command_named_as_an_option_value_runs_the_command_as_before(tmp_path):
    """`--rocksmq show`: "show" is the value of --rocksmq (a folder that does not exist), not a second command."""
    code, stdout, stderr = same_as_eager([b"channels", b"list", b"--json", b"--rocksmq", b"show"])
    assert code == 2
    assert b'"kind": "input"' in stdout and b"show" in stdout
    assert len(stderr.splitlines()) == 1


def test_a_listing_after_a_separator_before_the_group_is_as_before():
    code, stdout, _ = same_as_eager([b"--json", b"channels", b"list", b"--rocksmq", ROCKSMQ.encode()])
    assert code == 0 and b'"channels"' in stdout


COMPLETIONS = {
    "command-names": ("bash_complete", "mqctl channels ", "2"),
    "command-prefix": ("bash_complete", "mqctl channels p", "2"),
    "unknown-prefix": ("bash_complete", "mqctl channels x", "2"),
    "options-of-a-command": ("bash_complete", "mqctl channels list --r", "3"),
    "options-of-an-unknown-command": ("bash_complete", "mqctl channels nosuch --", "3"),
    "zsh-command-names": ("zsh_complete", "mqctl channels ", "2"),
    "fish-options": ("fish_complete", "mqctl channels peek --l", "3"),
}


@pytest.mark.parametrize("shell, words, cword", list(COMPLETIONS.values()), ids=list(COMPLETIONS))
def test_completion_is_as_before(shell, words, cword):
    code, stdout, stderr = same_as_eager([], {"_MQCTL_COMPLETE": shell, "COMP_WORDS": words, "COMP_CWORD": cword})
    assert code == 0 and stderr == b""
    if words.endswith("channels ") and shell == "bash_complete":
        assert stdout.split() == [
            b"plain,list",
            b"plain,show",
            b"plain,peek",
            b"plain,decode",
            b"plain,checkpoints",
            b"plain,woodpecker",
        ]
    if words.endswith("--r"):
        assert b"plain,--rocksmq" in stdout.split()


def test_empty_argv_prints_the_root_help_and_exit_0():
    code, stdout, stderr = same_as_eager([])
    assert code == 0 and stdout.startswith(b"Usage: mqctl [OPTIONS] COMMAND") and stderr == b""


def test_the_eager_group_compared_against_is_typers_own_with_every_command(monkeypatch):
    """The other side of every comparison above: the driver's eager group is a plain TyperGroup holding all six
    commands, built at once (in the declared order in the driver's fresh process); the shipped group is the lazy
    one."""
    import importlib

    import typer.core
    import typer.main

    from mqctl.cli.channels import group

    assert type(typer.main.get_command(group.app)).__name__ == "LazyGroup"
    for module in group.COMMANDS.values():
        importlib.import_module(module)
    monkeypatch.setattr(group.app.info, "cls", typer.core.TyperGroup)
    eager = typer.main.get_command(group.app)
    assert type(eager) is typer.core.TyperGroup
    # every command, in the order the modules registered them: the declared order in the driver's fresh process,
    # the order of earlier imports when other tests of this process ran a command first (golden JSON: peek, show)
    assert sorted(eager.commands) == sorted(group.COMMANDS)
    commands = eager.commands.values()
    assert all(isinstance(command, typer.core.TyperCommand) for command in commands)
