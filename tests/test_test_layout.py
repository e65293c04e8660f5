"""The tests are laid out like the code: no test module imports another (what tests share lives in
tests/helpers), test folders are packages named after mqctl's, and few modules stay at the top."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers.paths import REPO

TESTS = REPO / "tests"
# modules at the top of tests/: the repository-wide checks and the utilities at the top of mqctl
TOP_LEVEL_MAX = 7


def all_test_modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if "fixtures" not in p.parts)


def imported_modules(path: Path, text: str | None = None) -> set[str]:
    """Every module `path` imports, function-level imports included (relative ones resolved)."""
    package = ".".join(path.relative_to(REPO).with_suffix("").parts[:-1])
    found = set()
    source = path.read_text() if text is None else text
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


def is_test_module(name: str) -> bool:
    return name.startswith("tests.") and (name.rsplit(".", 1)[-1].startswith("test_") or name == "tests.conftest")


def test_no_test_module_imports_another_or_the_conftest():
    importers = [p for p in TESTS.rglob("*.py") if "fixtures" not in p.parts]
    offenders = {
        str(path.relative_to(REPO)): sorted(n for n in imported_modules(path) if is_test_module(n))
        for path in importers
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_check_sees_function_level_and_relative_imports():
    text = "def f():\n    from tests.mq.test_checkpoints import put\n\nfrom .test_root import x\nfrom . import test_markup\n"
    names = {n for n in imported_modules(TESTS / "cli" / "test_example.py", text) if is_test_module(n)}
    assert names == {"tests.mq.test_checkpoints", "tests.cli.test_root", "tests.cli.test_markup"}


def test_every_test_folder_is_a_package_that_says_what_it_holds():
    for folder in {p.parent for p in all_test_modules()}:
        init = folder / "__init__.py"
        assert init.is_file(), f"{folder} is not a package: two test modules of one name would clash"
        if folder != TESTS:
            assert ast.get_docstring(ast.parse(init.read_text())), f"{init} says nothing of what lives there"


def test_test_folders_mirror_mqctls_packages():
    packages = {p.parent.relative_to(REPO / "mqctl") for p in (REPO / "mqctl").rglob("__init__.py")}
    for folder in {p.parent.relative_to(TESTS) for p in all_test_modules()} - {Path(".")}:
        if folder.parts[0] in ("e2e", "conformance"):
            continue
        assert folder in packages, f"tests/{folder} has no mqctl/{folder} to mirror"


def test_few_modules_stay_at_the_top():
    top = sorted(p.name for p in TESTS.glob("test_*.py"))
    assert len(top) <= TOP_LEVEL_MAX, top
