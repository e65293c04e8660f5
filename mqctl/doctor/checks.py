"""The doctor's checks: each one calls the domain (config resolution and rules, the MQ's retention and
channel checkpoints, the migration journal) and turns what it says into `Check`s with a fix.

Nothing here re-implements a check: the config verdict is `mqctl config validate`'s, retention is
`mqctl retention show`'s, checkpoints are `mqctl channels checkpoints`'s, the journal is `mqctl migrate
status`'s. What the doctor adds is the comparison no single command makes: the MQ the running Milvus
uses now against the one its files, environment and etcd would start at the next restart.
"""

from __future__ import annotations

import contextlib
import shlex
import shutil
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mqctl import procfs
from mqctl.backends import BACKENDS, EMBEDDED
from mqctl.config.known_keys import parse_version
from mqctl.config.resolve.sources import DEFAULT_ETCD_ROOT
from mqctl.doctor.discovery import Request, Target, locate
from mqctl.doctor.verdict import OK, Check, DiskUsage, Measured, Report, report
from mqctl.errors import InputError, MqctlError
from mqctl.findings import ERROR, INFO, WARNING, Finding

if TYPE_CHECKING:
    from mqctl.config.resolve.resolution import Resolution
    from mqctl.config.resolve.sources import EtcdConfig
    from mqctl.migrate.journal import Journal
    from mqctl.milvus_client import QuotaStates
    from mqctl.mq.checkpoints import VChannelCheckpoint
    from mqctl.mq.model import MQSource
    from mqctl.mq.sources import SourceOptions
    from mqctl.mq.streaming.state import StreamingState
    from mqctl.mq.streaming.wal_state import WalFiles

FORCE_DENY = "quotaAndLimits.limitWriting.forceDeny"
MiB = 1 << 20


@dataclass
class Examination:
    """What the checks share: the target, the next restart's resolution, the etcd, and what the MQ holds."""

    target: Target
    res: Resolution
    etcd: EtcdConfig | None
    etcd_error: str | None
    etcd_given: bool = False  # --etcd named it: it must answer
    checks: list[Check] = field(default_factory=list)
    unflushed: int | None = None  # messages after the channel checkpoints in the MQ read
    unflushed_rows: int | None = None  # the rows their inserts carry
    data_mq: str | None = None  # the MQ whose data was read
    journal: Journal | None = None  # the migration journal beside the config
    journal_fix: str | None = None  # how to go on with an interrupted migration
    data_messages: int | None = None
    measured: Measured = field(default_factory=Measured)  # the reports behind the checks (the exporter's metrics)

    def add(self, area: str, code: str, severity: str, message: str, fix: str | None = None, **more: Any) -> Check:
        check = Check(area, code, severity, message, fix, **more)
        self.checks.append(check)
        return check

    @property
    def config(self) -> str:
        return self.target.configs[0] if self.target.configs else "milvus.yaml"

    def migrate_command(self, to: str) -> str:
        """The migration that moves this Milvus to `to` (the command the operator copies)."""
        words = ["mqctl", "migrate"]
        if self.target.found_by == "--sandbox" and self.target.paths.get("log"):
            words += ["--sandbox", str(Path(self.config).parent.parent)]
        else:
            words += ["--config", self.config]
            if self.target.milvus:
                words += ["--milvus", self.target.milvus]
        return shlex.join([*words, "--to", to])


def examine(request: Request, root: Path = procfs.PROC) -> Report:
    """Find the Milvus, run every check (the health probe beside the others), and give the verdict."""
    started = time.monotonic()
    target = locate(request, root)
    with ThreadPoolExecutor(max_workers=2) as pool:
        health = pool.submit(health_checks, target, request.timeout)
        loaded = pool.submit(collection_checks, target, request.timeout)
        exam = _resolve(target, request)
        config_checks(exam)
        write_checks(exam)
        with _mq_source(exam, request) as source:
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


# --- config -----------------------------------------------------------------------------------------------
def _resolve(target: Target, request: Request) -> Examination:
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
            _fix_value(exam, "mq.type", exam.target.mq.mq if exam.target.mq and exam.target.mq.mq else "rocksmq")
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


