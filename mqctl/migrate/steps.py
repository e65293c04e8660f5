"""The migration steps: each idempotent, each leaving its evidence in the journal.

preflight -> stop-writes -> flush -> stop -> switch -> start -> verify -> resume-writes -> backup.
A step that fails raises `StepFailed` (exit 3) with what was seen and what to do next; the
journal then says exactly where things stand, and `resume` runs the remaining steps again.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mqctl.backends import port_of
from mqctl.errors import MqctlError, PreconditionError
from mqctl.migrate import hooks
from mqctl.migrate.journal import PENDING, SKIPPED, Journal, StepRecord, now
from mqctl.migrate.milvus import MilvusTarget

FORCE_DENY = "quotaAndLimits.limitWriting.forceDeny"
FORCE_DENY_ETCD = "quotaAndLimits/limitWriting/forceDeny"
MQ_TYPE_ETCD = "mq/type"
CRASH_ENV = "MQCTL_CRASH_AFTER_STEP"  # testing aid: SIGKILL this process right after the named step


class StepFailed(PreconditionError):
    """A step could not complete: exit 3 with the step, what was seen and what to do next."""

    def __init__(self, step: str, seen: str, next_action: str, *, writes_note: str = ""):
        message = f"step {step} failed: {seen}" + (f" ({writes_note})" if writes_note else "")
        super().__init__(message, hint=next_action)
        self.step, self.seen, self.next_action, self.writes_note = step, seen, next_action, writes_note


@dataclass
class MigrateOptions:
    """Everything a migration needs; `journaled()` is what may be written down (no secrets)."""

    configs: list[str]
    to: str
    milvus: MilvusTarget
    stop_cmd: str | None = None
    start_cmd: str | None = None
    shell: bool = False
    log_file: str | None = None
    log_cmd: str | None = None
    health_url: str | None = None
    etcd: str | None = None
    etcd_root: str = "by-dev"
    backup_dir: str | None = None
    cleanup: bool = False
    writes_stopped: bool = False
    clear_etcd_override: bool = False
    store_dir: str | None = None
    nats_port: int | None = None
    milvus_version: str | None = None
    flush_timeout: float = 600
    stop_timeout: float = 120
    start_timeout: float = 300
    verify_timeout: float = 600
    confirm_timeout: float = 90

    def journaled(self) -> dict:
        data = {k: v for k, v in self.__dict__.items() if k != "milvus"}
        data["milvus"] = self.milvus.public()
        if self.etcd:  # an etcd password is given again to resume (--etcd), like Milvus's
            from mqctl.urls import without_password

            data["etcd"] = without_password(self.etcd)
        return data

    @classmethod
    def check_journaled(cls, data: dict) -> None:
        """ValueError naming the first journaled option that is missing or of the wrong type."""
        kinds: dict[str, type | tuple[type, ...]] = {
            "str": str,
            "bool": bool,
            "float": (int, float),
            "int": int,
            "None": type(None),
            "list[str]": list,
        }
        for name, spec in cls.__dataclass_fields__.items():
            if name == "milvus":
                if not isinstance(data.get(name), dict) or not isinstance(data[name].get("uri"), str):
                    raise ValueError("options.milvus.uri is missing or not text")
                continue
            if name not in data:
                if spec.default is dataclasses.MISSING:
                    raise ValueError(f"options.{name} is missing")
                continue
            value, allowed = data[name], spec.type.split(" | ")  # annotations stay strings here
            if not isinstance(value, tuple(kinds[t] for t in allowed)) or (
                isinstance(value, bool) and "bool" not in allowed
            ):
                raise ValueError(f"options.{name} is {value!r}, not {spec.type}")
        if not data["configs"] or not all(isinstance(c, str) for c in data["configs"]):
            raise ValueError("options.configs is not a list of config paths")

    @classmethod
    def from_journal(cls, data: dict, milvus: MilvusTarget) -> MigrateOptions:
        fields = {k: v for k, v in data.items() if k != "milvus" and k in cls.__dataclass_fields__}
        return cls(milvus=milvus, **fields)

    @property
    def log(self) -> hooks.MilvusLog:
        return hooks.MilvusLog(self.log_file, self.log_cmd, self.shell)

    @property
    def live_config(self) -> str:
        """The file Milvus reads last (highest precedence), where switch and forceDeny edits go."""
        return self.configs[-1]

    def etcd_client(self):
        if not self.etcd:
            return None
        from mqctl.config.sources import EtcdConfig

        return EtcdConfig(self.etcd, root=self.etcd_root)


@dataclass
class Finding:
    level: str  # error | warning | info
    code: str
    message: str
    hint: str = ""


@dataclass
class Reporter:
    """How progress reaches the operator (the CLI prints; tests and JSON mode stay quiet)."""

    step_started: Callable[[StepRecord], None] = lambda record: None
    step_finished: Callable[[StepRecord], None] = lambda record: None
    waiting: Callable[[str], None] = lambda text: None


@dataclass
class Context:
    journal: Journal
    options: MigrateOptions
    report: Reporter = field(default_factory=Reporter)
    rollback: bool = False

    # the MQ Milvus must run on after the step sequence in progress
    @property
    def expected_mq(self) -> str:
        return self.journal.source_mq if self.rollback else self.journal.target_mq

    @property
    def steps(self) -> list[StepRecord]:
        return self.journal.rollback if self.rollback else self.journal.steps

    def record(self, name: str) -> StepRecord:
        """The step of this sequence, else the migration's (a rollback reuses its stop-writes and flush)."""
        for record in self.steps:
            if record.name == name and record.status != PENDING:
                return record
        return self.journal.step(name)

    def client(self):
        from mqctl.migrate.milvus import connect

        return connect(self.options.milvus)


