"""Validation rules: each finding has a stable code, a severity, the key, file and line, and a fix.

The rules come from Milvus's own behaviour (see shared facts §1–2); where one comes from a
Milvus issue, the issue number is in its `why`.
"""

from __future__ import annotations

import os
import shutil
import socket
from dataclasses import dataclass
from pathlib import Path

from mqctl.backends import BACKENDS, CLUSTER, STANDALONE, default_order, go_parse_int, valid_mq_types
from mqctl.config import kinds
from mqctl.config.documents import HELM_VALUES, OPERATOR_CR
from mqctl.config.resolve import Resolution
from mqctl.config.schema import (
    CHECKED_SECTIONS,
    FULL,
    INT32_MAX,
    KEYS,
    MIN_SAFE_PAYLOAD,
    OVERLAY,
    known_children,
    nearest,
    normalize_key,
    section_keys,
    spec_for,
)
from mqctl.config.settings import Setting
from mqctl.findings import ERROR, INFO, SEVERITY_ORDER, WARNING, Finding
from mqctl.secrets import REDACTED, is_secret_key


@dataclass(frozen=True)
class Rule:
    code: str
    severity: str
    title: str
    why: str


RULES: tuple[Rule, ...] = (
    Rule("MQ100", ERROR, "mq.type is not a valid value", "Milvus panics at startup with `mq type X is invalid`."),
    Rule(
        "MQ101",
        ERROR,
        "rocksmq/natsmq in cluster mode",
        "both are embedded; Milvus panics with `mq %!s(MISSING) is only valid in standalone mode`.",
    ),
    Rule(
        "MQ102",
        ERROR,
        "natsmq on Milvus 2.6+",
        "natsmq was removed in 2.6 (milvus #41564, PR #41565); "
        "a natsmq deployment must move to another MQ before upgrading.",
    ),
    Rule(
        "MQ103", WARNING, "natsmq on Milvus 2.5", "natsmq is deprecated in 2.5 (CVE) and gone in 2.6 (milvus #41564)."
    ),
    Rule(
        "MQ104",
        ERROR,
        "mq.type default finds no backend",
        "with nothing enabled Milvus panics with `no available mq config found`.",
    ),
    Rule(
        "MQ105",
        ERROR,
        "chosen backend has no address",
        "an explicit pulsar with an empty address panics "
        "`Failed to add msgstream`; kafka without brokers reports healthy but every operation times out.",
    ),
    Rule(
        "MQ106",
        WARNING,
        "natsmq configured but mq.type is default",
        "natsmq never takes part in `default` (PR #26791): customised natsmq settings are ignored.",
    ),
    Rule(
        "MQ107",
        ERROR,
        "rocksmq without path",
        "an explicit rocksmq with an empty rocksmq.path has nowhere to open its RocksDB; Milvus fails at startup.",
    ),
    Rule(
        "MQ110",
        ERROR,
        "natsmq without storeDir",
        "with an empty storeDir the embedded NATS server keeps "
        "JetStream in the system temp dir (/tmp/nats/jetstream, seen on 2.3.5), which a reboot or tmp cleaner empties.",
    ),
    Rule("MQ111", ERROR, "natsmq port out of range", "natsmq.server.port must be 1-65535, or -1 for a random port."),
    Rule("MQ112", INFO, "natsmq port is random", "-1 lets the embedded NATS server pick a port at each start."),
    Rule("MQ113", WARNING, "natsmq maxPayload below 5 MB", "Milvus messages reach 5 MB; smaller payloads get refused."),
    Rule("MQ114", ERROR, "natsmq maxPayload above int32", "NATS reads max_payload as int32; larger values overflow."),
    Rule(
        "MQ115",
        ERROR,
        "number Milvus cannot parse",
        "Milvus silently turns an unparsable number into 0 (e.g. `maxAge: 3d` means no age limit).",
    ),
    Rule(
        "MQ116",
        WARNING,
        "retention disabled",
        "zero or negative retention means messages are never cleaned up (full disks: milvus #16606, #19574).",
    ),
    Rule("MQ120", WARNING, "unknown key under mq/natsmq/rocksmq", "Milvus ignores unknown keys; usually a typo."),
    Rule("MQ121", INFO, "several backends configured", "only one MQ runs; the others' settings are ignored."),
    Rule(
        "MQ122",
        WARNING,
        "pulsar.address with scheme or port",
        "an address containing ':' is used as is, so pulsar.port is ignored.",
    ),
    Rule(
        "MQ130",
        ERROR,
        "Operator msgStreamType vs spec.config mq.type",
        "the operator writes mq.type from msgStreamType; a different spec.config value contradicts it.",
    ),
    Rule(
        "MQ131",
        WARNING,
        "Operator dependency not used",
        "a dependency block for another MQ deploys or references a service Milvus will not use.",
    ),
    Rule(
        "MQ132",
        ERROR,
        "Operator rolling update with an embedded MQ",
        "the operator's webhook rejects enableRollingUpdate with rocksmq or natsmq.",
    ),
    Rule(
        "MQ140",
        WARNING,
        "Helm messageQueue vs *.enabled mismatch",
        "the chart deploys what *.enabled says; messageQueue picks what Milvus uses in standalone.",
    ),
    Rule(
        "MQ150",
        WARNING,
        "override shadows the yaml",
        "etcd > env > yaml: a yaml change to this key will not take effect (milvus #50217).",
    ),
    Rule("MQ151", WARNING, "file ignored by this version", "Milvus 2.3 reads milvus.yaml only."),
    Rule("MQ152", INFO, "mode assumed", "a milvus.yaml does not say whether it runs standalone or in a cluster."),
    Rule(
        "MQ153",
        INFO,
        "file role decides a backend",
        "a key left out takes Milvus's code default under a whole "
        "milvus.yaml (rocksmq.path and pulsar.address empty) and the stock file's value under an overlay.",
    ),
    Rule("HOST201", ERROR, "MQ port already in use (--check-host)", "the embedded NATS server cannot bind it."),
    Rule("HOST202", ERROR, "store directory not writable (--check-host)", "the MQ cannot create its files."),
    Rule("HOST203", WARNING, "free disk below maxFileStore (--check-host)", "JetStream may run out of space."),
    Rule(
        "HOST204",
        WARNING,
        "store directory on a rotational disk (--check-host)",
        "MQ write-ahead logs need fast fsyncs; spinning disks slow every insert.",
    ),
)
RULE_BY_CODE = {rule.code: rule for rule in RULES}


