"""`migrate plan` on Milvus 2.6.14+ and 3.x: the online WAL switch's steps and checks, for the operator to run.

The stop-writes -> FlushAll -> edit -> restart migration cannot switch these versions: the MQ is pinned in
etcd (mqctl.config.resolve.pinning) and changes only through AlterWAL (mqctl.config.resolve.wal). This plan says what to
run and what to check first; mqctl does not call the endpoint, and `migrate` itself refuses on 2.6+.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mqctl.backends import BACKENDS, CLUSTER
from mqctl.config.known_keys import format_version, parse_version
from mqctl.config.read.documents import HELM_VALUES, load_document
from mqctl.config.read.nodes import lookup, scalar_text
from mqctl.config.resolve import pinning, wal
from mqctl.config.resolve.resolution import Resolution, resolve
from mqctl.config.resolve.sources import DEFAULT_CHANNEL_PREFIX, DEFAULT_ETCD_ROOT, EtcdConfig
from mqctl.errors import PreconditionError
from mqctl.findings import ERROR, INFO, WARNING, Finding
from mqctl.migrate.options import MigrateOptions
from mqctl.migrate.preflight import finding_json
from mqctl.migrate.run import PlannedStep

DOCS_VERSION = (3, 0, 0)  # Milvus's Switch MQ type docs list the feature from 3.0 ("pending release")


def _check(level: str, code: str, message: str, hint: str = "") -> Finding:
    """A preflight finding in migrate's order of arguments (level first, as its JSON shows it)."""
    return Finding(code, level, message, hint=hint)


