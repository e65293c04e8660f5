"""The doctor's checks: each one calls the domain (config resolution and rules, the MQ's retention and
channel checkpoints, the migration journal) and turns what it says into `Check`s with a fix.

Nothing here re-implements a check: the config verdict is `mqctl config validate`'s, retention is
`mqctl retention show`'s, checkpoints are `mqctl channels checkpoints`'s, the journal is `mqctl migrate
status`'s. What the doctor adds is the comparison no single command makes: the MQ the running Milvus
uses now against the one its files, environment and etcd would start at the next restart.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mqctl.doctor.checks.checkpoints import checkpoint_checks
from mqctl.doctor.checks.config import config_checks, drift_checks, resolve_examination
from mqctl.doctor.checks.health import collection_checks, health_checks, quota_check, version_check
from mqctl.doctor.checks.mq import mq_checks, mq_source
from mqctl.doctor.checks.upgrade import upgrade_checks
from mqctl.doctor.checks.writes import write_checks
from mqctl.doctor.discovery import Request, locate
from mqctl.doctor.verdict import Report, report
from mqctl.host import procfs


def examine(request: Request, root: Path = procfs.PROC) -> Report:
    """Find the Milvus, run every check (the health probe beside the others), and give the verdict."""
    started = time.monotonic()
    target = locate(request, root)
    with ThreadPoolExecutor(max_workers=2) as pool:
        health = pool.submit(health_checks, target, request.timeout)
        loaded = pool.submit(collection_checks, target, request.timeout)
        exam = resolve_examination(target, request)
        config_checks(exam)
        write_checks(exam)
        with mq_source(exam, request) as source:
            if source is not None:
                mq_checks(exam, source)
                checkpoint_checks(exam, source, request.timeout)
        drift_checks(exam)
        upgrade_checks(exam)
        exam.checks += health.result()
        served, quota = loaded.result()
        exam.checks += served
        if quota is not None:
            quota_check(exam, quota)
            exam.measured.quota = quota
        if target.milvus:
            exam.measured.read("milvus", quota is not None, "" if quota is not None else served[0].message)
    exam.checks.append(version_check(target))
    return report(target, exam.checks, round(time.monotonic() - started, 3), exam.measured)
