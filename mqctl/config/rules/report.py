"""Validation: every rule run over a resolved deployment, and the report `explain`/`validate` print.

The rule catalogue is catalog.py; the checks live by subject in mq.py (the MQ choice and the backends'
settings), deploy.py (CR, Helm, overrides, version, role), context.py (what a file leaves unknown or
misleading: version, placeholders, missing or misplaced settings), host.py (this host's ports and disk,
with --check-host), and ../resolve/pinning.py (2.6's mq.type pinned in etcd).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mqctl.config.resolve import pinning
from mqctl.config.resolve.resolution import Resolution
from mqctl.config.rules.assumptions import Assumption, assumptions
from mqctl.config.rules.catalog import RULE_BY_CODE, RULES, Rule, RuleList
from mqctl.config.rules.context import CONTEXT_CHECKS
from mqctl.config.rules.deploy import DEPLOY_CHECKS
from mqctl.config.rules.host import host_checks
from mqctl.config.rules.mq import MQ_CHECKS
from mqctl.errors import EXIT_FINDINGS, EXIT_OK
from mqctl.findings import ERROR, SEVERITY_ORDER, WARNING, Finding

__all__ = ["RULES", "RULE_BY_CODE", "Report", "Rule", "RuleList", "exit_code", "report", "validate"]


def validate(resolution: Resolution, *, strict: bool = False, check_host: bool = False) -> list[Finding]:
    """Every finding for a resolved deployment, errors first; `strict` makes warnings errors (for callers
    that only look at errors; the CLI keeps severities and applies --strict to its exit code instead)."""
    findings: list[Finding] = []
    for check in (*MQ_CHECKS, *DEPLOY_CHECKS, *CONTEXT_CHECKS, pinning.findings):
        findings.extend(check(resolution))
    if check_host:
        findings.extend(host_checks(resolution))
    if strict:
        for found in findings:
            if found.severity == WARNING:
                found.severity = ERROR
    findings.sort(key=lambda f: (SEVERITY_ORDER[f.severity], f.file or "", f.line or 0, f.code))
    return findings


def exit_code(findings: list[Finding], *, strict: bool = False) -> int:
    """1 when any error (or, strict, any warning) was found."""
    bad = {ERROR, WARNING} if strict else {ERROR}
    return EXIT_FINDINGS if any(f.severity in bad for f in findings) else EXIT_OK


@dataclass
class Report:
    """What `config explain` and `config validate` print (the JSON contract in docs/json.md)."""

    effective_mq: str | None
    mode: str
    milvus_version: str | None
    mq_type: str
    panic: str | None
    files: list[str]
    kinds: list[str]
    explanation: list[str]
    findings: list[Finding]
    errors: int
    warnings: int
    attempted_mq: str | None = None
    fails: str | None = None
    role: str | None = None
    assumptions: list[Assumption] = field(default_factory=list)  # mode, version, role taken for granted


def report(resolution: Resolution, findings: list[Finding]) -> Report:
    return Report(
        resolution.effective_mq,
        resolution.mode,
        resolution.milvus_version,
        resolution.mq_type,
        resolution.panic,
        resolution.files,
        resolution.kinds,
        resolution.explanation,
        findings,
        sum(f.severity == ERROR for f in findings),
        sum(f.severity == WARNING for f in findings),
        resolution.attempted_mq,
        resolution.fails,
        resolution.role,
        assumptions(resolution),
    )