def _fix_value(exam: Examination, key: str, value: str) -> str:
    """The command that gives `key` the value `value` where its effective value comes from."""
    origin = exam.res.origin(key)
    if origin.source == "env":
        return f"remove (or set to {value}) {origin.detail} in Milvus's environment (unit file, compose file, pod spec)"
    if origin.source == "etcd" and exam.etcd is not None:
        return (
            f"etcdctl --endpoints {exam.etcd.shown} put {origin.detail} {value} (or `del` it to fall back to the yaml)"
        )
    file = origin.file or exam.config
    return shlex.join(["mqctl", "config", "set", file, key, value, "--yes"])


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
    fix = f"{_fix_value(exam, 'mq.type', running)}, then `{exam.migrate_command(upcoming)}`"
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
        f"if Milvus last ran on {exam.data_mq}: {_fix_value(exam, 'mq.type', exam.data_mq)}, start it, then "
        f"`{exam.migrate_command(upcoming)}`",
        impact=f"if Milvus last ran on this {exam.data_mq}, what it did not flush stays there when it starts {upcoming}",
    )


def _left_behind(exam: Examination, upcoming: str) -> bool:
    """The other embedded MQ's folder still holds data: what Milvus did not flush if it last ran there and
    mq.type was changed without a migration; only a leftover when a finished migration left it (as it does)."""
    from mqctl.migrate.context import dir_size
    from mqctl.migrate.journal import COMPLETED

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
        f"Milvus last ran on {other}: {_fix_value(exam, 'mq.type', other)}, start it, then "
        f"`{exam.migrate_command(upcoming)}`",
        impact=f"if Milvus last ran on {other}, what it did not flush stays there when it starts {upcoming}",
    )
    return True


# --- writes -----------------------------------------------------------------------------------------------
def write_checks(exam: Examination) -> None:
    res = exam.res
    if exam.target.configs:
        deny = (res.value(FORCE_DENY) or "false").strip().lower() == "true"
        enabled = (res.value("quotaAndLimits.enabled") or "false").strip().lower() == "true"
        exam.measured.force_deny = deny and enabled
        if deny and enabled:
            exam.add(
                "writes",
                "DR200",
                ERROR,
                f"{FORCE_DENY} is true ({res.where(FORCE_DENY)}): Milvus refuses writes",
                _fix_value(exam, FORCE_DENY, "false") + " (refreshable: writes reopen within seconds, no restart)",
                impact="every insert, upsert, delete and bulk load fails with ForceDeny (code 9); queries and flush "
                "still work",
            )
        elif deny:
            exam.add(
                "writes",
                "DR200",
                WARNING,
                f"{FORCE_DENY} is true ({res.where(FORCE_DENY)}) but quotaAndLimits.enabled is not: no effect now, "
                "writes are refused as soon as quotas are enabled",
                _fix_value(exam, FORCE_DENY, "false"),
            )
        else:
            exam.add("writes", "DR200", OK, f"writes are allowed ({FORCE_DENY} is not true)")
    _journal_check(exam)


