"""MQ checks: the MQ's data as `mqctl retention show` judges it, the disk under it, and who else uses the store."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from mqctl.backends import EMBEDDED
from mqctl.doctor.checks.examination import Examination, MiB, parse_int
from mqctl.doctor.discovery import Request
from mqctl.doctor.verdict import OK, Check, DiskUsage
from mqctl.errors import MqctlError
from mqctl.findings import ERROR, INFO, WARNING

if TYPE_CHECKING:
    from mqctl.mq.model import MQSource
    from mqctl.mq.sources import SourceOptions


# --- the MQ ------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def mq_source(exam: Examination, request: Request) -> Iterator[MQSource | None]:
    """The MQ holding the data that matters now, open: the one given; else the one Milvus runs; else the one
    the config starts. None (with a DR300 finding) when there is none to read or it cannot be opened; errors
    of the checks that read it are theirs."""
    from mqctl.mq.sources import open_source

    try:
        options = _source_options(exam, request)
        if options is None:
            yield None
            return
        exam.data_mq = exam.measured.mq = "rocksmq" if options.rocksmq else "natsmq" if options.explicit else "kafka"
        opened = contextlib.ExitStack()
        source = opened.enter_context(open_source(options))
        exam.data_mq = source.mq
    except MqctlError as err:
        severity = ERROR if exam.target.pid else WARNING
        exam.add("mq", "DR300", severity, f"the MQ could not be read: {err.message}", err.hint)
        exam.measured.read("mq", False, err.message)
        yield None
        return
    exam.measured.read("mq", True)
    with opened:
        yield source


def _source_options(exam: Examination, request: Request) -> SourceOptions | None:
    from mqctl.mq.sources import SourceOptions, derive_source

    target, res = exam.target, exam.res
    options = SourceOptions(
        rocksmq=Path(request.rocksmq) if request.rocksmq else None,
        nats=request.nats,
        nats_store=Path(request.nats_store) if request.nats_store else None,
        timeout=request.timeout,
    )
    if options.explicit:
        return options if options.nats_store is None or _store_idle(exam, options.nats_store) else None
    running = target.mq.mq if target.mq else None
    if running == "rocksmq" and target.paths.get("rocksmq"):
        options.rocksmq = Path(target.paths["rocksmq"])
        return options
    if running == "natsmq" and target.ports.get("natsmq"):
        options.nats = f"nats://127.0.0.1:{target.ports['natsmq']}"
        return options
    if target.configs and (running == "kafka" or (running is None and res.effective_mq == "kafka")):
        options.config = [Path(file) for file in target.configs]  # its kafka.* settings reach the brokers
        return options
    if running is not None and running not in EMBEDDED:
        exam.add("mq", "DR300", INFO, f"Milvus runs {running}: the MQ checks read rocksmq, natsmq and kafka only")
        return None
    if running is None and target.configs and res.effective_mq in EMBEDDED:
        derived = derive_source(res)
        location = derived.location
        if derived.kind == "nats":
            options.nats = location
            return options
        path = Path(location)
        if not path.is_absolute() and target.cwd:
            path = Path(target.cwd) / path
        if not path.exists():
            exam.add("mq", "DR300", INFO, f"no {res.effective_mq} data at {path} ({derived.reason})")
            return None
        if derived.kind == "rocksmq":
            options.rocksmq = path
        else:
            options.nats_store = path
    if options.nats_store is not None and not _store_idle(exam, options.nats_store):
        return None
    if options.explicit:
        return options
    what = running or res.effective_mq or "unknown"
    exam.add("mq", "DR300", INFO, f"the MQ is {what}: no rocksmq or natsmq data to read")
    return None


def mq_checks(exam: Examination, source: MQSource) -> None:
    """Retention (as `mqctl retention show`), data warnings, disk headroom, a store used twice."""
    from mqctl.mq.retention import retention_report
    from mqctl.mq.retention_model import ConfiguredRetention

    try:
        found = retention_report(source, ConfiguredRetention(exam.res if exam.target.configs else None))
    except MqctlError as err:
        exam.add("mq", "DR301", WARNING, f"retention not checked: {err.message}", err.hint)
        exam.measured.read("mq", False, err.message)
        return
    exam.measured.retention = found
    exam.data_messages = sum(int(r.actual.get("messages") or 0) for r in found.channels)
    for group in found.finding_groups:
        named = f"{len(group.channels)} channel(s) ({', '.join(group.channels[:3])}{'…' if len(group.channels) > 3 else ''}): "
        exam.checks.append(
            Check("mq", group.code, group.severity, named + group.message, group.hint, details=group.channels)
        )
    if not found.finding_groups:
        exam.add(
            "mq",
            "DR301",
            OK,
            f"{source.description}: {len(found.channels)} channel(s), {exam.data_messages} message(s); "
            + (
                "the topics' configs are as Milvus needs them"
                if source.mq == "kafka"
                else "retention matches the config"
            ),
        )
    for warning in found.warnings:
        exam.add("mq", "DR302", WARNING, warning, "see `mqctl channels list` for the channel; restore or rebuild it")
    _disk_headroom(exam, source)
    _store_users(exam, source)


def _disk_headroom(exam: Examination, source: MQSource) -> None:
    from mqctl.migrate.context import dir_size

    if exam.data_mq == "kafka":
        return  # the brokers' disks are not this host's
    res = exam.res
    folder = Path(exam.target.paths.get("rocksmq" if exam.data_mq == "rocksmq" else "natsmq", ""))
    store = getattr(source, "store", None)
    if store is not None:
        folder = Path(store)
    if not str(folder) or not folder.is_dir():
        return
    if exam.data_mq == "rocksmq":
        key, limit = (
            "rocksmq.retentionSizeInMB",
            parse_int(res.value("rocksmq.retentionSizeInMB") if exam.target.configs else None, 8192) * MiB,
        )
    else:
        key, limit = (
            "natsmq.server.maxFileStore",
            parse_int(res.value("natsmq.server.maxFileStore") if exam.target.configs else None, 17179869184),
        )
    used = dir_size(folder)
    free = shutil.disk_usage(folder).free
    exam.measured.disk = DiskUsage(str(folder), used, free, max(limit, 0), key)
    room = limit - used
    if limit > 0 and room > free:
        exam.add(
            "mq",
            "DR310",
            WARNING,
            f"{folder} may grow by {room // MiB} MiB more ({key} {limit // MiB} MiB, {used // MiB} MiB used) "
            f"but its volume has {free // MiB} MiB free",
            f"free disk space, or lower {key}",
            impact="a full MQ volume stops every write and can stop Milvus (milvus #16606, #19574)",
        )
    else:
        exam.add("mq", "DR310", OK, f"{folder}: {used // MiB} MiB used, {free // MiB} MiB free on its volume")


def _store_idle(exam: Examination, store: Path) -> bool:
    """A natsmq store read while Milvus is stopped: no other process may use it (two servers on one JetStream
    store corrupt it). False, with the error, when one does."""
    from mqctl.mq.nats.server import store_users

    users = store_users(store)
    if users:
        exam.add(
            "mq",
            "DR311",
            ERROR,
            f"the natsmq store {store} is in use by {', '.join(users)}",
            "stop that process before Milvus (or any tool) opens the store; with Milvus running, use --nats URL",
            impact="two servers on one JetStream store corrupt it; Milvus fails to start its embedded server",
        )
        return False
    exam.add("mq", "DR311", OK, f"no process uses the natsmq store {store}")
    return True


def _store_users(exam: Examination, source: MQSource) -> None:
    """Milvus runs natsmq: any process besides it on its store."""
    from mqctl.mq.nats.server import store_users

    store = exam.target.paths.get("natsmq")
    if getattr(source, "store", None) is not None or exam.data_mq != "natsmq" or not store or not Path(store).is_dir():
        return  # a store opened by the doctor was checked before (_store_idle)
    with contextlib.suppress(MqctlError):
        others = [u for u in store_users(store) if not u.startswith(f"{exam.target.pid} ")]
        if others:
            exam.add(
                "mq",
                "DR311",
                WARNING,
                f"besides Milvus, {', '.join(others)} use(s) its natsmq store {store}",
                "stop the other process",
                impact="two servers on one JetStream store corrupt it",
            )
        else:
            exam.add("mq", "DR311", OK, f"only Milvus uses its natsmq store {store}")
