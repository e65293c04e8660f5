"""Hostile file systems: unreadable folders, read-only stores. Run without root's file permission bypass
(setpriv drops CAP_DAC_OVERRIDE when the tests run as root) so the kernel refuses like it would refuse a user."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys

import pytest

from tests.helpers.files import make_writable, tree_fingerprint
from tests.helpers.natsmq import natsmq_yaml
from tests.helpers.paths import FIXTURES, REPO

STORE = FIXTURES / "natsmq" / "store"


ROCKSMQ = FIXTURES / "rocksmq"


UNPRIVILEGED = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"] if os.geteuid() == 0 else []


pytestmark = pytest.mark.skipif(os.geteuid() == 0 and not shutil.which("setpriv"), reason="needs setpriv as root")


def run_unprivileged(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*UNPRIVILEGED, sys.executable, "-m", "mqctl", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})},
        cwd=REPO,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def read_only(root) -> None:
    for folder, _, files in os.walk(root):
        for name in files:
            os.chmod(os.path.join(folder, name), 0o444)
        os.chmod(folder, 0o555)


@pytest.fixture
def store(tmp_path):
    copy = tmp_path / "store"
    shutil.copytree(STORE, copy)
    yield copy
    make_writable(copy)


def test_a_read_only_store_is_inspected_and_not_changed(tmp_path, store):
    """The private copy of a read-only store (a read-only mount, 0444 files) must be writable for nats-server."""
    read_only(store)
    before = tree_fingerprint(store)
    listed = run_unprivileged("channels", "list", "--nats-store", str(store), "--json")
    assert listed.returncode == 0, listed.stderr
    assert '"name": "by-dev-rootcoord-dml_0"' in listed.stdout
    applied = run_unprivileged(
        "retention",
        "apply",
        "--config",
        str(natsmq_yaml(tmp_path, max_age="0", max_msgs="50")),
        "--nats-store",
        str(store),
        "--yes",
    )
    assert applied.returncode == 3, applied.stderr
    assert "is not writable by this user, so the NATS store cannot be changed; nothing changed" in applied.stderr
    assert tree_fingerprint(store) == before


def test_unreadable_folders_are_one_line_not_a_traceback(tmp_path, store):
    for name in ("rdb_data", "rdb_data_meta_kv"):
        shutil.copytree(ROCKSMQ / name, tmp_path / name)
    meta = tmp_path / "rdb_data_meta_kv"
    os.chmod(meta, 0)
    jetstream = store / "jetstream"
    os.chmod(jetstream, 0)
    try:
        rocks = run_unprivileged("retention", "show", "--rocksmq", str(tmp_path / "rdb_data"))
        assert rocks.returncode == 3 and rocks.stderr.startswith(
            f"error: cannot read {meta}/CURRENT: Permission denied"
        ), rocks.stderr
        nats = run_unprivileged("channels", "list", "--nats-store", str(store))
        assert nats.returncode == 3 and "Permission denied" in nats.stderr and "Traceback" not in nats.stderr
        assert "internal error" not in rocks.stderr + nats.stderr
    finally:
        os.chmod(meta, stat.S_IRWXU)
        os.chmod(jetstream, stat.S_IRWXU)


def test_a_copy_that_fails_half_way_leaves_no_temp_folder(tmp_path, store):
    """A read-only store with one unreadable block: the half-made copy has the store's read-only folders."""
    read_only(store)
    os.chmod(store / "jetstream" / "$G" / "streams" / "by-dev-rootcoord-dml_3" / "msgs" / "1.blk", 0)
    temp = tmp_path / "tmp"
    temp.mkdir()
    result = run_unprivileged("channels", "list", "--nats-store", str(store), env={"TMPDIR": str(temp)})
    assert result.returncode == 3 and "cannot copy the NATS store" in result.stderr, result.stderr
    assert list(temp.iterdir()) == []