@dataclass
class RuleList:
    """What `config rules` prints."""

    rules: list[Rule]


def _finding(
    code: str,
    message: str,
    origin: Setting | None = None,
    *,
    key: str | None = None,
    hint: str | None = None,
    severity: str | None = None,
) -> Finding:
    return Finding(
        code,
        severity or RULE_BY_CODE[code].severity,
        message,
        key or (origin.key if origin else None),
        origin.file if origin else None,
        origin.line if origin else None,
        hint,
    )


def _located(resolution: Resolution, key: str) -> Setting:
    return resolution.origin(key)


def validate(resolution: Resolution, *, strict: bool = False, check_host: bool = False) -> list[Finding]:
    """Every finding for a resolved deployment, errors first; `strict` makes warnings errors (for callers
    that only look at errors; the CLI keeps severities and applies --strict to its exit code instead)."""
    findings: list[Finding] = []
    for check in (
        _mq_type,
        _backend_settings,
        _natsmq_left_to_default,
        _natsmq,
        _numbers,
        _unknown_keys,
        _several_backends,
        _pulsar_address,
        _operator,
        _helm,
        _overrides,
        _context,
    ):
        findings.extend(check(resolution))
    if check_host:
        findings.extend(host_checks(resolution))
    if strict:
        for finding in findings:
            if finding.severity == WARNING:
                finding.severity = ERROR
    findings.sort(key=lambda f: (SEVERITY_ORDER[f.severity], f.file or "", f.line or 0, f.code))
    return findings