# ------------------------------------------------------------------ helpers shared by steps


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def parse_time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def resolution(options: MigrateOptions, version: str | None = None, env: dict[str, str] | None = None):
    from mqctl.config.resolve import resolve

    return resolve(
        options.configs, milvus_version=version or options.milvus_version, env=env, etcd=options.etcd_client()
    )


def milvus_environment(options: MigrateOptions) -> tuple[dict[str, str] | None, str]:
    """The environment the local Milvus process runs with (MQ_TYPE and the like override its yaml), and
    where it came from; None when Milvus is not a process of this host that mqctl may read."""
    from mqctl.procfs import listening_pid, process_environ, process_name

    pid = listening_pid(options.milvus.uri, 19530)
    if pid is None:
        return None, f"no local process listens on {options.milvus.uri}"
    name = process_name(pid)
    if name != "milvus":
        return None, f"{options.milvus.uri} is served by {pid} ({name}), not by a milvus process (a proxy?)"
    env = process_environ(pid)
    if env is None:
        return None, f"the environment of {pid} ({name}) is not readable by this user"
    return env, f"read from {pid} ({name})"


def milvus_up(options: MigrateOptions) -> bool:
    if options.health_url:
        return hooks.http_healthy(options.health_url)
    return hooks.port_open(options.milvus.uri)


def milvus_down(options: MigrateOptions) -> bool:
    health_gone = not options.health_url or not hooks.http_healthy(options.health_url)
    return health_gone and not hooks.port_open(options.milvus.uri)


def dir_size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def non_empty_dir(path: Path) -> bool:
    return path.is_dir() and any(path.iterdir())


def mq_dirs(res, mq: str, store_dir: str | None = None) -> list[Path]:
    """The local folders that hold an embedded MQ's data (what backup archives and cleanup deletes)."""
    if mq == "rocksmq":
        base = res.value("rocksmq.path")
        return [Path(base), Path(f"{base}_meta_kv")] if base else []
    if mq == "natsmq":
        store = store_dir or res.value("natsmq.server.storeDir")
        return [Path(store) / "jetstream"] if store else []
    return []


EVENT_FIELD = r'\\?"{name}\\?":\\?"([^"\\]*)\\?"'  # a field of the event's JSON, quotes escaped or not


def update_event(value: str | None) -> Callable[[str], bool]:
    """Matches Milvus's `"receive update event"` log line for forceDeny set to `value`, or for its
    removal when `value` is None (a DELETE event, which carries the old value).

    Milvus 2.3-2.5 (config/manager.go) logs the key as its source spells it: the file source
    `quotaandlimits.limitwriting.forcedeny`; the etcd source the etcd path
    `quotaAndLimits/limitWriting/forceDeny` (CREATE, UPDATE or DELETE), then the same change once
    more under the normalised key `quotaandlimitslimitwritingforcedeny`. Keys are compared the way
    Milvus normalises them (lower case, without `/ _ .`), so every form matches.
    """
    from mqctl.config.schema import normalize_key

    key_field, type_field, value_field = (
        re.compile(EVENT_FIELD.format(name=n), re.IGNORECASE) for n in ("Key", "EventType", "Value")
    )
    wanted_key = normalize_key(FORCE_DENY)

    def matches(line: str) -> bool:
        if "receive update event" not in line:
            return False
        key, kind, logged = key_field.search(line), type_field.search(line), value_field.search(line)
        if key is None or kind is None or normalize_key(key.group(1)) != wanted_key:
            return False
        if value is None:
            return kind.group(1).upper() == "DELETE"
        return kind.group(1).upper() != "DELETE" and logged is not None and logged.group(1).lower() == value.lower()

    return matches


INIT_MQ = re.compile(r"try to init mq.*\[mqType=([a-z]+)\]")


# ------------------------------------------------------------------ preflight


