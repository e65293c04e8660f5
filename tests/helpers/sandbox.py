"""Helpers shared by the end-to-end migration tests on a sandbox (`info`: `sandbox up --json`)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cli import run_cli_subprocess

KILLED = -9  # exit code of a CLI run that killed itself (MQCTL_CRASH_AFTER_STEP)


def start_with(folder, mq: str, **settings: str) -> dict:
    """A new sandbox in `folder` on `mq` with `settings` (milvus.yaml key -> value) set before its first start;
    its `sandbox up --json` fields."""
    from mqctl.config.edit.set_unset import set_key
    from mqctl.sandbox import server as sandbox

    box = sandbox.Sandbox(folder)
    box.create(mq)
    for key, value in settings.items():
        set_key(box.config_path, key, value)
    return vars(sandbox.up(str(folder), timeout=240))


def client(info, db=""):
    from pymilvus import MilvusClient

    return MilvusClient(uri=info["uri"], db_name=db)


def counts(info) -> dict[str, int]:
    """count(*) of the two seeded demo collections."""
    c = client(info)
    try:
        return {
            name: int(c.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")[0]["count(*)"])
            for name in ("demo_docs", "demo_events")
        }
    finally:
        c.close()


def migrate(info, *args, env=None):
    return run_cli_subprocess("migrate", "--sandbox", info["dir"], "--yes", *args, env=env, timeout=600)


def journal(info) -> dict:
    return json.loads((Path(info["config"]).parent / ".mqctl-migrate.json").read_text())
