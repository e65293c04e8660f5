"""Every code the doctor can report is documented in docs/doctor.md (the verdicts through the CLI:
tests/cli/doctor/test_doctor_cli.py)."""

from __future__ import annotations

from mqctl.doctor.verdict import CODES
from tests.helpers.paths import REPO


def test_every_doctor_code_is_documented():
    page = (REPO / "docs" / "doctor.md").read_text()
    missing = [code.code for code in CODES if f"`{code.code}`" not in page]
    assert not missing
    assert "docs/doctor.md" in (REPO / "README.md").read_text()