def exit_code(findings: list[Finding], *, strict: bool = False) -> int:
    """1 when any error (or, strict, any warning) was found."""
    bad = {ERROR, WARNING} if strict else {ERROR}
    return 1 if any(f.severity in bad for f in findings) else 0


# ---------------------------------------------------------------------------- rules


def _mq_type(res: Resolution) -> list[Finding]:
    origin = _located(res, "mq.type")
    mq_type = res.mq_type
    version = res.version
    found = []
    if mq_type == "natsmq" and version is not None and version >= (2, 6, 0):
        found.append(
            _finding(
                "MQ102",
                f"mq.type natsmq: natsmq was removed in Milvus {res.milvus_version}",
                origin,
                hint="move off natsmq (to rocksmq, pulsar or kafka) on 2.5 before upgrading to 2.6",
            )
        )
    elif mq_type != "default" and res.panic and res.panic.startswith("mq type"):
        valid = valid_mq_types(version) if version else valid_mq_types(None) + ("woodpecker",)
        guess = nearest(mq_type, valid)
        if mq_type == "woodpecker":
            hint = "woodpecker needs Milvus 2.6 or later; use rocksmq, pulsar or kafka"
        else:
            hint = f"did you mean {guess!r}?" if guess else f"use one of {', '.join(valid)}"
        found.append(
            _finding("MQ100", f"mq.type {mq_type!r} is invalid: Milvus panics `{res.panic}`", origin, hint=hint)
        )
    if res.panic and res.panic.startswith("mq %!s"):
        found.append(
            _finding(
                "MQ101",
                f"mq.type {mq_type} is standalone-only but the mode is {res.mode}: Milvus panics `{res.panic}`",
                origin,
                hint="use pulsar or kafka (woodpecker on 2.6+) for a cluster",
            )
        )
    if mq_type == "natsmq" and version is not None and (2, 5, 0) <= version < (2, 6, 0):
        found.append(
            _finding(
                "MQ103",
                "natsmq is deprecated in Milvus 2.5 and removed in 2.6",
                origin,
                hint="plan a move to rocksmq, pulsar or kafka before upgrading",
            )
        )
    if res.panic and res.panic.startswith("no available"):
        found.append(
            _finding(
                "MQ104",
                f"mq.type default finds no enabled backend for {res.mode}: Milvus panics `{res.panic}`",
                origin,
                hint="set mq.type explicitly, or rocksmq.path / pulsar.address / kafka.brokerList",
            )
        )
    return found


def _backend_settings(res: Resolution) -> list[Finding]:
    mq = res.attempted_mq
    if mq == "rocksmq":
        return [
            _finding(
                "MQ107",
                f"rocksmq is chosen but rocksmq.path is empty: Milvus fails `{res.fails}`",
                _located(res, "rocksmq.path"),
                key="rocksmq.path",
                hint="set it to a persistent directory, e.g. /var/lib/milvus/rdb_data",
            )
        ]
    if mq not in ("pulsar", "kafka"):
        return []
    key = BACKENDS[mq].enabled_by
    return [
        _finding(
            "MQ105",
            f"mq.type {mq} but {key} is empty: Milvus fails `{res.fails}`",
            _located(res, key),
            key=key,
            hint=f"set {key}",
        )
    ]


def _natsmq_left_to_default(res: Resolution) -> list[Finding]:
    """natsmq set up in the yaml, yet `default` never picks it (the comment in milvus.yaml says otherwise)."""
    if res.mq_type != "default":
        return []
    written = [s for s in res._yaml_all if normalize_key(s.key).startswith("natsmq") and s.source == "yaml"]
    customised = [s for s in written if spec_for(s.key) and (s.value or "") != spec_for(s.key).default]
    if not written or not (customised or not res.value("rocksmq.path")):
        return []
    starts = f"Milvus starts {res.effective_mq}" if res.effective_mq else "Milvus does not start"
    return [
        _finding(
            "MQ106",
            f"natsmq is configured but mq.type is default, which never picks natsmq: {starts}",
            (customised or written)[0],
            hint="set mq.type: natsmq to use it",
        )
    ]


