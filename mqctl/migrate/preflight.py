"""Preflight: every check before a migration changes anything, from its options to a result
(findings and what was seen); it never writes. `plan` shows the result, the preflight step journals it."""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mqctl.backends import BACKENDS, is_embedded, port_of
from mqctl.config.settings import Setting
from mqctl.errors import MqctlError
from mqctl.files import overlap
from mqctl.findings import ERROR, INFO, WARNING, Finding
from mqctl.host import hooks
from mqctl.migrate.context import dir_size, migration_dirs, mq_dirs, non_empty_dir, resolution
from mqctl.migrate.options import MigrateOptions
from mqctl.migrate.record.evidence import PreflightEvidence

if TYPE_CHECKING:
    from mqctl.config.resolve.resolution import Resolution
    from mqctl.config.resolve.sources import EtcdConfig


@dataclass
class PreflightResult:
    findings: list[Finding] = field(default_factory=list)
    evidence: PreflightEvidence = field(default_factory=PreflightEvidence)

    @property
    def refused(self) -> bool:
        return any(f.severity == ERROR for f in self.findings)

    def add(self, severity: str, code: str, message: str, hint: str | None = "") -> None:
        # hint "" rather than None: the JSON of migrate findings has always had a text hint
        self.findings.append(Finding(code, severity, message, hint=hint or ""))


def finding_json(finding: Finding) -> dict[str, Any]:
    """A finding as migrate's JSON shows it: `level` (its first name for severity) beside the fields."""
    return {"level": finding.severity, **asdict(finding)}


def switch_diff(options: MigrateOptions, version: str | None) -> str:
    """The diff the switch step will make to the live config (nothing is written)."""
    from mqctl.config.edit.switch import switch

    return switch(
        options.live_config,
        options.to,
        store_dir=options.store_dir,
        port=options.nats_port,
        milvus_version=version,
        dry_run=True,
        kafka=options.kafka,
    ).diff


def milvus_environment(options: MigrateOptions) -> tuple[dict[str, str] | None, str]:
    """The environment the local Milvus process runs with (MQ_TYPE and the like override its yaml), and
    where it came from; None when Milvus is not a process of this host that mqctl may read."""
    from mqctl.host.procfs import listening_pid, process_environ, process_name

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