def preflight_findings(ctx: Context, *, load: bool) -> tuple[list[Finding], dict]:
    """Every check before anything changes. `load=False` (plan) never loads a collection."""
    from mqctl.config.edit import check_target, switch
    from mqctl.migrate.milvus import collection_counts, server_version

    options, findings = ctx.options, []
    evidence: dict = {"configs": options.configs, "target": options.to}
    res = resolution(options)
    evidence["source_mq"] = res.effective_mq
    try:
        check_target(options.to, res.mode, res.version)
    except MqctlError as err:
        findings.append(Finding("error", "target-unsupported", err.message, err.hint or ""))
        return findings, evidence
    try:  # the edit the switch step will make, tried now: it must not fail once Milvus is down
        switch(
            options.live_config,
            options.to,
            store_dir=options.store_dir,
            port=options.nats_port,
            milvus_version=options.milvus_version,
            dry_run=True,
        )
    except MqctlError as err:
        findings.append(
            Finding(
                "error",
                "switch-impossible",
                f"the switch cannot edit {options.live_config}: {err.message}",
                err.hint or "fix the option or the config, then run it again",
            )
        )
        return findings, evidence
    try:
        client = ctx.client()
    except MqctlError as err:
        findings.append(Finding("error", "milvus-unreachable", err.message, err.hint or ""))
        return findings, evidence
    try:
        version = server_version(client)
    except Exception as err:
        client.close()
        findings.append(
            Finding(
                "error",
                "milvus-unreachable",
                f"Milvus at {options.milvus.uri} does not answer: {getattr(err, 'message', err)}",
                "check --milvus and Milvus's health",
            )
        )
        return findings, evidence
    evidence["milvus_version"] = version
    env, evidence["environment"] = milvus_environment(options)
    if env is None:
        findings.append(
            Finding(
                "info",
                "env-not-checked",
                f"environment overrides of Milvus not checked: {evidence['environment']}",
                "make sure Milvus's environment (unit file, compose file, pod spec) sets no MQ_TYPE",
            )
        )
    res = resolution(options, version, env)
    evidence["source_mq"], evidence["mode"] = res.effective_mq, res.mode
    try:
        check_target(options.to, res.mode, res.version)
    except MqctlError as err:
        findings.append(
            Finding("error", "target-unsupported", f"{err.message} (server reports {version})", err.hint or "")
        )
    if res.effective_mq == options.to:
        findings.append(
            Finding(
                "error",
                "already-on-target",
                f"Milvus already resolves to {options.to}",
                "nothing to migrate; `mqctl config explain` shows why",
            )
        )
    _override_findings(options, res, findings, evidence)
    _storage_findings(options, res, findings, evidence)
    _stop_writes_findings(options, res, findings, evidence)
    if not options.stop_cmd or not options.start_cmd:
        findings.append(
            Finding(
                "error",
                "commands-missing",
                "--stop-cmd and --start-cmd are required",
                "e.g. --stop-cmd 'systemctl stop milvus' --start-cmd 'systemctl start milvus'",
            )
        )
    if not options.log.available:
        findings.append(
            Finding(
                "error",
                "log-missing",
                "no way to read Milvus's log (verify needs the `try to init mq` line)",
                "pass --log-file PATH or --log-cmd 'docker logs --since 10m milvus-standalone'",
            )
        )
    try:
        if not any(f.level == "error" for f in findings):
            waited = time.monotonic()
            evidence["counts"] = collection_counts(options.milvus, load=load, client=client)
            evidence["milvus_wait_seconds"] = round(time.monotonic() - waited, 3)
    finally:
        client.close()
    return findings, evidence


def _override_findings(options, res, findings, evidence) -> None:
    if not options.etcd and (res.value("etcd.use.embed") or "false").lower() != "true":
        findings.append(
            Finding(
                "warning",
                "etcd-not-checked",
                "Milvus also reads its config from etcd "
                f"({res.value('etcd.endpoints') or 'localhost:2379'}, under {res.value('etcd.rootPath') or 'by-dev'}/config/); "
                "an mq.type there would defeat the switch (milvus #50217) and is not checked",
                "pass --etcd http://HOST:2379",
            )
        )
    origin = res.origin("mq.type")
    if origin.source == "etcd":
        evidence["etcd_mq_type"] = origin.value
        if options.clear_etcd_override:
            findings.append(
                Finding(
                    "info",
                    "etcd-override-cleared",
                    f"etcd {origin.detail} = {origin.value} will be deleted at the switch (old value journaled)",
                )
            )
        else:
            findings.append(
                Finding(
                    "error",
                    "etcd-override",
                    f"etcd key {origin.detail} = {origin.value} overrides mq.type "
                    "in the yaml at the next restart (milvus #50217), so the switch would not take effect",
                    "pass --clear-etcd-override to delete it during the switch (its value is journaled for rollback)",
                )
            )
    elif origin.source == "env":
        findings.append(
            Finding(
                "error",
                "env-override",
                f"environment variable {origin.detail} = {origin.value} overrides mq.type",
                "remove it from Milvus's environment (unit file, compose file, pod spec) first",
            )
        )


