"""Findings as tests compare them: by code."""

from __future__ import annotations

from typing import Any

from mqctl.config.rules.report import validate


def codes(res: Any) -> dict[str, list]:
    """The findings `config validate` gives a resolution, by code."""
    found: dict[str, list] = {}
    for f in validate(res):
        found.setdefault(f.code, []).append(f)
    return found
