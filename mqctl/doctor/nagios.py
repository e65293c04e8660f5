"""The doctor's verdict as a Nagios/Icinga plugin result: one status line with performance data, and the
plugin exit codes monitoring systems expect (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN) instead of mqctl's own.
An examination that could not run at all (no Milvus found, bad options) is UNKNOWN."""

from __future__ import annotations

from dataclasses import dataclass

from mqctl.doctor.verdict import OK, Report
from mqctl.findings import ERROR, WARNING

NAGIOS_OK, NAGIOS_WARNING, NAGIOS_CRITICAL, NAGIOS_UNKNOWN = 0, 1, 2, 3
STATE_NAMES = {NAGIOS_OK: "OK", NAGIOS_WARNING: "WARNING", NAGIOS_CRITICAL: "CRITICAL", NAGIOS_UNKNOWN: "UNKNOWN"}
BY_VERDICT = {OK: NAGIOS_OK, WARNING: NAGIOS_WARNING, ERROR: NAGIOS_CRITICAL}


@dataclass
class PluginResult:
    """What a Nagios plugin prints (one line) and the state it exits with."""

    line: str
    code: int


def _one_line(text: str) -> str:
    """Nagios reads the first line only, and `|` starts the performance data."""
    return " ".join(text.split()).replace("|", "/")


def plugin_result(report: Report) -> PluginResult:
    """OK/WARNING/CRITICAL from the verdict; the failing codes and the first finding, then the counts as perfdata."""
    code = BY_VERDICT.get(report.verdict, NAGIOS_UNKNOWN)
    counts = report.summary
    failing = [c for c in report.checks if c.severity in (ERROR, WARNING)]
    if failing:
        codes = " ".join(dict.fromkeys(c.code for c in failing))
        said = (
            f"{counts[ERROR]} error(s), {counts[WARNING]} warning(s): {codes}; {failing[0].code} {failing[0].message}"
        )
    else:
        said = f"{len(report.checks)} check(s), none failing"
    perf = f"errors={counts[ERROR]};;1 warnings={counts[WARNING]};1 checks={len(report.checks)}"
    if report.seconds is not None:
        perf += f" seconds={report.seconds}s"
    return PluginResult(_one_line(f"MQCTL {STATE_NAMES[code]} - {said}")[:1000] + f" | {perf}", code)


def unknown(reason: str) -> PluginResult:
    """The examination did not run: the monitoring system shows UNKNOWN with the reason."""
    return PluginResult(_one_line(f"MQCTL UNKNOWN - {reason}")[:1000], NAGIOS_UNKNOWN)