def _natsmq(res: Resolution) -> list[Finding]:
    """storeDir when natsmq runs; port and payload whenever they are written down."""
    chosen = res.effective_mq == "natsmq"
    found = []
    store = _located(res, "natsmq.server.storeDir")
    if chosen and not store.value:
        found.append(
            _finding(
                "MQ110",
                "natsmq is chosen but natsmq.server.storeDir is empty",
                store,
                key="natsmq.server.storeDir",
                hint="set it to a persistent directory, e.g. /var/lib/milvus/nats",
            )
        )
    port = _located(res, "natsmq.server.port")
    number = go_parse_int(port.value)
    if not chosen and port.source == "default":
        pass
    elif number == -1:
        found.append(
            _finding(
                "MQ112",
                "natsmq.server.port -1: the NATS server listens on a random port",
                port,
                key="natsmq.server.port",
                hint="fine for Milvus; set a fixed port to inspect it with NATS tools",
            )
        )
    elif number is None or not 1 <= number <= 65535:
        shown = "is empty" if port.value in (None, "") else f"{port.value!r} is not a port"
        found.append(
            _finding(
                "MQ111",
                f"natsmq.server.port {shown} (1-65535, or -1 for random)",
                port,
                key="natsmq.server.port",
                hint="e.g. 4222",
            )
        )
    payload = _located(res, "natsmq.server.maxPayload")
    size = go_parse_int(payload.value)
    if not chosen and payload.source == "default":
        pass
    elif size is not None and size > INT32_MAX:
        found.append(
            _finding(
                "MQ114",
                f"natsmq.server.maxPayload {size} overflows int32 ({INT32_MAX})",
                payload,
                key="natsmq.server.maxPayload",
                hint="8388608 (8 MB) is Milvus's default",
            )
        )
    elif size is not None and size < MIN_SAFE_PAYLOAD:
        found.append(
            _finding(
                "MQ113",
                f"natsmq.server.maxPayload {size} is below 5 MB: large inserts get refused",
                payload,
                key="natsmq.server.maxPayload",
                hint="keep it at least 5242880; default 8388608",
            )
        )
    return found


RETENTION_KEYS = {
    "natsmq": ("natsmq.server.retention.maxAge",),
    "rocksmq": ("rocksmq.retentionTimeInMinutes", "rocksmq.retentionSizeInMB"),
}


def _numbers(res: Resolution) -> list[Finding]:
    """Unparsable numbers (Milvus reads 0) and retention that disables cleanup."""
    found = []
    for spec in KEYS:
        if spec.type not in ("int", "bytes", "minutes") or spec.key.split(".")[0] not in CHECKED_SECTIONS:
            continue
        origin = _located(res, spec.key)
        if origin.source == "default" or origin.value in (None, "") or spec.key == "natsmq.server.port":
            continue  # the port has a rule of its own (MQ111)
        if go_parse_int(origin.value) is None:
            effect = "no age limit" if spec.key.endswith("maxAge") else "0"
            found.append(
                _finding(
                    "MQ115",
                    f"{spec.key} {origin.value!r} is not an integer: Milvus reads it as 0 ({effect})",
                    origin,
                    key=spec.key,
                    hint=f"write a plain integer{' of minutes, e.g. 4320 for 3 days' if spec.type == 'minutes' else ''}",
                )
            )
    for backend, keys in RETENTION_KEYS.items():
        for key in keys:
            origin = _located(res, key)
            number = go_parse_int(origin.value)
            if origin.source != "default" and number is not None and number <= 0:
                found.append(
                    _finding(
                        "MQ116",
                        f"{key} {origin.value!r} disables {backend}'s cleanup by "
                        f"{'age' if 'Time' in key or 'Age' in key else 'size'}: messages are kept "
                        "forever",
                        origin,
                        key=key,
                        hint="set a positive limit unless unbounded growth is intended",
                    )
                )
    return found


