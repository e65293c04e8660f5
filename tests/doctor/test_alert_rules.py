"""The shipped alert rules (sample-configs/monitoring/): promtool accepts them and runs their unit tests (the
rules against what `mqctl doctor --format prometheus` prints: tests/cli/doctor/test_alert_rules.py)."""

from __future__ import annotations

import subprocess

import pytest

from tests.helpers.metrics import (
    prometheus_tool,
)
from tests.helpers.paths import SAMPLES

MONITORING = SAMPLES / "monitoring"


RULES = MONITORING / "mqctl-alerts.yml"


def promtool() -> str:
    found = prometheus_tool("promtool")
    if found is None:
        pytest.skip("promtool not installed (.ci/run unpacks Debian's prometheus package)")
    return found


def test_promtool_checks_the_rules_and_runs_their_unit_tests():
    checked = subprocess.run([promtool(), "check", "rules", str(RULES)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0 and "SUCCESS: 7 rules found" in checked.stdout, checked.stdout + checked.stderr
    tested = subprocess.run(
        [promtool(), "test", "rules", "mqctl-alerts.test.yml"],
        capture_output=True,
        text=True,
        cwd=MONITORING,
        check=False,
    )
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr
