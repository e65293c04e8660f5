"""Natural sort order for channel and topic names, and numbers written in ASCII digits.

`str.isdigit()` also holds for "²" or "①", which `int()` refuses: numbers here are `[0-9]+` only.
"""

from __future__ import annotations

import re


def natural_key(name: str) -> list[int | str]:
    """Sort key with natural numbering: dml_2 before dml_10."""
    # re.split with one group: the captured digit runs are the odd items.
    return [int(part) if i % 2 else part for i, part in enumerate(re.split(r"([0-9]+)", name))]


def ascii_int(text: str) -> int | None:
    """`text` as a number when it is ASCII digits only, else None."""
    return int(text) if re.fullmatch(r"[0-9]+", text) else None
