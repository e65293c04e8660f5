"""The domain (config rules, MQ readers, migrate, replay) never loads the terminal layer."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import pytest

import mqctl

pytestmark = pytest.mark.extra  # imports every domain module, mqctl.replay's need pyspark

TERMINAL = ("rich", "typer", "click", "mqctl.cli")


def domain_modules() -> list[str]:
    names = [m.name for m in pkgutil.walk_packages(mqctl.__path__, "mqctl.")]
    return [n for n in names if not n.startswith("mqctl.cli") and n != "mqctl.__main__"]


def test_domain_modules_import_no_terminal_layer():
    modules = domain_modules()
    assert "mqctl.config.resolve.resolution" in modules and "mqctl.migrate.steps" in modules
    probe = (
        "import importlib, json, sys\n"
        f"loaded = {{}}\n"
        f"for name in {modules!r}:\n"
        "    before = set(sys.modules)\n"
        "    importlib.import_module(name)\n"
        f"    loaded[name] = sorted(m for m in set(sys.modules) if m.split('.')[0] in {TERMINAL!r} or m.startswith('mqctl.cli'))\n"
        "print(json.dumps(loaded))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    offenders = {name: mods for name, mods in json.loads(out).items() if mods}
    assert offenders == {}
