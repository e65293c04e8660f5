"""Natural sort order for channel and topic names."""

from __future__ import annotations

import re


def natural_key(name: str) -> list[int | str]:
    """Sort key with natural numbering: dml_2 before dml_10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]