def _journal_check(exam: Examination) -> None:
    from mqctl.migrate.journal import COMPLETED, PENDING, ROLLED_BACK, Journal, journal_path

    if not exam.target.configs:
        return
    path = journal_path(state_dir=None, config=exam.config)  # where `mqctl migrate --config` journals
    if not path.exists():
        exam.add("writes", "DR210", OK, f"no migration journal at {path}")
        return
    try:
        journal = Journal.load(path)
    except MqctlError as err:
        exam.add("writes", "DR210", WARNING, f"unreadable migration journal: {err.message}", err.hint)
        return
    exam.journal = journal
    what = f"migration {journal.source_mq} -> {journal.target_mq} ({journal.id})"
    if journal.state in (COMPLETED, ROLLED_BACK):
        exam.add("writes", "DR210", OK, f"the last {what} is {journal.state} ({path})")
        return
    records = journal.rollback if journal.rollback else journal.steps
    stopped = next((r for r in records if r.status not in ("done", "skipped")), None)
    if stopped is None or all(r.status == PENDING for r in journal.steps if r.name != "preflight"):
        exam.add("writes", "DR210", INFO, f"a {what} was planned and changed nothing ({path})")
        return
    where = f"step {stopped.name} is {stopped.status}" + (f": {stopped.error}" if stopped.error else "")
    flag = (
        ["--sandbox", str(Path(exam.config).parent.parent)]
        if exam.target.found_by == "--sandbox"
        else ["--config", exam.config]
    )
    writes_stopped = journal.done("stop-writes") and not journal.done("resume-writes")
    exam.journal_fix = (
        f"`{shlex.join(['mqctl', 'migrate', 'resume', *flag])}` to finish it, or "
        f"`{shlex.join(['mqctl', 'migrate', 'rollback', *flag])}` to go back"
    )
    exam.add(
        "writes",
        "DR210",
        ERROR,
        f"an interrupted {what}: {journal.state}, {where} ({path})",
        f"`{shlex.join(['mqctl', 'migrate', 'resume', *flag])}` to finish it, or "
        f"`{shlex.join(['mqctl', 'migrate', 'rollback', *flag])}` to go back; "
        f"`{shlex.join(['mqctl', 'migrate', 'status', *flag])}` shows every step",
        impact="writes stay refused (the migration stopped them) until it is resumed or rolled back"
        if writes_stopped
        else "Milvus is between two MQs until the migration is resumed or rolled back",
    )