def _unknown_keys(res: Resolution) -> list[Finding]:
    known = {normalize_key(spec.key): spec.key for spec in KEYS}
    found, seen = [], set()
    for setting in res._yaml_all:
        section = setting.key.split(".")[0]
        if section not in CHECKED_SECTIONS or setting.source != "yaml":
            continue
        normal = normalize_key(setting.key)
        children = known_children(setting.key)
        if normal in known or normal in seen or (setting.value is None and children):
            continue  # `mq: null` or `mq:` is an empty section, as absent to Milvus as no section at all
        seen.add(normal)
        if children:
            found.append(
                _finding(
                    "MQ120",
                    f"{setting.key} is a section, not a value: Milvus ignores it",
                    setting,
                    hint=f"write its keys under it, e.g. {setting.key}.{children[0]}",
                )
            )
            continue
        candidates = section_keys(setting.key)
        guess = nearest(setting.key, candidates)
        found.append(
            _finding(
                "MQ120",
                f"unknown key {setting.key}: Milvus ignores it",
                setting,
                hint=f"did you mean {guess}?" if guess else f"known keys: {', '.join(candidates[:6])}",
            )
        )
    return found


def _several_backends(res: Resolution) -> list[Finding]:
    configured = [
        (backend, res.yaml_setting(key))
        for backend, key in ((b.name, b.enabled_by) for b in BACKENDS.values())
        if res.yaml_setting(key) is not None and res.yaml_setting(key).value
    ]
    if len(configured) < 2 or res.effective_mq is None:
        return []
    others = [b for b, _ in configured if b != res.effective_mq]
    origin = _located(res, "mq.type")
    return [
        _finding(
            "MQ121",
            f"{len(configured)} backends configured ({', '.join(b for b, _ in configured)}): "
            f"Milvus starts {res.effective_mq}; the settings of {', '.join(others)} are ignored",
            origin,
            key="mq.type",
            hint="remove unused blocks to avoid confusion, or set mq.type explicitly",
        )
    ]


def _pulsar_address(res: Resolution) -> list[Finding]:
    origin = _located(res, "pulsar.address")
    value = origin.value or ""
    if origin.source in ("default", "operator", "helm") or ":" not in value:
        return []
    return [
        _finding(
            "MQ122",
            f"pulsar.address {value!r} has a scheme or port: it is used as is and pulsar.port is ignored",
            origin,
            hint="write the host only (e.g. pulsar) and the port in pulsar.port",
        )
    ]


def _operator(res: Resolution) -> list[Finding]:
    found = []
    for view in res.views:
        if view.document.kind != OPERATOR_CR:
            continue
        config_type = next((s for s in view.settings if s.source == "yaml" and normalize_key(s.key) == "mqtype"), None)
        chosen = next((s for s in view.settings if s.source == "operator" and s.key == "mq.type"), None)
        if config_type and chosen and config_type.value != chosen.value:
            found.append(
                _finding(
                    "MQ130",
                    f"spec.config mq.type {config_type.value!r} contradicts msgStreamType "
                    f"{chosen.value!r}: the operator writes mq.type from msgStreamType",
                    config_type,
                    hint="remove spec.config.mq.type or make both the same",
                )
            )
        if chosen is not None:
            for backend in ("pulsar", "kafka", "natsmq", "rocksmq", "woodpecker"):
                block = kinds.field_setting(view.document, f"spec.dependencies.{backend}")
                if backend != chosen.value and block is not None and backend in ("pulsar", "kafka"):
                    found.append(
                        _finding(
                            "MQ131",
                            f"spec.dependencies.{backend} is configured but Milvus uses {chosen.value}",
                            block,
                            key=f"spec.dependencies.{backend}",
                            hint="remove the unused dependency so the operator does not deploy it",
                        )
                    )
        rolling = kinds.field_setting(view.document, "spec.components.enableRollingUpdate")
        if rolling and (rolling.value or "").lower() == "true" and res.effective_mq in ("rocksmq", "natsmq"):
            found.append(
                _finding(
                    "MQ132",
                    f"enableRollingUpdate with {res.effective_mq}: the operator's webhook rejects it",
                    rolling,
                    hint="turn rolling updates off, or use pulsar/kafka",
                )
            )
    return found


