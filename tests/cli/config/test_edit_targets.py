"""What an edit refuses to write to, each named for what it is; and never through a planted symlink."""

from __future__ import annotations

import os

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.files import write_yaml


@pytest.fixture
def odd_paths(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    (tmp_path / "dangling").symlink_to(tmp_path / "missing.yaml")
    (tmp_path / "folder").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("folder", "is a directory"),
        ("fifo", "is a named pipe (FIFO)"),
        ("loop1", "a symbolic link loop"),
        ("dangling", "a symbolic link to a missing file"),
        ("absent.yaml", "no such file"),
        ("/dev/null", "is a character device"),
    ],
)
def test_an_edit_of_what_is_not_a_regular_file_says_what_it_is(odd_paths, name, said):
    target = name if name.startswith("/") else str(odd_paths / name)
    result = run_cli("config", "set", target, "mq.type", "natsmq", "--yes", "--json")
    assert result.code == 2, (result.stdout, result.stderr)
    assert said in result.json()["error"]["message"]
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_lock_file_planted_as_a_symlink_is_refused_and_its_target_never_created(tmp_path):
    config = write_yaml(tmp_path, "mq:\n  type: rocksmq\n")
    victim = tmp_path / "victim"
    (tmp_path / ".milvus.yaml.mqctl.lock").symlink_to(victim)
    result = run_cli("config", "set", str(config), "mq.type", "natsmq", "--yes", "--json")
    assert result.code == 3 and "is a symbolic link" in result.json()["error"]["message"]
    assert not victim.exists() and config.read_text() == "mq:\n  type: rocksmq\n"
