"""The package layers hold: the import-linter contracts of pyproject.toml exist, pass, and catch an upward
import even when it hides inside a function."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.helpers.paths import REPO

pytestmark = pytest.mark.extra  # import-linter, of .[lint]/.[test]

CONTRACTS = {"layers", "utilities", "terminal", "config-layers", "acyclic"}


def contracts() -> list[dict]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def test_the_layer_contracts_are_declared():
    declared = {c["id"] for c in contracts()}
    assert declared >= CONTRACTS
    layers = next(c for c in contracts() if c["id"] == "layers")["layers"]
    assert layers[0] == "mqctl.cli" and layers[-1] == "mqctl.config"


def test_the_contracts_are_kept():
    cli = pytest.importorskip("importlinter.cli")
    assert cli.lint_imports(config_filename=str(REPO / "pyproject.toml"), no_cache=True, no_logo=True) == 0


def test_an_upward_import_inside_a_function_breaks_the_layers(tmp_path):
    """A copy of the package where a config module reaches into the CLI from inside a function."""
    pytest.importorskip("importlinter")
    shutil.copytree(REPO / "mqctl", tmp_path / "mqctl", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    with (tmp_path / "mqctl" / "config" / "settings.py").open("a") as module:
        module.write("\n\ndef _upward() -> None:\n    from mqctl.cli import terminal  # noqa: F401\n")
    lint_imports = "from importlinter.cli import lint_imports_command; lint_imports_command()"
    result = subprocess.run(
        [sys.executable, "-c", lint_imports, "--no-cache"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "BROKEN" in result.stdout and "mqctl.config.settings -> mqctl.cli" in result.stdout
