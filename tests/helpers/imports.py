"""Which modules a whole mqctl run loads: for the tests that keep heavy packages out of a command."""

from __future__ import annotations


def imported_by(*args: str) -> set[str]:
    """The modules a fresh `mqctl ARGS` run (in a new interpreter) leaves in sys.modules; the run must not fail
    with a traceback (its exit code is its own business)."""
    import json
    import os
    import subprocess
    import sys

    from tests.helpers.paths import REPO

    script = (
        "import json, sys; from mqctl.cli import run; c = run(sys.argv[1:]); print(json.dumps(sorted(sys.modules)))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    done = subprocess.run([sys.executable, "-c", script, *args], cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return set(json.loads(done.stdout.splitlines()[-1]))


def pymilvus_client_parts(names: set[str]) -> list[str]:
    """pymilvus's package (its client) and what it pulls in (pandas, numpy), among `names`; pyspark too."""
    heavy = ("pandas", "numpy", "pyspark")
    return sorted(n for n in names if n.split(".")[0] in heavy or n in ("pymilvus", "pymilvus.client"))
