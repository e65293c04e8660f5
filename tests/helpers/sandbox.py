"""Helpers shared by the end-to-end migration tests on a sandbox (`info`: `sandbox up --json`)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers.cli import run_cli_subprocess

KILLED = -9  # exit code of a CLI run that killed itself (MQCTL_CRASH_AFTER_STEP)


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