def preflight(options: MigrateOptions, *, load: bool) -> PreflightResult:
    """Every check before anything changes. `load=False` (plan) never loads a collection."""
    from mqctl.config.edit.set_unset import check_target
    from mqctl.config.resolve import wal
    from mqctl.milvus.client import collection_counts
    from mqctl.milvus.rpc import MilvusGrpc

    result = PreflightResult(evidence=PreflightEvidence(configs=options.configs, target=options.to))
    evidence = result.evidence
    res = resolution(options)
    evidence.source_mq = res.effective_mq
    try:
        check_target(options.to, res.mode, res.version)
    except MqctlError as err:
        result.add(ERROR, "target-unsupported", err.message, err.hint or "")
        return result
    try:  # the edit the switch step will make, planned now (no diff needed): it must not fail once Milvus is down
        from mqctl.config.edit.set_unset import plan_switch

        plan_switch(
            options.live_config,
            options.to,
            store_dir=options.store_dir,
            port=options.nats_port,
            milvus_version=options.milvus_version,
            kafka=options.kafka,
        )
    except MqctlError as err:
        result.add(
            ERROR,
            "switch-impossible",
            f"the switch cannot edit {options.live_config}: {err.message}",
            err.hint or "fix the option or the config, then run it again",
        )
        return result
    _backup_dir_findings(options, res, result)  # from the files alone: no Milvus needed to refuse it
    try:
        client = MilvusGrpc.of(options.milvus)
    except OSError as err:  # the --milvus-server-pem file
        result.add(ERROR, "milvus-unreachable", f"Milvus at {options.milvus.uri}: {err}", "check the TLS options")
        return result
    try:
        version = client.server_version()
    except Exception as err:
        client.close()
        result.add(
            ERROR,
            "milvus-unreachable",
            f"Milvus at {options.milvus.uri} is not reachable: {getattr(err, 'message', err)}",
            "check --milvus (host:port of the gRPC proxy), credentials, TLS options and Milvus's health",
        )
        return result
    evidence.milvus_version = version
    env, evidence.environment = milvus_environment(options)
    if env is None:
        result.add(
            INFO,
            "env-not-checked",
            f"environment overrides of Milvus not checked: {evidence.environment}",
            "make sure Milvus's environment (unit file, compose file, pod spec) sets no MQ_TYPE",
        )
    res = resolution(options, version, env)
    evidence.source_mq, evidence.mode = res.effective_mq, res.mode
    try:
        check_target(options.to, res.mode, res.version)
        wal.refuse_file_switch(res.version, options.to)  # 2.6+: editing mq.type does not switch the MQ
    except MqctlError as err:
        result.add(ERROR, "target-unsupported", f"{err.message} (server reports {version})", err.hint or "")
    if res.effective_mq == options.to:
        result.add(
            ERROR,
            "already-on-target",
            f"Milvus already resolves to {options.to}",
            "nothing to migrate; `mqctl config explain` shows why",
        )
    _override_findings(options, res, result)
    _storage_findings(options, res, result)
    _stop_writes_findings(options, res, result)
    if not options.stop_cmd or not options.start_cmd:
        result.add(
            ERROR,
            "commands-missing",
            "--stop-cmd and --start-cmd are required",
            "e.g. --stop-cmd 'systemctl stop milvus' --start-cmd 'systemctl start milvus'",
        )
    if not options.log.available:
        result.add(
            ERROR,
            "log-missing",
            "no way to read Milvus's log (verify needs the `try to init mq` line)",
            "pass --log-file PATH or --log-cmd 'docker logs --since 10m milvus-standalone'",
        )
    try:
        if not result.refused:
            waited = time.monotonic()
            evidence.counts = collection_counts(client, load=load)
            evidence.milvus_wait_seconds = round(time.monotonic() - waited, 3)
    finally:
        client.close()
    return result


def _backup_dir_findings(options: MigrateOptions, res: Resolution, result: PreflightResult) -> None:
    """--backup-dir must not be, hold or lie inside a folder the migration archives, cleans up or starts the
    new MQ in: the archive would contain itself, or the cleanup would delete it."""
    if not options.backup_dir:
        return
    for folder in migration_dirs(res, options):
        how = overlap(options.backup_dir, folder)
        if how:
            result.add(
                ERROR,
                "backup-dir-overlaps-data",
                f"--backup-dir {options.backup_dir} {how} {folder}, an MQ data folder the migration archives, "
                "starts Milvus on or cleans up",
                "choose a --backup-dir outside Milvus's MQ folders",
            )
            return


def mq_type_overrides(etcd: EtcdConfig) -> dict[str, str]:
    """Every etcd config key Milvus reads as mq.type, in any spelling (`mq/type`, `mqtype`, `mq.type`), with its
    value: the switch deletes exactly these, since deleting one spelling leaves another overriding the yaml."""
    from mqctl.config.known_keys import normalize_key

    wanted = normalize_key("mq.type")
    return {
        key: value.decode(errors="replace")
        for key, value in etcd.get_prefix(etcd.prefix)
        if normalize_key(key.removeprefix(etcd.prefix)) == wanted
    }


