"""One finding type for every check mqctl makes (config rules, retention, migrate preflight)."""

from __future__ import annotations

from dataclasses import dataclass

ERROR, WARNING, INFO = "error", "warning", "info"
SEVERITY_ORDER = {ERROR: 0, WARNING: 1, INFO: 2}


@dataclass
class Finding:
    """Something worth telling about an input: its rule code, how bad it is, and where it is."""

    code: str
    severity: str  # error | warning | info
    message: str
    key: str | None = None
    file: str | None = None
    line: int | None = None
    hint: str | None = None


def worst(findings: list[Finding]) -> str | None:
    """The most severe level among `findings`, or None when there are none."""
    return min((f.severity for f in findings), key=SEVERITY_ORDER.__getitem__, default=None)