def _storage_findings(options, res, findings, evidence) -> None:
    source_dirs = [d for d in mq_dirs(res, res.effective_mq or "") if d.exists()]
    source_bytes = sum(dir_size(d) for d in source_dirs)
    evidence["source_mq_bytes"] = source_bytes
    if options.to == "natsmq":
        store = Path(options.store_dir or res.value("natsmq.server.storeDir") or "")
        evidence["store_dir"] = str(store)
        if non_empty_dir(store / "jetstream"):
            findings.append(
                Finding(
                    "error",
                    "stale-jetstream",
                    f"{store / 'jetstream'} exists and is not empty: a stale "
                    "NATS store would be replayed against Milvus's checkpoints",
                    "archive and remove it (or pick another --store-dir) before migrating",
                )
            )
        probe = store if store.exists() else next((p for p in store.parents if p.exists()), None)
        if probe is None or not os.access(probe, os.W_OK):
            findings.append(
                Finding(
                    "error",
                    "store-not-writable",
                    f"natsmq.server.storeDir {store} is not writable here",
                    "create it with the owner Milvus runs as, or pass --store-dir",
                )
            )
        else:
            free = shutil.disk_usage(probe).free
            evidence["store_free_bytes"] = free
            if free < source_bytes:
                findings.append(
                    Finding(
                        "error",
                        "disk-space",
                        f"{probe} has {free} bytes free, the current MQ holds {source_bytes}",
                        "free disk space or pick another --store-dir",
                    )
                )
        port = options.nats_port or port_of("natsmq", res.value("natsmq.server.port"))
        evidence["nats_port"] = port
        if port is None:
            findings.append(
                Finding(
                    "error",
                    "nats-port-invalid",
                    f"natsmq.server.port {res.value('natsmq.server.port')!r} is not a number",
                    "set natsmq.server.port to a port (1-65535), or pass --nats-port",
                )
            )
        elif port > 0 and hooks.port_open(f"127.0.0.1:{port}"):
            findings.append(
                Finding(
                    "error",
                    "nats-port-busy",
                    f"NATS port {port} is in use on this host",
                    "pass --nats-port with a free port (or -1 for a random one)",
                )
            )
    elif options.to in ("pulsar", "kafka"):
        endpoint = _mq_endpoint(res, options.to)
        evidence["target_endpoint"] = endpoint
        if not hooks.port_open(endpoint, timeout=3):
            findings.append(
                Finding(
                    "warning",
                    "target-unreachable",
                    f"{options.to} at {endpoint} does not answer from "
                    "this host: Milvus would fail to start on it (rollback brings it back)",
                    f"set the {options.to} address in the config first (`mqctl config set`), or check "
                    "that Milvus's host can reach it",
                )
            )
    elif options.to == "rocksmq":
        path = Path(options.store_dir or res.value("rocksmq.path") or "")
        evidence["rocksmq_path"] = str(path)
        if non_empty_dir(path):
            findings.append(
                Finding(
                    "error",
                    "stale-rocksmq",
                    f"rocksmq.path {path} is not empty: its old topics would be replayed against Milvus's checkpoints",
                    "archive and remove it (or pass --store-dir)",
                )
            )
    if not source_dirs and res.effective_mq in ("rocksmq", "natsmq"):
        findings.append(
            Finding(
                "warning",
                "source-not-local",
                f"the {res.effective_mq} data is not on this host: disk space and the backup cannot be checked here",
            )
        )


def _mq_endpoint(res, mq: str) -> str:
    """host:port Milvus will connect to for a Pulsar or Kafka target (Milvus's defaults when unset)."""
    if mq == "kafka":
        return (res.value("kafka.brokerList") or "localhost:9092").split(",")[0].strip()
    address = res.value("pulsar.address") or "localhost"
    if "://" in address:  # used as is, with its own port (MQ122)
        return address.split("://", 1)[1].rstrip("/")
    return f"{address}:{res.value('pulsar.port') or 6650}"


def _stop_writes_findings(options, res, findings, evidence) -> None:
    if options.writes_stopped:
        evidence["stop_writes"] = "operator stopped writers (--writes-stopped)"
        return
    if (res.value("quotaAndLimits.enabled") or "true").lower() != "true":
        findings.append(
            Finding(
                "error",
                "quota-disabled",
                "quotaAndLimits.enabled is false, so forceDeny cannot stop writes",
                "stop the writers yourself and pass --writes-stopped",
            )
        )
    mechanism = stop_writes_mechanism(options, res)
    evidence["stop_writes"] = mechanism
    evidence["quota_interval_seconds"] = float(res.value("quotaAndLimits.quotaCenterCollectInterval") or 3)
    if mechanism == "etcd":
        _etcd_root_findings(options, res, findings)
    if mechanism == "none":
        findings.append(
            Finding(
                "error",
                "no-stop-writes",
                "writes cannot be stopped from here: the config is not a "
                "milvus.yaml Milvus re-reads and no etcd config source is active",
                "pass --etcd URL, or stop the writers yourself and pass --writes-stopped",
            )
        )


def _etcd_root_findings(options, res, findings) -> None:
    """A running Milvus registers its sessions under `<rootPath>/<metaSubPath>/session/`: none there means
    forceDeny put under `--etcd-root` (or into this etcd) would never reach it, and stop-writes would time out."""
    etcd = options.etcd_client()
    session = f"{res.value('etcd.metaSubPath') or 'meta'}/session"
    if etcd.count_under(session) == 0:
        findings.append(
            Finding(
                "error",
                "etcd-root-unused",
                f"no Milvus session under {options.etcd_root}/{session}/ "
                f"in etcd {etcd.shown}: this Milvus does not keep its keys there, so "
                "forceDeny would never reach it",
                "pass --etcd-root with this Milvus's etcd.rootPath "
                f"(the config says {res.value('etcd.rootPath') or 'by-dev'}) and --etcd with its etcd",
            )
        )


