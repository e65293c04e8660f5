"""Config checks: the verdict of `mqctl config validate` on the files Milvus restarts with, and the drift between the MQ it runs now and the one its files, environment and etcd would start."""

from __future__ import annotations

import contextlib
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from mqctl.backends import EMBEDDED
from mqctl.config.resolve.sources import DEFAULT_ETCD_ROOT
from mqctl.doctor.checks.examination import Examination, fix_value
from mqctl.doctor.discovery import Request, Target
from mqctl.doctor.verdict import OK, Check
from mqctl.errors import InputError, MqctlError
from mqctl.findings import ERROR, INFO, WARNING

if TYPE_CHECKING:
    from mqctl.config.resolve.resolution import Resolution


# --- config -----------------------------------------------------------------------------------------------
def resolve_examination(target: Target, request: Request) -> Examination:
    """The next restart's config: the yaml files, the process's environment and (where Milvus reads them)
    the etcd overrides. The etcd of an embedded-etcd 2.3 Milvus is read only to say its keys are ignored."""
    from mqctl.config.resolve.resolution import resolve
    from mqctl.config.resolve.sources import EtcdConfig

    etcd, error, keys = None, None, None
    if target.etcd:
        try:
            etcd = EtcdConfig(target.etcd, target.etcd_root or DEFAULT_ETCD_ROOT, timeout=request.timeout)
            keys = {item.key: item.value for item in etcd.read().values()}
        except InputError:
            if request.etcd:
                raise  # the --etcd given is no URL (a bracket missing, a bad port): bad input, not a finding
            etcd, error = None, "the etcd URL Milvus was started with cannot be read as a URL"
        except MqctlError as err:
            etcd, error = None, err.message
    overrides = etcd if etcd is not None and target.etcd_embedded is not True else None
    if not target.configs:
        res = resolve_without_config()
    else:
        res = resolve(
            target.configs,
            mode="standalone",
            milvus_version=target.version,
            env=target._environ or {},
            etcd=overrides,
            role="full",
        )
    target.next_mq = res.effective_mq
    exam = Examination(target, res, etcd, error, etcd_given=bool(request.etcd))
    exam.measured.etcd_config = keys
    if target.configs:
        exam.measured.read("config", True)
    if target.etcd:
        exam.measured.read("etcd", etcd is not None, error or "")
    return exam


def resolve_without_config() -> Resolution:
    """Only an MQ was given: Milvus's defaults stand for the config (retention windows)."""
    from mqctl.config.resolve.resolution import Resolution

    return Resolution(None, "standalone", None, ["no config given: Milvus's defaults"])


def config_checks(exam: Examination) -> None:
    from mqctl.config.rules.report import validate

    res, target = exam.res, exam.target
    if not target.configs:
        exam.add("config", "DR100", INFO, "no config given: what the next restart starts is not checked")
        return
    files = " ".join(shlex.quote(f) for f in target.configs)
    where = res.where("mq.type")
    if res.effective_mq and not res.fails:
        exam.add(
            "config",
            "DR100",
            OK,
            f"the next restart starts {res.effective_mq} (mq.type {res.mq_type!r}, {where})",
            details=res.explanation,
        )
    else:
        exam.add(
            "config",
            "DR101",
            ERROR,
            f"the next restart fails: mq.type {res.mq_type!r} ({where}) makes Milvus "
            + (f"panic `{res.panic}`" if res.panic else f"try {res.attempted_mq} and fail: `{res.fails}`"),
            fix_value(exam, "mq.type", exam.target.mq.mq if exam.target.mq and exam.target.mq.mq else "rocksmq")
            + f"; `mqctl config explain {files}` shows each step",
            impact="Milvus does not come up after its next restart: every read and write fails until the config "
            "is fixed",
            details=res.explanation,
        )
    for finding in validate(res):
        exam.checks.append(Check.of("config", finding))
    if exam.etcd is not None and target.etcd_embedded is True:
        with contextlib.suppress(MqctlError):
            keys = list(exam.etcd.read())
            if keys:
                exam.add(
                    "config",
                    "DR112",
                    WARNING,
                    f"{len(keys)} key(s) under {exam.etcd.prefix} in the embedded etcd ({', '.join(keys[:5])}): "
                    "Milvus with an embedded etcd does not read its etcd config source (seen on 2.3.5), so they "
                    "change nothing",
                    "set them in the yaml instead (`mqctl config set FILE KEY VALUE`)",
                )


