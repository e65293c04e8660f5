"""Modules and packages stay small enough to read: no module of mqctl over MAX_LINES lines except the declared data
tables, and no package with more than MAX_SIDE_BY_SIDE modules side by side (docs/development.md, Layout)."""

from __future__ import annotations

from tests.helpers.paths import REPO

MQCTL = REPO / "mqctl"
MAX_LINES = 500
MAX_SIDE_BY_SIDE = 15
# modules that are tables of data (field numbers, rule texts), not logic: they may grow with upstream
DATA_TABLES = {"mqctl/mq/decode/body_fields.py"}


def test_no_module_over_the_line_limit_but_the_data_tables():
    long = {
        str(path.relative_to(REPO)): len(path.read_text().splitlines())
        for path in MQCTL.rglob("*.py")
        if str(path.relative_to(REPO)) not in DATA_TABLES
    }
    assert {name: lines for name, lines in long.items() if lines > MAX_LINES} == {}


def test_the_data_tables_exist():
    assert all((REPO / table).is_file() for table in DATA_TABLES)


def test_no_package_holds_more_than_fifteen_modules_side_by_side():
    packages = {init.parent for init in MQCTL.rglob("__init__.py")}
    crowded = {str(p.relative_to(REPO)): len(list(p.glob("*.py"))) for p in packages}
    assert {name: count for name, count in crowded.items() if count > MAX_SIDE_BY_SIDE} == {}
