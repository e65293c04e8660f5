"""Odd environments and option values end in the documented error line or work, never in a traceback."""

from __future__ import annotations

import pytest

from tests.helpers.cli import run_cli, run_cli_subprocess
from tests.helpers.paths import FIXTURES, SAMPLES

ROCKSMQ = str(FIXTURES / "rocksmq" / "rdb_data")


@pytest.mark.parametrize("columns", ["abc", "-5", "0", "", "1e9"])
def test_an_unreadable_columns_is_ignored(columns):
    result = run_cli("config", "rules", env={"COLUMNS": columns})
    assert result.code == 0 and "Traceback" not in result.stderr
    assert max(len(line) for line in result.stdout.splitlines()) <= 160  # the default width


def test_an_ascii_only_stdout_gets_escapes_not_an_encoding_error():
    """PYTHONIOENCODING sets the interpreter's stdout encoding at its start: a fresh interpreter."""
    result = run_cli_subprocess(
        "config", "validate", str(SAMPLES / "broken-mq-config.yaml"), env={"PYTHONIOENCODING": "ascii"}, timeout=60
    )
    assert result.code == 1, result.stderr
    assert "internal error" not in result.stderr and "error(s)" in result.stdout


@pytest.mark.parametrize("value", ["nan", "inf", "1e308", "-1"])
def test_a_watch_that_is_no_number_of_seconds_is_a_usage_error_before_any_network_call(value):
    result = run_cli(
        "channels", "checkpoints", "--rocksmq", ROCKSMQ, "--etcd", "http://127.0.0.1:1", "--watch", value, "--json"
    )
    assert result.code == 2 and result.json()["error"]["kind"] == "usage"
    assert "--watch" in result.json()["error"]["message"] and "unreachable" not in result.stderr


@pytest.mark.parametrize(
    ("options", "named"),
    [(["--tls-ca", "{bad}"], "--tls-ca"), (["--tls-cert", "{bad}", "--tls-key", "{bad}"], "--tls-cert")],
)
def test_a_tls_file_that_is_no_certificate_is_an_input_error_naming_the_option(tmp_path, options, named):
    bad = tmp_path / "bad.pem"
    bad.write_text("not a certificate\n")
    argv = [o.replace("{bad}", str(bad)) for o in options]
    result = run_cli("channels", "list", "--nats", "tls://127.0.0.1:1", *argv, "--json")
    assert result.code == 2, (result.stdout, result.stderr)
    error = result.json()["error"]
    assert error["kind"] == "input" and error["message"].startswith(named) and "internal" not in error["message"]