def stop_writes_mechanism(options, res) -> str:
    """etcd where Milvus's etcd config source is active (external etcd), else the live config file.

    The embedded Milvus 2.3.5 ignores etcd config keys: only the file source refreshes (facts §6).
    """
    from mqctl.config.documents import MILVUS_YAML

    if options.etcd and (res.value("etcd.use.embed") or "false").lower() != "true":
        return "etcd"
    if res.kinds and res.kinds[-1] == MILVUS_YAML:
        return "file"
    return "none"


def step_preflight(ctx: Context, record: StepRecord) -> None:
    findings, evidence = preflight_findings(ctx, load=True)
    record.evidence.update(evidence, findings=[f.__dict__ for f in findings])
    errors = [f for f in findings if f.level == "error"]
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more: {', '.join(f.code for f in errors[1:])})" if len(errors) > 1 else ""
        raise StepFailed(
            "preflight",
            first.message + more,
            first.hint or "fix it and run the command again",
            writes_note="nothing was changed",
        )
    ctx.journal.source_mq = evidence["source_mq"]


# ------------------------------------------------------------------ stop / resume writes


def apply_force_deny(ctx: Context, record: StepRecord, restore: dict | None, *, wait: bool = True) -> None:
    """Deny writes (`restore` None: the old values are journaled first) or put the journaled values back,
    where Milvus re-reads them (etcd or the live file), then wait for Milvus's update event (unless not
    `wait`: no event is to be expected when Milvus never applied the deny).

    The old value is journaled before the edit and the edit is re-applied on resume, so a crash
    between the two neither loses the old value nor skips the edit.
    """
    from mqctl.config.edit import get_key, set_key, unset_key
    from mqctl.config.schema import normalize_key

    options = ctx.options
    evidence = record.evidence
    preflight = ctx.journal.step("preflight").evidence
    mechanism = evidence.setdefault("mechanism", preflight["stop_writes"])
    etcd = options.etcd_client() if mechanism == "etcd" else None

    def current() -> str | None:
        if etcd:
            found = etcd.read().get(normalize_key(FORCE_DENY))
            return found.value if found else None
        return get_key(options.live_config, FORCE_DENY)[0]

    value = "true" if restore is None else next(iter(restore.values()))
    if "edited_at" not in evidence:
        now_value = current()
        if restore is None and "old" not in evidence:
            evidence["old"] = {mechanism: now_value}
        # Milvus logs an event only for a real change; whether there is one is known before the edit only
        evidence.update(
            log_offset=options.log.mark(),
            edited_at=now(),
            needs_event=(now_value or "").lower() != (value or "").lower(),
        )
        ctx.journal.save()
    if etcd and value is None:
        etcd.delete(FORCE_DENY_ETCD)
    elif etcd:
        etcd.put(FORCE_DENY_ETCD, value)
    else:
        result = (
            unset_key(options.live_config, FORCE_DENY)
            if value is None
            else set_key(options.live_config, FORCE_DENY, value)
        )
        if result.changed:
            evidence.update(diff=result.diff, backup=str(result.backup))
    effective = value or "false (Milvus's default)"
    if not wait:
        evidence["confirmed"] = (
            f"forceDeny put back to {effective}; Milvus never confirmed the deny, so no event awaited"
        )
        return
    if not evidence.get("needs_event", True):
        evidence["confirmed"] = f"forceDeny was already {effective}: nothing for Milvus to apply"
        return
    if not milvus_up(options):
        evidence["confirmed"] = "Milvus is not running: it reads the value when it starts"
        return
    ctx.report.waiting(f"waiting for Milvus to apply forceDeny={effective} ...")
    started = utc_now()
    line = options.log.wait_for(
        update_event(value),
        offset=evidence["log_offset"],
        since=parse_time(evidence["edited_at"]) - dt.timedelta(seconds=1),
        timeout=options.confirm_timeout,
    )
    if line is None:
        skip = ", or stop writers yourself and pass --writes-stopped" if restore is None else ""
        raise StepFailed(
            record.name,
            f"Milvus did not log the forceDeny={effective} update event within "
            f"{options.confirm_timeout:.0f} s ({mechanism})",
            "check that Milvus reads this config (or that its etcd config source is active); "
            f"run `mqctl migrate resume` to wait again{skip}",
        )
    # Proxies pick up the new rate limits at the quota center's next collection round.
    time.sleep(2 * preflight["quota_interval_seconds"])
    evidence.update(confirmed=line.strip()[:400], milvus_wait_seconds=round((utc_now() - started).total_seconds(), 3))


def step_stop_writes(ctx: Context, record: StepRecord) -> None:
    if ctx.options.writes_stopped:
        record.evidence["confirmed"] = "operator stopped writers (--writes-stopped)"
        return
    apply_force_deny(ctx, record, None)


def step_resume_writes(ctx: Context, record: StepRecord) -> None:
    stop = ctx.record("stop-writes")
    if "old" not in stop.evidence:  # what mqctl denied it puts back, also when resumed with --writes-stopped
        record.evidence["confirmed"] = "writes were not stopped by mqctl"
        return
    apply_force_deny(ctx, record, stop.evidence["old"])


# ------------------------------------------------------------------ channel checkpoints

CHECKPOINT_ADVANCE_SECONDS = 60.0  # how long verify waits for the new MQ's checkpoints to move