def _override_findings(options: MigrateOptions, res: Resolution, result: PreflightResult) -> None:
    evidence = result.evidence
    if not options.etcd and (res.value("etcd.use.embed") or "false").lower() != "true":
        result.add(
            WARNING,
            "etcd-not-checked",
            "Milvus also reads its config from etcd "
            f"({res.value('etcd.endpoints') or 'localhost:2379'}, under {res.value('etcd.rootPath') or 'by-dev'}/config/); "
            "an mq.type there would defeat the switch (milvus #50217) and is not checked",
            "pass --etcd http://HOST:2379",
        )
    origin = res.origin("mq.type")
    etcd = options.etcd_client()
    unread = ""
    if origin.source == "yaml" or origin.source == "default":
        # an mq.type in Milvus's embedded etcd is not read (resolve drops it, seen on 2.3.5), but it overrides the
        # yaml as soon as this Milvus runs on an external etcd: the switch still clears it or refuses
        stray = sorted(mq_type_overrides(etcd).items()) if etcd else []
        if stray:
            origin = Setting("mq.type", stray[0][1], None, None, "etcd", stray[0][0])
            unread = " (not read while Milvus runs on its embedded etcd, read again on an external one)"
    if origin.source == "etcd":
        evidence.etcd_mq_type = origin.value
        evidence.etcd_mq_type_keys = sorted(mq_type_overrides(etcd)) if etcd else [origin.detail]
        if options.clear_etcd_override:
            result.add(
                INFO,
                "etcd-override-cleared",
                f"etcd {origin.detail} = {origin.value}{unread} will be deleted at the switch (old value journaled)",
            )
        else:
            result.add(
                ERROR,
                "etcd-override",
                f"etcd key {origin.detail} = {origin.value}{unread} overrides mq.type "
                "in the yaml at the next restart (milvus #50217), so the switch would not take effect",
                "pass --clear-etcd-override to delete it during the switch (its value is journaled for rollback)",
            )
    elif origin.source == "env":
        result.add(
            ERROR,
            "env-override",
            f"environment variable {origin.detail} = {origin.value} overrides mq.type",
            "remove it from Milvus's environment (unit file, compose file, pod spec) first",
        )


def _storage_findings(options: MigrateOptions, res: Resolution, result: PreflightResult) -> None:
    evidence = result.evidence
    source_dirs = [d for d in mq_dirs(res, res.effective_mq or "") if d.exists()]
    source_bytes = sum(dir_size(d) for d in source_dirs)
    evidence.source_mq_bytes = source_bytes
    if options.to == "natsmq":
        store = Path(options.store_dir or _setting(res, "natsmq") or "")
        evidence.store_dir = str(store)
        if non_empty_dir(store / "jetstream"):
            result.add(
                ERROR,
                "stale-jetstream",
                f"{store / 'jetstream'} exists and is not empty: a stale "
                "NATS store would be replayed against Milvus's checkpoints",
                "archive and remove it (or pick another --store-dir) before migrating",
            )
        probe = store if store.exists() else next((p for p in store.parents if p.exists()), None)
        if probe is None or not os.access(probe, os.W_OK):
            result.add(
                ERROR,
                "store-not-writable",
                f"{BACKENDS['natsmq'].store_key} {store} is not writable here",
                "create it with the owner Milvus runs as, or pass --store-dir",
            )
        else:
            free = shutil.disk_usage(probe).free
            evidence.store_free_bytes = free
            if free < source_bytes:
                result.add(
                    ERROR,
                    "disk-space",
                    f"{probe} has {free} bytes free, the current MQ holds {source_bytes}",
                    "free disk space or pick another --store-dir",
                )
        port_key = BACKENDS["natsmq"].port_key or ""
        port = options.nats_port or port_of("natsmq", res.value(port_key))
        evidence.nats_port = port
        if port is None:
            result.add(
                ERROR,
                "nats-port-invalid",
                f"{port_key} {res.value(port_key)!r} is not a number",
                f"set {port_key} to a port (1-65535), or pass --nats-port",
            )
        elif port > 0 and hooks.port_open(f"127.0.0.1:{port}"):
            result.add(
                ERROR,
                "nats-port-busy",
                f"NATS port {port} is in use on this host",
                "pass --nats-port with a free port (or -1 for a random one)",
            )
    elif options.to == "kafka":
        from mqctl.migrate.kafka_target import kafka_findings

        evidence.target_endpoint, found = kafka_findings(options, res)
        result.findings += found
    elif options.to == "pulsar":
        endpoint = _mq_endpoint(res, options.to)
        evidence.target_endpoint = endpoint
        if not hooks.port_open(endpoint, timeout=3):
            result.add(
                WARNING,
                "target-unreachable",
                f"{options.to} at {endpoint} does not answer from "
                "this host: Milvus would fail to start on it (rollback brings it back)",
                f"set the {options.to} address in the config first (`mqctl config set`), or check "
                "that Milvus's host can reach it",
            )
    elif options.to == "rocksmq":
        path = Path(options.store_dir or _setting(res, "rocksmq") or "")
        evidence.rocksmq_path = str(path)
        if non_empty_dir(path):
            result.add(
                ERROR,
                "stale-rocksmq",
                f"{BACKENDS['rocksmq'].store_key} {path} is not empty: its old topics would be replayed against Milvus's checkpoints",
                "archive and remove it (or pass --store-dir)",
            )
    if not source_dirs and is_embedded(res.effective_mq):
        result.add(
            WARNING,
            "source-not-local",
            f"the {res.effective_mq} data is not on this host: disk space and the backup cannot be checked here",
        )