# --- the MQ ------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _mq_source(exam: Examination, request: Request) -> Iterator[MQSource | None]:
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
    from mqctl.mq.retention import ConfiguredRetention, retention_report

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
            _int(res.value("rocksmq.retentionSizeInMB") if exam.target.configs else None, 8192) * MiB,
        )
    else:
        key, limit = (
            "natsmq.server.maxFileStore",
            _int(res.value("natsmq.server.maxFileStore") if exam.target.configs else None, 17179869184),
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


def _int(text: str | None, default: int) -> int:
    with contextlib.suppress(TypeError, ValueError):
        return int(str(text).strip())
    return default


# --- checkpoints ---------------------------------------------------------------------------------------------
def checkpoint_checks(exam: Examination, source: MQSource, timeout: float) -> None:
    """Every vchannel's checkpoint against the MQ (as `mqctl channels checkpoints`), and the retention window
    against the oldest checkpoint."""
    from mqctl.mq.checkpoints import EXPIRED, assess
    from mqctl.mq.milvus_meta import MetaReader
    from mqctl.mq.retention import NATS_KEYS, ROCKS_TIME_KEY, ConfiguredRetention, retention_against_checkpoints

    target = exam.target
    if exam.etcd is None:
        severity = WARNING if target.pid is not None or exam.etcd_given else INFO
        why = exam.etcd_error or "no etcd known"
        exam.add(
            "checkpoints",
            "DR401",
            severity,
            f"channel checkpoints not checked: {why}",
            "pass --etcd http://HOST:2379 (the etcd this Milvus uses)",
        )
        return
    configured = ConfiguredRetention(exam.res if target.configs else None)
    meta_path = (exam.res.value("etcd.metaSubPath") if target.configs else None) or "meta"
    try:
        meta = MetaReader(exam.etcd, meta_path).read()
        assessed = assess(
            meta,
            source,
            rocksmq_retention_seconds=configured.get(ROCKS_TIME_KEY).value * 60,
            milvus_uri=target.milvus,
            etcd=exam.etcd.shown,
        )
    except MqctlError as err:
        exam.add("checkpoints", "DR401", WARNING, f"channel checkpoints not checked: {err.message}", err.hint)
        exam.measured.read("etcd", False, err.message)
        return
    exam.measured.checkpoints = assessed
    exam.unflushed = sum(row.lag_messages or 0 for row in assessed.checkpoints)
    exam.unflushed_rows = sum(row.lag_rows or 0 for row in assessed.checkpoints)
    at_risk = _rows_at_risk(target, assessed.checkpoints, timeout)
    for finding in assessed.findings:
        row = next((r for r in assessed.checkpoints if r.vchannel == finding.key), None)
        impact = None
        if row is not None and row.status == EXPIRED:
            lost = f"{row.lost_messages} message(s)" if row.lost_messages is not None else "messages"
            rows = at_risk.get((row.database or "default", row.collection or ""))
            held = (
                f" ({rows} row(s) of {row.database or 'default'}.{row.collection}: what Milvus serves now beyond "
                "its flushed segments, at least)"
                if rows is not None
                else ""
            )
            impact = f"a restart loses the rows in {lost} Milvus had not flushed{held}, without an error"
        exam.checks.append(Check.of("checkpoints", finding, impact))
    if assessed.checkpoints and not assessed.failing:
        exam.add(
            "checkpoints",
            "DR400",
            OK,
            f"{len(assessed.checkpoints)} vchannel(s) checked, none expired or at risk "
            f"({exam.unflushed} message(s) after the checkpoints, {exam.unflushed_rows} inserted row(s), not "
            "flushed yet)",
        )
    if exam.data_mq == "kafka":  # each topic's own retention.ms, as `retention show --kafka --etcd` judges it
        from mqctl import clock
        from mqctl.mq.retention import retention_report, topic_retention_against_checkpoints

        with contextlib.suppress(MqctlError):
            for short_topic in topic_retention_against_checkpoints(
                retention_report(source, configured), meta, clock.now()
            ):
                exam.checks.append(Check.of("checkpoints", short_topic))
        return
    key = NATS_KEYS["max_age"] if exam.data_mq == "natsmq" else ROCKS_TIME_KEY
    with contextlib.suppress(MqctlError):
        short = retention_against_checkpoints(meta, configured.get(key), exam.data_mq or "")
        if short is not None:
            exam.checks.append(Check.of("checkpoints", short))


def _rows_at_risk(target: Target, rows: list[VChannelCheckpoint], timeout: float) -> dict[tuple[str, str], int]:
    """Per collection whose every vchannel's checkpoint expired: the rows a restart loses, at least — what
    Milvus serves now beyond its flushed segments, less the rows still in the MQ after the checkpoints (those
    replay). Asked over gRPC only for such collections; one that is not loaded or does not answer is left out."""
    from mqctl.milvus_client import MilvusTarget, connect, rows_not_flushed_at_least
    from mqctl.mq.checkpoints import EXPIRED

    by_collection: dict[tuple[str, str], list[VChannelCheckpoint]] = {}
    for row in rows:
        if row.collection:
            by_collection.setdefault((row.database or "default", row.collection), []).append(row)
    expired = {key: group for key, group in by_collection.items() if all(r.status == EXPIRED for r in group)}
    if not expired or not target.milvus:
        return {}
    found: dict[tuple[str, str], int] = {}
    for (db, name), group in sorted(expired.items()):
        try:
            client = connect(MilvusTarget(target.milvus), timeout=timeout, db="" if db == "default" else db)
            try:
                replayed = sum(r.lag_rows or 0 for r in group)
                found[(db, name)] = max(rows_not_flushed_at_least(client, name) - replayed, 0)
            finally:
                client.close()
        except Exception:
            continue
    return found


# --- upgrade -----------------------------------------------------------------------------------------------------
V2_5 = (2, 5, 0)


def upgrade_checks(exam: Examination) -> None:
    """What the next Milvus version changes here: natsmq gone in 2.6, mq.type pinned at 2.6's first boot; and,
    when etcd already holds 2.6 streaming state, what it pins and any online WAL switch under way."""
    from mqctl.backends import V2_6

    target, res = exam.target, exam.res
    running = target.mq.mq if target.mq else None
    mqs = {mq for mq in (running, res.effective_mq, res.attempted_mq, res.mq_type) if mq in BACKENDS}
    version = parse_version(target.version) if target.version else None
    streaming = _streaming_state(exam)
    on_2_6 = streaming is not None or (version is not None and version >= V2_6)
    if "natsmq" in mqs:
        fix = f"`{exam.migrate_command('rocksmq')}` before upgrading (standalone; pulsar or kafka for a cluster)"
        if on_2_6:
            severity, said = ERROR, "natsmq was removed in Milvus 2.6 (milvus #41564, PR #41565): this 2.6 Milvus "
            said += "cannot start on it"
            fix = _fix_value(exam, "mq.type", streaming.pinned_mq if streaming and streaming.pinned_mq else "rocksmq")
        elif version is not None and version < V2_5:
            severity = INFO  # nothing to do on 2.3/2.4 until an upgrade is planned
            said = f"natsmq runs fine on Milvus {target.version}, but is deprecated in 2.5 and removed in 2.6 "
            said += "(milvus #41564): an upgrade to 2.6 has to move off it first"
        else:
            severity = WARNING
            said = "natsmq is deprecated in Milvus 2.5 and removed in 2.6 (milvus #41564): this Milvus cannot be "
            said += "upgraded to 2.6 on it"
        exam.add("upgrade", "DR500", severity, said, fix, impact="a 2.6 Milvus with mq.type natsmq panics at startup")
    elif mqs:
        exam.add("upgrade", "DR500", OK, f"{', '.join(sorted(mqs))} exists in Milvus 2.6 as well")
    if not on_2_6:
        upcoming = res.effective_mq or running or "the configured MQ"
        exam.add(
            "upgrade",
            "DR501",
            INFO,
            f"Milvus 2.6 writes mq.type into etcd at its first boot and ignores the yaml afterwards (PR #51543): "
            f"upgraded as it stands, it keeps {upcoming} for good; a later switch is the AlterWAL path "
            "(woodpecker <-> another MQ only, streaming enabled, an etcd config source)",
            "choose the MQ before upgrading; `mqctl migrate plan --to ...` shows the steps",
        )
    if streaming is not None:
        _streaming_checks(exam, streaming)
        wal_state_checks(exam, streaming)


def _streaming_state(exam: Examination) -> StreamingState | None:
    """The 2.6 streaming state of this Milvus's etcd, when it holds one (pchannel assignments, WAL checkpoints)."""
    from mqctl.mq.streaming.state import StreamingReader

    if exam.etcd is None or exam.target.etcd_embedded is True:
        return None
    meta = (exam.res.value("etcd.metaSubPath") if exam.target.configs else None) or "meta"
    reader = StreamingReader(exam.etcd, meta)
    try:
        return reader.read() if reader.detected() else None
    except MqctlError as err:
        exam.add("upgrade", "DR502", WARNING, f"Milvus 2.6 streaming state in etcd not read: {err.message}", err.hint)
        return None


def _streaming_checks(exam: Examination, state: StreamingState) -> None:
    """DR502: etcd holds a 2.6 deployment's WAL state: the MQ pinned at first boot against the yaml, and an
    online WAL switch (AlterWAL, PR #45286) that has not finished."""
    from mqctl.mq.streaming import VERIFICATION

    res, shown = exam.res, exam.etcd.shown if exam.etcd else "URL"
    pchannels = sorted(set(state.pchannels) | set(state.wal_checkpoints))
    wals = sorted({cp.position.wal for cp in state.wal_checkpoints.values() if cp.position is not None})
    pinned = state.pinned_mq
    written = res.yaml_setting("mq.type") if exam.target.configs else None
    wrote = written.value.strip() if written is not None and written.value else None
    switching = {
        name: cp.alter_wal
        for name, cp in state.wal_checkpoints.items()
        if cp.alter_wal is not None and cp.alter_wal.stage != "none"
    }
    summary = (
        f"etcd {shown} holds Milvus 2.6 streaming state: {len(pchannels)} pchannel(s) on "
        f"{', '.join(wals) or 'an unknown WAL'}, mq.type pinned to {pinned or 'nothing yet'} ({state.pinned_key})"
    )
    details = [VERIFICATION, *(f"undecodable: {key}" for key in state.undecodable)]
    seen = False
    if switching:
        seen = True
        first = next(iter(switching.values()))
        exam.add(
            "upgrade",
            "DR502",
            WARNING,
            f"{summary}; an online WAL switch to {first.target} is at stage {first.stage} on "
            f"{len(switching)} pchannel(s) ({', '.join(sorted(switching)[:5])})",
            "let it finish before a restart, an upgrade or a config change (the coordinator drives it; "
            f"`mqctl channels checkpoints --etcd {shown}` shows each pchannel's stage)",
            impact="until every pchannel has switched, the deployment writes to two WALs; known problems after a "
            "switch: milvus #51497 (stale config), #52013 (WALNAME_MISMATCH on query nodes)",
            details=details,
        )
    if written is not None and pinned and wrote and wrote not in ("default", pinned):
        seen = True
        exam.add(
            "upgrade",
            "DR502",
            WARNING,
            f"{summary}; the yaml says mq.type {wrote} ({written.file}:{written.line}), which "
            "changes nothing: the pinned value wins over the yaml and the environment (milvus #50217, #49584)",
            f"{shlex.join(['mqctl', 'config', 'set', written.file or exam.config, 'mq.type', pinned, '--yes'])} "
            f"so the file says what runs; to change the MQ: `mqctl migrate plan --config {exam.config} --to {wrote}` "
            "(the online WAL switch)",
            impact=f"the operator's edit to {wrote} never takes effect: Milvus keeps {pinned}",
            details=details,
        )
    if not seen:
        exam.add("upgrade", "DR502", OK, f"{summary}; no online WAL switch under way", details=details)


def wal_state_checks(exam: Examination, state: StreamingState) -> None:
    """DR402: a 2.6 deployment's WAL checkpoints as `mqctl channels checkpoints --etcd` judges them (CP110 a
    checkpoint on another WAL than the pinned one, CP112 a loopback quorum, CP113 a truncator that does not follow,
    CP114 a dropped vchannel, CP115 an undecodable key), each finding with its fix. An AlterWAL left mid-way
    (CP111) is DR502's."""
    from mqctl.mq.streaming import VERIFICATION
    from mqctl.mq.streaming.checkpoints import RULE_ALTER_WAL_MIDWAY, RULE_NOTHING
    from mqctl.mq.streaming.wal_state import WOODPECKER_FILES, WOODPECKER_META, judge_wal_state

    assert exam.etcd is not None  # a streaming state was read from it
    res, shown = exam.res, exam.etcd.shown
    configs = exam.target.configs
    files = _woodpecker_files(exam, state)
    judged = judge_wal_state(
        state, exam.etcd, configured=lambda key: (res.value(key) if configs else None) or None, wal_files=files
    )
    report, location = judged.report, files.location if files is not None else None
    if files is not None and WOODPECKER_FILES not in judged.unread:
        exam.measured.read("woodpecker", True)
    if WOODPECKER_META in judged.unread:
        err = judged.unread[WOODPECKER_META]
        exam.add("checkpoints", "DR402", WARNING, f"Woodpecker's meta in etcd not read: {err.message}", err.hint)
        exam.measured.read("woodpecker", False, err.message)
    if WOODPECKER_FILES in judged.unread:
        location = None
        _files_unread(exam, judged.unread[WOODPECKER_FILES])
    exam.measured.streaming = report
    words = ["mqctl", "channels", "checkpoints", "--etcd", shown, "--etcd-root", exam.etcd.root]
    command = shlex.join(words + (["--woodpecker", location] if location else []))
    shown_codes = {RULE_ALTER_WAL_MIDWAY, RULE_NOTHING}
    by_code: dict[str, list[Finding]] = {}
    for finding in report.findings:
        if finding.code not in shown_codes:
            by_code.setdefault(finding.code, []).append(finding)
    for code, findings in sorted(by_code.items()):
        first = findings[0]
        more = f" (and {len(findings) - 1} more: {command})" if len(findings) > 1 else ""
        fix = f"{first.hint}; every row: `{command}`" if first.hint else f"every row: `{command}`"
        exam.add(
            "checkpoints",
            code,
            first.severity,
            first.message + more,
            fix if first.severity != INFO else None,
            details=[VERIFICATION, *(f.message for f in findings[1:])],
        )
    if not any(f.severity in (ERROR, WARNING) for group in by_code.values() for f in group):
        exam.add(
            "checkpoints",
            "DR402",
            OK,
            f"{len(report.pchannels)} pchannel(s) and {len(report.vchannels)} vchannel(s) of the 2.6 WAL state: "
            "every checkpoint on the pinned WAL"
            + (
                ", Woodpecker's quorum and truncation as expected"
                if judged.woodpecker and judged.woodpecker.logs
                else ""
            )
            + (
                f", what each needs still in the {len(judged.segments)} segment(s) at {location}"
                if location and judged.segments is not None
                else ""
            ),
            details=[VERIFICATION],
        )


def _woodpecker_files(exam: Examination, state: StreamingState) -> WalFiles | None:
    """Where the config says Milvus writes the Woodpecker segments (a local folder or its bucket), so DR402 can tell
    whether each checkpoint's entries are still stored (CP116) and the files are whole (CP117); None when the
    deployment is not on Woodpecker (or the config says no location: an info)."""
    from mqctl.mq.streaming.wal_state import WalFiles
    from mqctl.mq.woodpecker.location import woodpecker_location

    res = exam.res
    on_woodpecker = (state.pinned_mq or res.effective_mq) == "woodpecker"
    if not exam.target.configs or not on_woodpecker:
        return None
    try:
        found = woodpecker_location(res)
    except MqctlError as err:
        _files_unread(exam, err)
        return None
    return WalFiles(found.location, found.access)


def _files_unread(exam: Examination, err: MqctlError) -> None:
    """The Woodpecker files could not be found or read: said as an info, the checkpoints judged without them."""
    exam.measured.read("woodpecker", False, err.message)
    exam.add(
        "checkpoints",
        "DR402",
        INFO,
        f"the Woodpecker files were not read, so checkpoints are not compared with them: {err.message}",
        err.hint,
    )


# --- health --------------------------------------------------------------------------------------------------------
def health_checks(target: Target, timeout: float) -> list[Check]:
    """/healthz of the running Milvus (runs beside the other checks)."""
    import httpx

    from mqctl import http

    checks = []
    if target.pid is None or not target.health_url:
        checks.append(Check("health", "DR600", INFO, "no running Milvus: /healthz not checked"))
    else:
        try:
            answer = http.client().get(target.health_url, timeout=timeout)
            text = answer.text.strip()[:200]
            if answer.status_code == 200 and "OK" in text:
                checks.append(Check("health", "DR600", OK, f"{target.health_url} answers OK"))
            else:
                checks.append(
                    Check(
                        "health",
                        "DR600",
                        ERROR,
                        f"{target.health_url} answers HTTP {answer.status_code}: {text}",
                        f"see Milvus's log ({target.paths.get('log', 'its stdout')})",
                        impact="a component is down: requests to it fail",
                    )
                )
        except httpx.HTTPError as err:
            checks.append(
                Check(
                    "health",
                    "DR600",
                    ERROR,
                    f"{target.health_url} does not answer within {timeout:g} s: {type(err).__name__}",
                    f"is METRICS_PORT {target.ports.get('health')} right? see Milvus's log",
                )
            )
    return checks


def version_check(target: Target) -> Check:
    """The Milvus version and where it came from (the rules that differ by version use it)."""
    if target.version:
        return Check("health", "DR601", OK, f"Milvus {target.version} (from {target.version_from})")
    return Check(
        "health",
        "DR601",
        INFO,
        "the Milvus version is not known (no `Version:` banner in its log, no server answering): rules that "
        "differ by version give every version's answer",
        "pass --milvus-version (e.g. 2.3.5)",
    )


def collection_checks(target: Target, timeout: float) -> tuple[list[Check], QuotaStates | None]:
    """Over gRPC: the server's version, the collections not loaded (queries on them fail; a restart loads only
    what was loaded), and the quota states its proxy enforces now (CheckHealth; `quota_check` judges them)."""
    from mqctl.milvus_client import MilvusTarget, connect, each_collection, is_loaded, quota_states, server_version

    if target.pid is None and not target.milvus:
        return [], None
    if not target.milvus:
        return [
            Check("health", "DR602", INFO, "no gRPC address known: collections not checked", "pass --milvus URI")
        ], None
    uri = target.milvus
    try:
        client = connect(MilvusTarget(uri), timeout=timeout)
        try:
            version = server_version(client)
            names, not_loaded = [], []
            for each, db, name in each_collection(MilvusTarget(uri), main=client):
                names.append(f"{db}.{name}")
                if not is_loaded(each, name):
                    not_loaded.append(f"{db}.{name}")
            quota = quota_states(client, timeout)
        finally:
            client.close()
    except Exception as err:  # pymilvus raises its own and gRPC errors: each is one finding, never a traceback
        message = getattr(err, "message", None) or str(err) or type(err).__name__
        return [
            Check(
                "health",
                "DR602",
                WARNING if target.pid is not None else INFO,
                f"Milvus at {uri} does not answer over gRPC within {timeout:g} s: {message[:200]}",
                "check the proxy port (proxy.port) or pass --milvus URI",
            )
        ], None
    if target.version is None:
        target.version, target.version_from = version, "the server (GetVersion)"
    if not_loaded:
        return [
            Check(
                "health",
                "DR602",
                INFO,
                f"{len(not_loaded)} of {len(names)} collection(s) not loaded: {', '.join(not_loaded[:10])}",
                "load them (MilvusClient.load_collection) if they should answer queries",
                impact="searches and queries on them fail until they are loaded",
            )
        ], quota
    return [Check("health", "DR602", OK, f"Milvus {version} at {uri}: {len(names)} collection(s), all loaded")], quota


FORCE_DENY_REASON = "deactivated by the administrator"  # GetQuotaErrorString(ErrorCode_ForceDeny)


def quota_check(exam: Examination, quota: QuotaStates) -> None:
    """DR603: what the quota center makes the proxy refuse right now. forceDeny in the files (DR200) is what
    the next refresh applies; this is what is in force, whoever set it (the yaml, etcd, a migration that
    stopped writes, memory or disk protection)."""
    if not quota.healthy:
        exam.add(
            "health",
            "DR603",
            WARNING,
            f"CheckHealth: Milvus reports itself unhealthy ({'; '.join(quota.reasons)[:300] or 'no reason given'}): "
            "its quota states are not reported",
            f"see Milvus's log ({exam.target.paths.get('log', 'its stdout')})",
        )
        return
    if not quota.states:
        exam.add("health", "DR603", OK, "the quota center limits nothing now (CheckHealth: no quota state)")
        return
    pairs = list(zip(quota.states, quota.reasons + [""] * len(quota.states), strict=False))
    said = "; ".join(f"{state}: {reason}" if reason else state for state, reason in pairs)
    denied = [state for state in quota.states if state.startswith("DenyTo")]
    if not denied:
        exam.add(
            "health",
            "DR603",
            WARNING,
            f"the quota center slows requests down now ({said})",
            "see the quota settings under quotaAndLimits and the node's memory and disk",
            impact="requests over the lowered rates fail with RateLimit until the pressure is gone",
        )
        return
    if exam.target.configs and (exam.res.value("quotaAndLimits.enabled") or "").strip().lower() == "false":
        exam.add(
            "health",
            "DR603",
            INFO,
            f"the proxy reports {said}, but quotaAndLimits.enabled is false ({exam.res.where('quotaAndLimits.enabled')}): "
            "a disabled quota center enforces nothing (the state is what it last applied)",
            "nothing to do while quotas stay off; before enabling them, make sure forceDeny is false",
        )
        return
    forced = any(FORCE_DENY_REASON in reason for reason in quota.reasons)
    in_config = exam.target.configs and (exam.res.value(FORCE_DENY) or "").strip().lower() == "true"
    if forced and in_config:
        fix = f"as for DR200: {_fix_value(exam, FORCE_DENY, 'false')}"
    elif forced and exam.journal_fix:
        fix = f"an unfinished migration stopped writes (DR210): {exam.journal_fix}"
    elif forced:
        fix = (
            f"{FORCE_DENY} is not true in the config read here: whoever set it (etcd, another tool) sets it back "
            "to false; `mqctl config explain --etcd URL` shows where it comes from"
        )
    else:
        fix = "free memory or disk on the node (the reasons say which), or raise the quotaAndLimits thresholds"
    what = {
        "DenyToWrite": "every insert, upsert, delete and bulk load fails now",
        "DenyToRead": "every search and query fails now",
    }
    exam.add(
        "health",
        "DR603",
        ERROR,
        f"Milvus refuses {' and '.join(s.removeprefix('DenyTo').lower() + 's' for s in denied)} now ({said})",
        fix,
        impact="; ".join(what.get(state, state) for state in denied) + " (CheckHealth quota states)",
    )