def read_checkpoints(options: MigrateOptions) -> list[dict]:
    """Every live vchannel's checkpoint from etcd (--etcd, else the config's etcd.endpoints), as journal rows
    (see `mqctl channels checkpoints`); MqctlError when etcd cannot be read."""
    from mqctl.mq.checkpoints import live_checkpoints
    from mqctl.mq.milvus_meta import meta_reader

    return [
        {
            "vchannel": cp.vchannel,
            "collection": f"{cp.database}/{cp.collection}",
            "pchannel": cp.pchannel,
            "ts": cp.ts,
            "time": _iso(cp.time),
            "position": cp.position,
            "from": cp.origin,
        }
        for cp in live_checkpoints(meta_reader(options.etcd, options.etcd_root, resolution(options)).read())
    ]


def checkpoints_before(rows: list[dict], tso: int) -> list[str]:
    """The vchannels whose checkpoint is not yet at or past `tso` (a Milvus timestamp)."""
    return [row["vchannel"] for row in rows if (row["ts"] or 0) < tso]


def checkpoint_evidence(before: dict[str, int | None], rows: list[dict], tso: int) -> list[dict]:
    """Per vchannel: its checkpoint ts before and after, the position after, and whether it reached `tso`."""
    return [
        {
            "vchannel": row["vchannel"],
            "collection": row["collection"],
            "pchannel": row["pchannel"],
            "ts_before": before.get(row["vchannel"]),
            "ts_after": row["ts"],
            "time_after": row["time"],
            "position": row["position"],
            "from": row["from"],
            "reached": (row["ts"] or 0) >= tso,
        }
        for row in rows
    ]


def _iso(when: dt.datetime | None) -> str | None:
    return when.isoformat().replace("+00:00", "Z") if when else None


def wait_for_checkpoints(
    options: MigrateOptions, tso: int, timeout: float, on_wait: Callable[[float], None]
) -> tuple[list[dict], float]:
    """Read the checkpoints until every one is at or past `tso` or `timeout` seconds passed."""
    started = time.monotonic()
    while True:
        rows = read_checkpoints(options)
        waited = time.monotonic() - started
        if not checkpoints_before(rows, tso) or waited >= timeout:
            return rows, round(waited, 3)
        on_wait(waited)
        time.sleep(1)


def datetime_to_tso(when: dt.datetime) -> int:
    from mqctl.mq.messages import TSO_LOGICAL_BITS

    return int(when.timestamp() * 1000) << TSO_LOGICAL_BITS


# ------------------------------------------------------------------ flush, stop, start


def step_flush(ctx: Context, record: StepRecord) -> None:
    """FlushAll, then every vchannel's channel checkpoint at or past the FlushAll timestamp: Milvus resumes each
    vchannel from its checkpoint, so what lies before it is persisted and nothing needs the old MQ."""
    from mqctl.migrate.milvus import collection_counts, flush_all

    options = ctx.options
    try:
        before: dict | None = {row["vchannel"]: row["ts"] for row in read_checkpoints(options)}
    except MqctlError as err:
        before = None
        record.evidence["checkpoints_unread"] = err.message
    client = ctx.client()
    try:
        ctx.report.waiting("FlushAll: waiting for every channel to pass the flush timestamp ...")
        flushed = flush_all(
            client, options.flush_timeout, on_wait=lambda s: ctx.report.waiting(f"FlushAll: {s:.0f} s ...")
        )
        waited = time.monotonic()
        record.evidence["counts"] = collection_counts(options.milvus, client=client)
    finally:
        client.close()
    record.evidence.update(flushed, milvus_wait_seconds=round(flushed["seconds"] + time.monotonic() - waited, 3))
    if before is None:
        return
    flush_ts = flushed["flush_all_ts"]
    rows, seconds = wait_for_checkpoints(
        options,
        flush_ts,
        max(options.flush_timeout - flushed["seconds"], 1.0),
        lambda s: ctx.report.waiting(f"channel checkpoints: {s:.0f} s ..."),
    )
    record.evidence["checkpoints"] = checkpoint_evidence(before, rows, flush_ts)
    record.evidence["checkpoint_wait_seconds"] = seconds
    behind = checkpoints_before(rows, flush_ts)
    if behind:
        raise StepFailed(
            "flush",
            f"the channel checkpoint of {', '.join(behind)} is still before the FlushAll "
            f"timestamp {flush_ts} after {options.flush_timeout:.0f} s (see the journal's checkpoints)",
            "Milvus is still flushing: run `mqctl migrate resume` to flush and wait again",
            writes_note="writes stay stopped",
        )


