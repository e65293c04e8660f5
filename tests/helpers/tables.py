"""Checks that a Rich table printed by the CLI stays readable at a given width."""

from __future__ import annotations

import re

from rich.cells import cell_len


def cell(value: str) -> re.Pattern[str]:
    """`value` alone and whole in one table cell."""
    return re.compile(rf"[│┃] +{re.escape(value)} +[│┃]")


def assert_readable(stdout: str, width: int, identifiers: list[str]) -> None:
    """No line wider than `width`, and every identifying value whole in its own cell."""
    too_long = [line for line in stdout.splitlines() if cell_len(line) > width]
    assert not too_long, f"lines wider than {width}: {too_long}"
    assert identifiers
    missing = [value for value in identifiers if not cell(value).search(stdout)]
    assert not missing, f"cut or wrapped at {width} columns: {missing}\n{stdout}"