def drift_checks(exam: Examination) -> None:
    """The running MQ (log, open files) against the one the files/env/etcd on disk now would start."""
    target, res = exam.target, exam.res
    if not target.configs:
        return
    seen = target.mq
    running = seen.mq if seen else None
    upcoming = res.effective_mq if not res.fails else None
    if target.pid is None:
        _offline_drift(exam, upcoming)
        return
    if upcoming is None:
        return  # the next restart does not start at all: DR101 says so, with its fix
    if seen is None or running is None:
        exam.add(
            "config",
            "DR110",
            INFO,
            "which MQ the running Milvus uses is not known (no `try to init mq` line in its log, no MQ file open): "
            "drift not checked",
        )
        return
    if running == upcoming:
        exam.add(
            "config",
            "DR110",
            OK,
            f"Milvus runs {running} now and its config would start {running} again ({seen.evidence})",
        )
        return
    unflushed = (
        f"{exam.unflushed} message(s) after the channel checkpoints, not flushed ({exam.unflushed_rows} inserted "
        "row(s))"
        if exam.unflushed is not None
        else "whatever was not flushed"
    )
    location = target.paths.get(running if running in ("rocksmq", "natsmq") else "", "")
    fix = f"{fix_value(exam, 'mq.type', running)}, then `{exam.migrate_command(upcoming)}`"
    if exam.journal_fix:  # the edit is a migration's own switch step: go on with it, or back
        fix = f"an unfinished migration made this change (DR210): {exam.journal_fix}"
    exam.add(
        "config",
        "DR110",
        ERROR,
        f"Milvus runs {running} now, but the next restart starts an empty {upcoming} "
        f"(mq.type {res.mq_type!r} from {res.where('mq.type')}) without a migration",
        fix,
        impact=f"the next restart leaves the {running} data{' at ' + location if location else ''} behind: "
        f"{unflushed} are lost to Milvus",
        details=[seen.evidence],
    )


def _offline_drift(exam: Examination, upcoming: str | None) -> None:
    """No process: the MQ whose data was given against the one the config starts."""
    if exam.data_mq is None or upcoming is None:
        return
    if exam.data_mq == upcoming:
        if not _left_behind(exam, upcoming):
            exam.add("config", "DR111", OK, f"the data read is {upcoming}'s, the MQ the config starts")
        return
    held = f"{exam.data_messages} message(s)" if exam.data_messages is not None else "data"
    severity = WARNING if exam.data_messages else INFO
    exam.add(
        "config",
        "DR111",
        severity,
        f"the {exam.data_mq} given holds {held}, but the config starts {upcoming}",
        f"if Milvus last ran on {exam.data_mq}: {fix_value(exam, 'mq.type', exam.data_mq)}, start it, then "
        f"`{exam.migrate_command(upcoming)}`",
        impact=f"if Milvus last ran on this {exam.data_mq}, what it did not flush stays there when it starts {upcoming}",
    )


def _left_behind(exam: Examination, upcoming: str) -> bool:
    """The other embedded MQ's folder still holds data: what Milvus did not flush if it last ran there and
    mq.type was changed without a migration; only a leftover when a finished migration left it (as it does)."""
    from mqctl.migrate.context import dir_size
    from mqctl.migrate.record.journal import COMPLETED

    other = next((mq for mq in EMBEDDED if mq != upcoming), None)
    folder = Path(exam.target.paths.get(other or "", ""))
    data = folder / "jetstream" if other == "natsmq" else folder
    if other is None or not str(folder) or not data.is_dir():
        return False
    size = dir_size(data)
    if size == 0:
        return False
    journal = exam.journal
    if journal is not None and journal.state == COMPLETED and journal.source_mq == other:
        exam.add(
            "config",
            "DR111",
            INFO,
            f"{folder} ({size // 1024} KiB of {other}) is what the completed migration {journal.id} left behind",
            f"remove it once no rollback or backup needs it (`mqctl migrate status --config {exam.config}`)",
        )
        return True
    exam.add(
        "config",
        "DR111",
        WARNING,
        f"the config starts {upcoming}, but the {other} folder {folder} still holds {size // 1024} KiB and no "
        "finished migration explains it",
        f"see what it holds: `mqctl channels list --{'rocksmq' if other == 'rocksmq' else 'nats-store'} {folder}`; if "
        f"Milvus last ran on {other}: {fix_value(exam, 'mq.type', other)}, start it, then "
        f"`{exam.migrate_command(upcoming)}`",
        impact=f"if Milvus last ran on {other}, what it did not flush stays there when it starts {upcoming}",
    )
    return True
