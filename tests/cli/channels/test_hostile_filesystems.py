"""A natsmq store whose jetstream folder is a symbolic link is read through `channels list --nats-store` and not
changed (the other hostile file systems: tests/mq/test_hostile_filesystems.py)."""

from __future__ import annotations

import shutil

from tests.helpers.files import tree_fingerprint
from tests.helpers.paths import FIXTURES

STORE = FIXTURES / "natsmq" / "store"


def test_a_store_whose_jetstream_folder_is_a_symlink_is_not_changed(cli, tmp_path):
    """storeDir/jetstream linked to another disk: the private copy holds the files, not the link to them."""
    disk = tmp_path / "disk2"
    shutil.copytree(STORE / "jetstream", disk / "jetstream")
    store = tmp_path / "store"
    store.mkdir()
    (store / "jetstream").symlink_to(disk / "jetstream")
    before = tree_fingerprint(disk)
    for command in (("channels", "list"), ("retention", "show"), ("channels", "peek", "by-dev-rootcoord-dml_0")):
        result = cli(*command, "--nats-store", str(store), "--json")
        assert result.code in (0, 1) and result.json(), result.stderr
    assert tree_fingerprint(disk) == before