def _helm(res: Resolution) -> list[Finding]:
    found = []
    for view in res.views:
        if view.document.kind != HELM_VALUES:
            continue
        fields = view.fields
        queue = fields.get("standalone.messageQueue")

        pulsar_on = [n for n in kinds.HELM_PULSAR_TOGGLES if kinds.helm_enabled(fields, n)]
        kafka_on = [n for n in kinds.HELM_KAFKA_TOGGLES if kinds.helm_enabled(fields, n)]
        if res.mode == STANDALONE and queue is not None:
            if queue.value == "pulsar" and not pulsar_on:
                found.append(
                    _finding(
                        "MQ140",
                        "standalone.messageQueue pulsar but no pulsar*.enabled is true: nothing deploys Pulsar",
                        queue,
                        hint="set pulsarv3.enabled: true (or externalPulsar)",
                        severity=ERROR,
                    )
                )
            if queue.value == "kafka" and not kafka_on:
                found.append(
                    _finding(
                        "MQ140",
                        "standalone.messageQueue kafka but kafka.enabled/externalKafka.enabled "
                        "is not true: nothing deploys Kafka",
                        queue,
                        hint="set kafka.enabled: true",
                        severity=ERROR,
                    )
                )
            used = {"pulsar": pulsar_on, "kafka": kafka_on}.get(queue.value or "", [])
            for name in pulsar_on + kafka_on:
                if name not in used:
                    found.append(
                        _finding(
                            "MQ140",
                            f"{name}: true deploys a service that standalone.messageQueue {queue.value} does not use",
                            fields[name],
                            hint=f"set {name}: false",
                        )
                    )
        if res.mode == CLUSTER and len(pulsar_on + kafka_on) > 1:
            found.append(
                _finding(
                    "MQ140",
                    f"several MQs enabled in a cluster ({', '.join(pulsar_on + kafka_on)}): "
                    f"Milvus uses {res.effective_mq}",
                    fields[(pulsar_on + kafka_on)[1]],
                    hint="enable only one",
                )
            )
        chart_choice = next((s for s in view.settings if s.source == "helm"), None)
        user_type = next((s for s in view.settings if s.source == "yaml" and normalize_key(s.key) == "mqtype"), None)
        if chart_choice and user_type and user_type.value != chart_choice.value:
            found.append(
                _finding(
                    "MQ140",
                    f"extraConfigFiles.user.yaml sets mq.type {user_type.value} but the chart "
                    f"is set up for {chart_choice.value} ({chart_choice.detail})",
                    user_type,
                    hint="make standalone.messageQueue / *.enabled match user.yaml's mq.type",
                )
            )
    return found


def _overrides(res: Resolution) -> list[Finding]:
    found = []
    for override in res.overrides():
        yaml = res.yaml_setting(override.key)
        if yaml is None or yaml.value == override.value:
            continue
        new, old = (REDACTED, REDACTED) if is_secret_key(override.key) else (repr(override.value), repr(yaml.value))
        found.append(
            Finding(
                "MQ150",
                WARNING,
                f"{override.source} {override.detail} sets {override.key} "
                f"{new}, hiding the yaml's {old}: the yaml change will not take effect",
                yaml.key,
                yaml.file,
                yaml.line,
                f"change or delete the {override.source} override ({override.detail})",
            )
        )
    return found


def _context(res: Resolution) -> list[Finding]:
    found = []
    for name in res._ignored_files:
        found.append(
            Finding(
                "MQ151",
                WARNING,
                f"Milvus {res.milvus_version} reads milvus.yaml only: {name} is ignored",
                None,
                name,
                None,
                "merge its settings into milvus.yaml, or upgrade to 2.4+",
            )
        )
    if not res._mode_stated:
        found.append(
            Finding(
                "MQ152",
                INFO,
                "mode not stated by the document: checked as standalone",
                None,
                res.files[0] if res.files else None,
                None,
                "pass --mode cluster for a cluster",
            )
        )
    found.extend(_role_assumed(res))
    return found