def step_stop(ctx: Context, record: StepRecord) -> None:
    options = ctx.options
    if milvus_down(options):
        record.evidence.setdefault("result", "already down")
        return
    run = hooks.run_command(options.stop_cmd, shell=options.shell, timeout=options.stop_timeout)
    record.evidence["command"] = run.__dict__
    if run.returncode != 0:
        raise StepFailed(
            "stop",
            f"--stop-cmd exited {run.returncode}: {run.output_tail[-300:] or '(no output)'}",
            "fix the stop command and run `mqctl migrate resume --stop-cmd ...`",
            writes_note="Milvus state unknown: writes stay stopped",
        )
    ctx.report.waiting("waiting for Milvus to go down ...")
    waited = utc_now()
    if not hooks.wait_until(lambda: milvus_down(options), options.stop_timeout):
        raise StepFailed(
            "stop",
            f"Milvus still answers {options.milvus.uri} {options.stop_timeout:.0f} s after the stop command",
            "stop it yourself, then `mqctl migrate resume`",
            writes_note="writes stay stopped",
        )
    record.evidence["milvus_wait_seconds"] = round(run.seconds + (utc_now() - waited).total_seconds(), 3)


def step_start(ctx: Context, record: StepRecord) -> None:
    options = ctx.options
    if "log_offset" not in record.evidence or not milvus_up(options):
        record.evidence.update(log_offset=options.log.mark(), started_at=now())
        ctx.journal.save()
    if milvus_up(options):
        record.evidence.setdefault("result", "already running")
        return
    run = hooks.run_command(options.start_cmd, shell=options.shell, timeout=options.start_timeout)
    record.evidence["command"] = run.__dict__
    if run.returncode != 0:
        raise StepFailed(
            "start",
            f"--start-cmd exited {run.returncode}: {run.output_tail[-300:] or '(no output)'}",
            "fix the start command, then `mqctl migrate resume --start-cmd ...` (or `mqctl migrate rollback`)",
            writes_note="Milvus is down; writes stay denied in its config",
        )
    ctx.report.waiting("waiting for Milvus to become healthy ...")
    waited = utc_now()
    if not hooks.wait_until(lambda: milvus_up(options), options.start_timeout, interval=0.5):
        raise StepFailed(
            "start",
            f"Milvus not healthy {options.start_timeout:.0f} s after the start command",
            "read its log, fix it, then `mqctl migrate resume` (or `mqctl migrate rollback`)",
            writes_note="Milvus state unknown: writes stay stopped",
        )
    record.evidence["milvus_wait_seconds"] = round(run.seconds + (utc_now() - waited).total_seconds(), 3)


# ------------------------------------------------------------------ switch


def step_switch(ctx: Context, record: StepRecord) -> None:
    from mqctl.config.edit import backup_copy, plan_switch

    options, journal = ctx.options, ctx.journal
    version = journal.step("preflight").evidence.get("milvus_version")
    if "backup" not in record.evidence:  # journaled before the edit: a crash right after it keeps the way back
        record.evidence["backup"] = str(backup_copy(options.live_config))
        journal.save()
    result = plan_switch(
        options.live_config, options.to, store_dir=options.store_dir, port=options.nats_port, milvus_version=version
    ).commit(backup=Path(record.evidence["backup"]))
    if result.changed:
        record.evidence["diff"] = result.diff
    else:
        record.evidence.setdefault("result", "config already switched")
    etcd_old = journal.step("preflight").evidence.get("etcd_mq_type")
    if etcd_old is not None and options.clear_etcd_override and not record.evidence.get("etcd_cleared"):
        options.etcd_client().delete(MQ_TYPE_ETCD)
        record.evidence["etcd_cleared"] = {"key": MQ_TYPE_ETCD, "old": etcd_old}


# ------------------------------------------------------------------ verify


def step_verify(ctx: Context, record: StepRecord) -> None:
    from mqctl.migrate.milvus import collection_counts, release

    options, journal, expected = ctx.options, ctx.journal, ctx.expected_mq
    start = ctx.record("start")
    since = parse_time(start.evidence["started_at"]) - dt.timedelta(seconds=1)
    line = options.log.wait_for(
        lambda text: INIT_MQ.search(text) is not None, offset=start.evidence["log_offset"], since=since, timeout=60
    )
    failed = lambda seen, hint="run `mqctl migrate rollback` to go back": StepFailed(  # noqa: E731
        "verify", seen, hint, writes_note="Milvus runs in an unverified state: writes stay stopped"
    )
    if line is None:
        raise failed("no `try to init mq` line in the Milvus log since the start")
    seen_mq = INIT_MQ.search(line).group(1)
    record.evidence["init_mq_line"] = line.strip()[:300]
    if seen_mq != expected:
        raise failed(f"Milvus started on {seen_mq}, not {expected}: {line.strip()[:200]}")
    if expected == "natsmq":
        store = Path(journal.step("preflight").evidence.get("store_dir") or "")
        if store.is_absolute() and store.parent.exists():
            if not (store / "jetstream").is_dir():
                raise failed(f"no `jetstream` directory under natsmq.server.storeDir {store}")
            record.evidence["jetstream_dir"] = str(store / "jetstream")
        else:
            record.evidence["jetstream_dir"] = f"not checked: {store} is not on this host"
    record.evidence["runtime_info"] = _runtime_info(options, expected)
    if record.evidence["runtime_info"].startswith("disagrees"):
        raise failed(f"the runtime-info metric {record.evidence['runtime_info']}")
    baseline = ctx.record("flush").evidence.get("counts") or journal.step("preflight").evidence.get("counts", {})
    ctx.report.waiting("loading every collection and counting rows ...")
    waited = utc_now()
    counts = collection_counts(options.milvus, load_timeout=options.verify_timeout)
    record.evidence["milvus_wait_seconds"] = round((utc_now() - waited).total_seconds(), 3)
    release(
        options.milvus,
        [
            n
            for n in counts
            if not journal.step("preflight").evidence.get("counts", {}).get(n, {}).get("was_loaded", True)
        ],
    )
    record.evidence["counts"] = counts
    _checkpoints_advance(ctx, record, since)
    mismatched = {
        n: (baseline[n]["rows"], counts.get(n, {}).get("rows"))
        for n in baseline
        if counts.get(n, {}).get("rows") != baseline[n]["rows"]
    }
    if mismatched:
        raise failed(
            "row counts differ from before the switch: "
            + ", ".join(f"{n} {before} -> {after}" for n, (before, after) in mismatched.items())
        )


