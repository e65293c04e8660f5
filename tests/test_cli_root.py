"""The root command: fast help and version, unknown commands exit 2 without a traceback."""

from mqctl import __version__
from mqctl.cli import COMMANDS


def test_help_lists_every_command(cli):
    result = cli("--help")
    assert result.code == 0
    for name in COMMANDS:
        assert f"  {name}" in result.stdout


def test_version(cli):
    result = cli("--version")
    assert result.code == 0
    assert result.stdout.strip() == f"mqctl, version {__version__}"


def test_unknown_command_is_usage_error(cli):
    result = cli("no-such-command")
    assert result.code == 2
    assert "Traceback" not in result.stderr
    assert "no-such-command" in result.stderr
