"""`channels list --nats-store` on a copy of the natsmq store a real Milvus 2.3.5 wrote: a file of it held open by
the calling process tree does not make the store in use."""

from __future__ import annotations

import json
import shutil

from tests.helpers.paths import FIXTURES

STORE = FIXTURES / "natsmq" / "store"


def test_a_store_file_open_in_the_calling_process_tree_is_not_a_user(tmp_path):
    """mqctl's parent (here: this test process) holding a file of the store does not make the store "in use":
    the calling tree is skipped for open files as it is for command lines. A process outside the tree still
    counts (test_private_server_refuses_a_store_in_use)."""
    from tests.helpers.cli import run_cli

    copy = tmp_path / "nats"
    shutil.copytree(STORE, copy)
    with open(next(copy.rglob("*.blk")), "rb"):
        result = run_cli("channels", "list", "--nats-store", str(copy), "--store-times", "--json")
    assert result.code == 0, result.stderr
    assert json.loads(result.stdout)["totals"]["messages"] > 0
