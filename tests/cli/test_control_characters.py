"""Control characters from YAML values, file names, etcd values and messages never reach the terminal raw:
they are escaped (`\\x1b`) in text output and in error lines, and JSON carries them as \\u escapes."""

from __future__ import annotations

import base64

import httpx
import pytest

from tests.helpers.cli import run_cli

HOSTILE = "natmq\x1b]0;PWNED\x07\x1b[2J\x9b31m\u202e"
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def assert_nothing_raw(*texts: str) -> None:
    for text in texts:
        assert not any(ch in text for ch in RAW), repr(text)


@pytest.fixture
def hostile_config(tmp_path):
    path = tmp_path / "milvus\x1b[2J.yaml"
    path.write_text('mq:\n  type: "natmq\\e]0;PWNED\\a\\e[2J\\x9b31m\\u202e"\n')
    return path


@pytest.mark.parametrize(
    "args",
    [
        ("config", "validate"),
        ("config", "explain"),
        ("config", "get", "{}", "mq.type"),
        ("config", "set", "{}", "mq.type", "rocksmq", "--dry-run"),
        ("config", "set", "{}", "mq.type", HOSTILE, "--dry-run"),
    ],
)
def test_yaml_values_and_file_names_are_escaped(hostile_config, args):
    argv = [a.replace("{}", str(hostile_config)) for a in args]
    if "{}" not in args:
        argv.append(str(hostile_config))
    text = run_cli(*argv)
    as_json = run_cli(*argv, "--json")
    assert_nothing_raw(text.stdout, text.stderr, as_json.stdout, as_json.stderr)
    assert "\\x1b" in text.stdout + text.stderr  # shown, escaped, not dropped


def test_an_error_line_naming_a_hostile_file_is_escaped(tmp_path):
    result = run_cli("config", "validate", str(tmp_path / "no\x1b]0;x\x07such.yaml"))
    assert result.code == 2
    assert_nothing_raw(result.stdout, result.stderr)


@pytest.mark.etcd
def test_etcd_values_are_escaped(etcd_url, tmp_path):
    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    httpx.post(
        f"{etcd_url}/v3/kv/put", json={"key": b64("ctl/config/mq/type"), "value": b64(HOSTILE)}
    ).raise_for_status()
    config = tmp_path / "milvus.yaml"
    config.write_text("mq:\n  type: rocksmq\n")
    for mode in ((), ("--json",)):
        result = run_cli("config", "explain", str(config), "--etcd", etcd_url, "--etcd-root", "ctl", *mode)
        assert_nothing_raw(result.stdout, result.stderr)
        assert "natmq" in result.stdout