@dataclass
class AlterWalPlan:
    """Same fields as the file-switch plan (one `migrate plan --json` shape), plus `procedure` and `refused`."""

    source_mq: str | None
    target_mq: str
    milvus_version: str | None
    steps: list[PlannedStep]
    findings: list[Finding]
    procedure: str = "alter-wal"
    refused: bool = False
    counts: dict[str, Any] = field(default_factory=dict)  # nothing is counted: the switch keeps Milvus up
    config_diff: str = ""  # nothing is edited: mq.type must stay as it is
    checkpoints: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The plan as `--json` shows it (findings with their `level`, as the file-switch plan's)."""
        return {**asdict(self), "findings": [finding_json(f) for f in self.findings]}


def applies(options: MigrateOptions) -> bool:
    """Milvus 2.6+ stated with --milvus-version: a file edit does not switch it, so plan the WAL switch
    (`plan` refuses below 2.6.14, which has none)."""
    return wal.applies(parse_version(options.milvus_version))


def refuse_run(options: MigrateOptions) -> None:
    """`migrate` on 2.6+: its file edit would not switch the MQ, and mqctl does not call AlterWAL (exit 3)."""
    version = parse_version(options.milvus_version)
    if not wal.applies(version):
        return
    shown = format_version(version)
    why = wal.blocker(None, options.to, "", version) or "mqctl does not run the online WAL switch itself"
    hint = (
        f"`mqctl migrate plan --milvus-version {shown} ...` lists the steps to run by hand"
        if wal.has_alter_wal(version)
        else f"upgrade to {format_version(wal.ALTER_WAL_SINCE)}+ and switch online with AlterWAL"
    )
    raise PreconditionError(f"migrate cannot switch Milvus {shown}: {why}", hint=hint)


def _resolved(options: MigrateOptions, checks: list[Finding]) -> tuple[Resolution, bool]:
    """The deployment read with its etcd when given; an unreachable etcd becomes an error check."""
    etcd = EtcdConfig(options.etcd, options.etcd_root or DEFAULT_ETCD_ROOT) if options.etcd else None
    try:
        return resolve(list(options.configs), milvus_version=options.milvus_version, etcd=etcd), etcd is not None
    except PreconditionError as err:
        if etcd is None:
            raise
        checks.append(_check(ERROR, "etcd-unreadable", err.message, err.hint or "give Milvus's etcd client URL"))
        return resolve(list(options.configs), milvus_version=options.milvus_version), False


def _coordinator(options: MigrateOptions) -> str:
    """MixCoord's management URL: the host of --health-url, else of --milvus, on port 9091."""
    parts = urlsplit(options.health_url or options.milvus.uri)
    host = parts.hostname or "<mixcoord>"
    port = parts.port if options.health_url and parts.port else wal.MANAGEMENT_PORT
    return f"{parts.scheme or 'http'}://{host}:{port}"


def _source_checks(res: Resolution, etcd_read: bool, checks: list[Finding]) -> None:
    """Where the source MQ comes from: the pinned value in etcd, or the file (only the first boot's)."""
    key, source = pinning.pin_key(res), res.effective_mq or res.attempted_mq
    if etcd_read:
        value = pinning.pinned(res)
        if value is None:
            checks.append(
                _check(
                    ERROR,
                    "no-etcd-config-source",
                    f"etcd holds no {key}: this Milvus has not booted with an etcd config source, which AlterWAL needs",
                    "run Milvus with an external etcd (Docker Compose, Helm, Operator), not the single-container embed",
                )
            )
        else:
            checks.append(_check(INFO, "pinned", f"etcd {res.origin('mq.type').detail} = {value!r}: the source MQ"))
    elif source is not None:
        checks.append(
            _check(
                WARNING,
                "source-from-file",
                f"source MQ {source} read from the file; Milvus runs the MQ pinned in etcd ({key})",
                "pass --etcd http://HOST:2379 to read the pinned value and check the etcd config source",
            )
        )
    if source is None:
        checks.append(
            _check(
                ERROR,
                "source-unknown",
                f"Milvus {res.milvus_version} would not start with this config (`{res.fails}`): no MQ to switch from",
                "fix the config first (`mqctl config explain`)",
            )
        )


def _deployment_checks(res: Resolution, target: str, checks: list[Finding]) -> None:
    """Embedded etcd, streaming.enabled, the target's settings and Woodpecker's storage in a cluster."""
    if (res.value("etcd.use.embed") or "").strip().lower() == "true":
        checks.append(
            _check(
                ERROR,
                "no-etcd-config-source",
                "etcd.use.embed is true: the embedded etcd gives Milvus no etcd config source, so AlterWAL cannot run",
                "deploy with an external etcd (Docker Compose) first",
            )
        )
    for path, kind in zip(res.files, res.kinds):
        if kind == HELM_VALUES:
            pair = lookup(load_document(path).main, ["streaming", "enabled"])
            enabled = scalar_text(pair[1]) if pair else None
            if (enabled or "").lower() != "true":
                checks.append(
                    _check(
                        WARNING if enabled is None else ERROR,
                        "streaming-disabled",
                        f"{Path(path).name}: streaming.enabled is "
                        + ("not set (the chart's default decides)" if enabled is None else enabled),
                        "set streaming.enabled: true and helm upgrade before the switch",
                    )
                )
    enabling = BACKENDS[target].enabled_by
    if res.version is not None and BACKENDS[target].available(res.version) and not res.value(enabling):
        checks.append(
            _check(
                ERROR,
                "target-unconfigured",
                f"{enabling} is empty: Milvus cannot reach {target}",
                f"put the {target} settings into the config (keep mq.type as it is) and restart before the switch",
            )
        )
    if target == wal.WOODPECKER and res.mode == CLUSTER and res.value("woodpecker.storage.type") == "local":
        checks.append(
            _check(
                ERROR,
                "woodpecker-local-in-cluster",
                "woodpecker.storage.type is local: a cluster switches to Woodpecker on MinIO only",
                "set woodpecker.storage.type: minio",
            )
        )


def _target_data_checks(res: Resolution, target: str, checks: list[Finding], etcd: EtcdConfig | None = None) -> None:
    """The target must hold no topics or data with this Milvus's names (residue of an earlier run)."""
    if target == "rocksmq":
        path = res.value("rocksmq.path") or ""
        leftovers = [p for p in (Path(path), Path(f"{path}_meta_kv")) if path and p.is_dir() and any(p.iterdir())]
        if leftovers:
            checks.append(
                _check(
                    ERROR,
                    "target-not-empty",
                    f"RocksMQ data from an earlier run in {', '.join(map(str, leftovers))}",
                    "archive and remove it before switching back to rocksmq (Milvus 3.0's Switch MQ type docs: "
                    "delete rdb_data and rdb_data_meta_kv first)",
                )
            )
    if target == wal.WOODPECKER:
        _woodpecker_leftovers(res, etcd, checks)
    prefix = res.value("msgChannel.chanNamePrefix.cluster") or DEFAULT_CHANNEL_PREFIX
    checks.append(
        _check(
            INFO,
            "same-named-topics",
            f"check by hand that {target} holds no topics or logs named {prefix}-* (another or an earlier Milvus)",
            "clean them first: conflicting names lead to unexpected behaviour (Switch MQ type docs)",
        )
    )


def _woodpecker_leftovers(res: Resolution, etcd: EtcdConfig | None, checks: list[Finding]) -> None:
    """Switching back to Woodpecker: its logs from the earlier run must be gone first, in etcd (the `woodpecker/`
    prefix, either the legacy top-level one or `<etcd.rootPath>/<woodpecker.meta.prefix>`) and on disk
    (`<localStorage.path>/wp`, which holds `files/wp`); Milvus 3.0's Switch MQ type docs ask to delete both. A
    bucket's `<minio.rootPath>/wp` is not listed here (the plan reads no object storage)."""
    from mqctl.mq.woodpecker.meta import read_woodpecker_meta

    try:
        meta = read_woodpecker_meta(etcd, res.value("woodpecker.meta.prefix") or None) if etcd is not None else None
    except PreconditionError:
        meta = None  # _streaming_checks says the etcd could not be read
    if meta is not None and meta.logs:
        names = sorted(meta.logs)
        checks.append(
            _check(
                ERROR,
                "target-not-empty",
                f"Woodpecker's meta of an earlier run is still in etcd under {meta.prefix}/: {len(names)} log(s) "
                f"({', '.join(names[:3])}{', ...' if len(names) > 3 else ''}); switching back to woodpecker over it "
                "reopens old logs with stale segments (and old-epoch positions, milvus PR #52018)",
                f"with the switch not started, back up and delete the prefix (`etcdctl del --prefix {meta.prefix}/`) "
                "and Woodpecker's files (files/wp under localStorage.path/wp or minio.rootPath) first, as Milvus "
                "3.0's Switch MQ type docs ask",
            )
        )
    local = Path(res.value("localStorage.path") or "") / "wp"
    if res.value("localStorage.path") and local.is_dir() and any(local.iterdir()):
        checks.append(
            _check(
                ERROR,
                "target-not-empty",
                f"Woodpecker files of an earlier run in {local}",
                "archive and remove them before switching back to woodpecker (Milvus 3.0's Switch MQ type docs: "
                "delete files/wp first)",
            )
        )


def _known_issues(version_text: str | None, target: str, checks: list[Finding]) -> None:
    version = parse_version(version_text)
    if version is not None and version < DOCS_VERSION:
        checks.append(
            _check(
                WARNING,
                "backported",
                "Milvus's Switch MQ type docs list this switch for 3.0+ and mark it pending release; "
                "2.6 has it from the backport #47439",
                "rehearse it on a copy of this deployment first",
            )
        )
        if version < wal.STALE_CONFIG_GET_FIXED:
            checks.append(
                _check(
                    INFO,
                    "stale-config-get",
                    "/management/config/get keeps showing the old mq.type after the switch until 2.6.21 "
                    "(milvus #51497)",
                    "confirm in the coordinator's log and in etcd instead",
                )
            )
    if target == wal.WOODPECKER:
        checks.append(
            _check(
                INFO,
                "woodpecker-config-race",
                "a woodpecker.storage.type written to etcd just before the switch may not be seen (milvus #53582)",
                "render Woodpecker's settings and restart before the switch, not seconds before it",
            )
        )


def _streaming_checks(res: Resolution, options: MigrateOptions, checks: list[Finding]) -> None:
    """The 2.6 WAL state in etcd (mqctl.mq.streaming; format from Milvus v2.6.x / Woodpecker v0.1.x source, not yet
    verified on a running 2.6): a switch left mid-way, checkpoints on another WAL, a loopback quorum, a stuck
    truncator. Milvus refuses a second switch while readers of the previous WAL remain (milvus #52018)."""
    from mqctl.mq.streaming.checkpoint_model import (
        RULE_ALTER_WAL_MIDWAY,
        RULE_LOOPBACK_QUORUM,
        RULE_TRUNCATION_BEHIND,
        RULE_UNDECODABLE,
        RULE_WAL_MISMATCH,
    )
    from mqctl.mq.streaming.checkpoints import assess_streaming
    from mqctl.mq.streaming.state import StreamingReader
    from mqctl.mq.woodpecker.meta import read_woodpecker_meta

    etcd = EtcdConfig(options.etcd or "", options.etcd_root or res.value("etcd.rootPath") or DEFAULT_ETCD_ROOT)
    meta_sub = res.value("etcd.metaSubPath") or "meta"
    try:
        state = StreamingReader(etcd, meta_sub).read()
        woodpecker = read_woodpecker_meta(etcd, res.value("woodpecker.meta.prefix") or None)
    except PreconditionError as err:
        checks.append(_check(WARNING, "wal-state-unread", err.message, err.hint or "check --etcd"))
        return
    if not state.found:
        return
    report = assess_streaming(state, woodpecker, woodpecker_storage=res.value("woodpecker.storage.type") or None)
    for finding in report.findings:
        hint = finding.hint or ""
        if finding.code == RULE_ALTER_WAL_MIDWAY:
            checks.append(_check(ERROR, "alter-wal-in-progress", finding.message, "finish it first: " + hint))
        elif finding.code == RULE_WAL_MISMATCH:
            checks.append(_check(ERROR, "wal-name-mismatch", finding.message, "settle the last switch first: " + hint))
        elif finding.code == RULE_LOOPBACK_QUORUM:
            checks.append(_check(WARNING, "loopback-quorum", finding.message, hint))
        elif finding.code == RULE_TRUNCATION_BEHIND:
            checks.append(_check(WARNING, "truncation-behind", finding.message, hint))
        elif finding.code == RULE_UNDECODABLE:
            checks.append(_check(WARNING, "wal-state-undecodable", finding.message, hint))


def _steps(res: Resolution, options: MigrateOptions, source: str | None) -> list[PlannedStep]:
    target, coordinator = options.to, _coordinator(options)
    settings = {
        "woodpecker": "woodpecker.storage.type (local or minio in standalone, minio in a cluster)",
        "pulsar": "pulsar.address and pulsar.port",
        "kafka": "kafka.brokerList (and SASL/SSL)",
        "rocksmq": BACKENDS["rocksmq"].store_key,
    }.get(target, BACKENDS[target].enabled_by)
    logs = "; ".join(line.format(source=source or "<source>", target=target) for line in wal.DONE_LOGS)
    config = " ".join(options.configs)
    etcd = options.etcd or "http://<etcd>:2379"
    return [
        PlannedStep("check", f"GET {coordinator}/healthz answers OK; a test collection takes an insert and a query"),
        PlannedStep(
            "configure",
            f"put {settings} into the config, keep mq.type as it is; restart (Compose) or roll out (Helm, Operator)",
        ),
        PlannedStep("clean-target", f"make sure {target} holds no topics or data of this or an earlier Milvus"),
        PlannedStep("alter-wal", wal.request(target, coordinator)),
        PlannedStep(
            "verify",
            f"the coordinator logs: {logs} [mqTypeValue={target}]; then `mqctl config explain {config} "
            f"--milvus-version {options.milvus_version} --etcd {etcd}` shows {pinning.pin_key(res)} = {target}",
        ),
        PlannedStep("settle", f"wait until milvus_wal_active_readers on {coordinator}/metrics is 0 (milvus #52013)"),
        PlannedStep(
            "cleanup",
            f"after verify only: remove {source or 'the old MQ'}'s data (RocksMQ folders, topics, Woodpecker logs)",
        ),
    ]


def plan(options: MigrateOptions) -> AlterWalPlan:
    """Steps and checks of the online WAL switch to `options.to`; nothing is changed."""
    wal.refuse_without_alter_wal(parse_version(options.milvus_version), options.to)
    checks: list[Finding] = []
    res, etcd_read = _resolved(options, checks)
    source = res.effective_mq or res.attempted_mq
    why = wal.blocker(source, options.to, res.mode, res.version)
    if why:
        checks.append(_check(ERROR, "switch-unsupported", why, "see the supported pairs in Milvus's Switch MQ docs"))
    _source_checks(res, etcd_read, checks)
    _deployment_checks(res, options.to, checks)
    etcd = (
        EtcdConfig(options.etcd, options.etcd_root or res.value("etcd.rootPath") or DEFAULT_ETCD_ROOT)
        if etcd_read and options.etcd
        else None
    )
    _target_data_checks(res, options.to, checks, etcd)
    _known_issues(res.milvus_version, options.to, checks)
    if etcd_read:
        _streaming_checks(res, options, checks)
    return AlterWalPlan(
        source,
        options.to,
        res.milvus_version,
        _steps(res, options, source),
        checks,
        refused=any(c.severity == ERROR for c in checks),
    )