def _role_assumed(res: Resolution) -> list[Finding]:
    """The assumed file role changes a backend's enabling key: say which default was taken."""
    if res._role_stated:
        return []
    other = OVERLAY if res.role == FULL else FULL
    deciding = default_order(res.mode, res.version) if res.mq_type == "default" else (res.mq_type,)
    differing = [BACKENDS[mq].enabled_by for mq in deciding if mq in BACKENDS]
    differing = [
        key
        for key in differing
        if res.origin(key).source == "default"
        and spec_for(key) is not None
        and spec_for(key).default_in(res.role, res.version) != spec_for(key).default_in(other, res.version)
    ]
    if not differing:
        return []
    taken = ", ".join(f"{key} = {res.value(key) or '(empty)'}" for key in differing)
    return [
        Finding(
            "MQ153",
            INFO,
            f"not set, so taken from the {res.default_source}: {taken} (file role {res.role})",
            None,
            res.files[0] if res.files else None,
            None,
            f"pass --role {other} if this file is "
            + ("layered on the stock milvus.yaml" if other == OVERLAY else "Milvus's whole milvus.yaml"),
        )
    ]


# ---------------------------------------------------------------------------- host checks


def _existing_ancestor(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _is_rotational(path: Path) -> bool | None:
    """True when the disk holding `path` spins (from /sys); None when unknown."""
    try:
        device = os.stat(path).st_dev
        base = Path(f"/sys/dev/block/{os.major(device)}:{os.minor(device)}")
        for candidate in (base / "queue" / "rotational", base.resolve().parent / "queue" / "rotational"):
            if candidate.exists():
                return candidate.read_text().strip() == "1"
    except OSError:
        return None
    return None


def host_checks(res: Resolution) -> list[Finding]:
    """Checks of this machine for an embedded MQ: port free, store writable, disk space and kind."""
    found = []
    mq = res.effective_mq
    if mq == "natsmq":
        port = go_parse_int(res.value("natsmq.server.port"))
        if port is not None and 1 <= port <= 65535:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    found.append(
                        _finding(
                            "HOST201",
                            f"port {port} is already in use on this host",
                            _located(res, "natsmq.server.port"),
                            key="natsmq.server.port",
                            hint="stop what listens there (a running Milvus holds it) or pick another port",
                        )
                    )
    store_key = BACKENDS[mq].store_key if mq in BACKENDS else None
    if store_key is None or not res.value(store_key):
        return found
    origin = _located(res, store_key)
    existing = _existing_ancestor(Path(res.value(store_key)))
    if not os.access(existing, os.W_OK):
        found.append(
            _finding(
                "HOST202",
                f"{store_key} {res.value(store_key)}: {existing} is not writable",
                origin,
                key=store_key,
                hint="fix ownership/permissions or choose another directory",
            )
        )
    if mq == "natsmq":
        limit = go_parse_int(res.value("natsmq.server.maxFileStore"))
        free = shutil.disk_usage(existing).free
        if limit is not None and free < limit:
            found.append(
                _finding(
                    "HOST203",
                    f"free disk at {existing} is {free} bytes, below maxFileStore {limit}",
                    _located(res, "natsmq.server.maxFileStore"),
                    key="natsmq.server.maxFileStore",
                    hint="free space, or lower natsmq.server.maxFileStore",
                )
            )
    if _is_rotational(existing):
        found.append(
            _finding(
                "HOST204",
                f"{existing} is on a rotational disk",
                origin,
                key=store_key,
                hint="put the MQ store on an SSD",
            )
        )
    return found


@dataclass
class Report:
    """What `config explain` and `config validate` print (the JSON contract in README)."""

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
    )