def _checkpoints_advance(ctx: Context, record: StepRecord, since: dt.datetime) -> None:
    """Evidence that Milvus consumes the new MQ: every vchannel's checkpoint moves past the start. A vchannel
    that does not within CHECKPOINT_ADVANCE_SECONDS is a warning, not a failure: Milvus updates checkpoints
    from its datanodes' time ticks on its own schedule and documents no bound."""
    flushed = ctx.record("flush").evidence
    if "checkpoints" not in flushed and "checkpoints_unread" in flushed:
        record.evidence["checkpoints_unread"] = flushed["checkpoints_unread"]
        return
    start_tso = datetime_to_tso(since)
    try:
        rows, seconds = wait_for_checkpoints(
            ctx.options,
            start_tso,
            CHECKPOINT_ADVANCE_SECONDS,
            lambda s: ctx.report.waiting(f"channel checkpoints: {s:.0f} s ..."),
        )
    except MqctlError as err:
        record.evidence["checkpoints_unread"] = err.message
        return
    before = {row["vchannel"]: row["ts_after"] for row in flushed.get("checkpoints", [])}
    record.evidence["checkpoints"] = checkpoint_evidence(before, rows, start_tso)
    record.evidence["checkpoint_wait_seconds"] = seconds
    record.evidence["checkpoint_warnings"] = [
        f"{vchannel}: the channel checkpoint did not move past the start on {ctx.expected_mq} within "
        f"{CHECKPOINT_ADVANCE_SECONDS:.0f} s"
        for vchannel in checkpoints_before(rows, start_tso)
    ]


def _runtime_info(options, expected: str) -> str:
    """`milvus_runtime_info{mq=...}` on /metrics (2.4+); 2.3 does not expose it."""
    if not options.health_url:
        return "not checked: no --health-url"
    import httpx

    from mqctl import http

    try:
        text = http.client().get(options.health_url.rsplit("/", 1)[0] + "/metrics", timeout=5).text
    except httpx.HTTPError as err:
        return f"not checked: {err}"
    match = re.search(r'milvus_runtime_info\{[^}]*mq="([a-z]+)"', text)
    if not match:
        return "not exposed by this Milvus"
    return f"agrees: mq={match.group(1)}" if match.group(1) == expected else f"disagrees: mq={match.group(1)}"


# ------------------------------------------------------------------ backup and cleanup


def step_backup(ctx: Context, record: StepRecord) -> None:
    from mqctl.migrate.backup import archive_dirs, verify_archive

    options, journal = ctx.options, ctx.journal
    if not options.backup_dir:
        record.status = SKIPPED
        record.evidence["result"] = "no --backup-dir"
        return
    switch_backup = journal.step("switch").evidence.get("backup")
    dirs = _source_dirs(journal, switch_backup)
    missing = [str(d) for d in dirs if not d.exists()]
    if "archive" not in record.evidence:
        if not dirs or missing:
            raise StepFailed(
                "backup",
                f"old {journal.source_mq} data not found on this host: {missing or 'no path'}",
                "run mqctl where the MQ data is, or migrate without --backup-dir",
            )
        record.evidence.update(archive_dirs(dirs, Path(options.backup_dir), f"{journal.source_mq}-{journal.id}"))
        ctx.journal.save()
    verify_archive(Path(record.evidence["archive"]), record.evidence["manifest"])
    record.evidence["read_back"] = "checksums match"
    if options.cleanup:
        for path in dirs:
            if path.exists():
                shutil.rmtree(path)
        record.evidence["deleted"] = [str(d) for d in dirs]


def _source_dirs(journal: Journal, config_backup: str | None) -> list[Path]:
    """The old MQ's folders, read from the config as it was before the switch."""
    from mqctl.config.resolve import resolve

    pre = journal.step("preflight").evidence
    configs = list(journal.options["configs"])
    if config_backup:
        configs[-1] = config_backup
    res = resolve(configs, milvus_version=pre.get("milvus_version"))
    return mq_dirs(res, journal.source_mq)


STEP_FUNCTIONS: dict[str, Callable[[Context, StepRecord], None]] = {
    "preflight": step_preflight,
    "stop-writes": step_stop_writes,
    "flush": step_flush,
    "stop": step_stop,
    "switch": step_switch,
    "start": step_start,
    "verify": step_verify,
    "resume-writes": step_resume_writes,
    "backup": step_backup,
}