def _mq_endpoint(res: Resolution, mq: str) -> str:
    """host:port Milvus will connect to for a Pulsar or Kafka target (Milvus's defaults when unset)."""
    if mq == "kafka":
        return (res.value("kafka.brokerList") or "localhost:9092").split(",")[0].strip()
    address = res.value("pulsar.address") or "localhost"
    if "://" in address:  # used as is, with its own port (MQ122)
        return address.split("://", 1)[1].rstrip("/")
    return f"{address}:{res.value('pulsar.port') or BACKENDS['pulsar'].default_port}"


def _stop_writes_findings(options: MigrateOptions, res: Resolution, result: PreflightResult) -> None:
    evidence = result.evidence
    if options.writes_stopped:
        evidence.stop_writes = "operator stopped writers (--writes-stopped)"
        return
    if (res.value("quotaAndLimits.enabled") or "true").lower() != "true":
        result.add(
            ERROR,
            "quota-disabled",
            "quotaAndLimits.enabled is false, so forceDeny cannot stop writes",
            "stop the writers yourself and pass --writes-stopped",
        )
    mechanism = stop_writes_mechanism(options, res)
    evidence.stop_writes = mechanism
    evidence.quota_interval_seconds = float(res.value("quotaAndLimits.quotaCenterCollectInterval") or 3)
    if mechanism == "etcd":
        _etcd_root_findings(options, res, result)
    if mechanism == "none":
        result.add(
            ERROR,
            "no-stop-writes",
            "writes cannot be stopped from here: the config is not a "
            "milvus.yaml Milvus re-reads and no etcd config source is active",
            "pass --etcd URL, or stop the writers yourself and pass --writes-stopped",
        )


def _etcd_root_findings(options: MigrateOptions, res: Resolution, result: PreflightResult) -> None:
    """A running Milvus registers its sessions under `<rootPath>/<metaSubPath>/session/`: none there means
    forceDeny put under `--etcd-root` (or into this etcd) would never reach it, and stop-writes would time out."""
    etcd = options.etcd_client()
    if etcd is None:  # the etcd mechanism is chosen only with --etcd
        return
    session = f"{res.value('etcd.metaSubPath') or 'meta'}/session"
    if etcd.count_under(session) == 0:
        result.add(
            ERROR,
            "etcd-root-unused",
            f"no Milvus session under {options.etcd_root}/{session}/ "
            f"in etcd {etcd.shown}: this Milvus does not keep its keys there, so "
            "forceDeny would never reach it",
            "pass --etcd-root with this Milvus's etcd.rootPath "
            f"(the config says {res.value('etcd.rootPath') or 'by-dev'}) and --etcd with its etcd",
        )


def stop_writes_mechanism(options: MigrateOptions, res: Resolution) -> str:
    """etcd where Milvus's etcd config source is active (external etcd), else the live config file.

    With embedded etcd (`etcd.use.embed`) Milvus's etcd config source is not active: seen on Milvus 2.3.5,
    its log shows only `start refreshing configurations [source=FileSource]` (milvus pkg/config) and a
    forceDeny key put into etcd is ignored, while an edit of its milvus.yaml is applied.
    """
    from mqctl.config.read.documents import MILVUS_YAML

    if options.etcd and (res.value("etcd.use.embed") or "false").lower() != "true":
        return "etcd"
    if res.kinds and res.kinds[-1] == MILVUS_YAML:
        return "file"
    return "none"


def _setting(res: Resolution, mq: str) -> str | None:
    """The configured data folder of embedded backend `mq`."""
    key = BACKENDS[mq].store_key
    return res.value(key) if key else None
