"""Rules on the MQ choice and the backends' own settings (mq.*, rocksmq.*, natsmq.*, pulsar.*, kafka.*)."""

from __future__ import annotations

import re
from collections.abc import Callable

from mqctl.backends import BACKENDS, V2_3, go_parse_int, is_embedded, valid_mq_types
from mqctl.config.known_keys import (
    CHECKED_SECTIONS,
    INT32_MAX,
    KEYS,
    MIN_SAFE_PAYLOAD,
    SIXTY_FOUR_BIT_KEYS,
    known_children,
    nearest,
    normalize_key,
    section_keys,
    spec_for,
    too_large,
)
from mqctl.config.resolve.resolution import PANIC_INVALID, PANIC_INVALID_WAL, Resolution, as_error_prints
from mqctl.config.rules.catalog import finding
from mqctl.findings import Finding

NATS = BACKENDS["natsmq"]
NATS_PORT_KEY, NATS_STORE_KEY = str(NATS.port_key), str(NATS.store_key)
NATS_DEPRECATED = (2, 5, 0)  # deprecated in 2.5 (a CVE), removed in 2.6 (milvus #41564)


def _mq_type(res: Resolution) -> list[Finding]:
    origin = res.origin("mq.type")
    mq_type = res.mq_type
    version = res.version
    found = []
    if mq_type == "natsmq" and not NATS.available(version):
        found.append(
            finding(
                "MQ102",
                f"mq.type natsmq: natsmq was removed in Milvus {res.milvus_version}",
                origin,
                hint="move off natsmq (to rocksmq, pulsar or kafka) on 2.5 before upgrading to 2.6",
            )
        )
    elif mq_type != "default" and res.panic in (
        PANIC_INVALID.format(as_error_prints(mq_type)),
        PANIC_INVALID_WAL.format(as_error_prints(mq_type)),
    ):
        valid = valid_mq_types(version) if version else valid_mq_types(None) + ("woodpecker",)
        guess = nearest(mq_type, valid)
        if mq_type == "woodpecker":
            hint = "woodpecker needs Milvus 2.6 or later; use rocksmq, pulsar or kafka"
        elif not mq_type:
            hint = (
                "an empty value is not the default: write `default` or an MQ name, or remove the key; an empty "
                "MQ_TYPE in Milvus's environment (docker compose `MQ_TYPE: ${MQ_TYPE}` with none set) counts too"
            )
        elif mq_type.strip().lower() in (*valid, "default"):
            # validateMQType compares the string as is (seen on 2.3.5: `RocksMQ`, `NATSMQ`, `" natsmq "` panic)
            hint = (
                f"Milvus compares mq.type exactly, in lower case and without spaces: write {mq_type.strip().lower()!r}"
            )
        else:
            hint = f"did you mean {guess!r}?" if guess else f"use one of {', '.join(valid)}"
        found.append(
            finding("MQ100", f"mq.type {mq_type!r} is invalid: Milvus panics `{res.panic}`", origin, hint=hint)
        )
    if res.panic and res.panic.startswith("mq %!s"):
        found.append(
            finding(
                "MQ101",
                f"mq.type {mq_type} is standalone-only but the mode is {res.mode}: Milvus panics `{res.panic}`",
                origin,
                hint="use pulsar or kafka (woodpecker on 2.6+) for a cluster",
            )
        )
    if mq_type == "natsmq" and version is not None and version >= NATS_DEPRECATED and NATS.available(version):
        found.append(
            finding(
                "MQ103",
                "natsmq is deprecated in Milvus 2.5 and removed in 2.6",
                origin,
                hint="plan a move to rocksmq, pulsar or kafka before upgrading",
            )
        )
    if res.panic and res.panic.startswith("no available") and version is not None and version < V2_3:
        found.append(
            finding(
                "MQ104",
                f"no MQ address is set for {res.mode}: Milvus {res.milvus_version} panics `{res.panic}`",
                hint="set rocksmq.path (standalone), pulsar.address or kafka.brokerList",
            )
        )
    elif res.panic and res.panic.startswith("no available"):
        found.append(
            finding(
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
            finding(
                "MQ107",
                f"rocksmq is chosen but rocksmq.path is empty: Milvus fails `{res.fails}`",
                res.origin("rocksmq.path"),
                key="rocksmq.path",
                hint="set it to a persistent directory, e.g. /var/lib/milvus/rdb_data",
            )
        ]
    if mq is None or is_embedded(mq):  # an empty rocksmq.path is MQ107 above
        return []
    key = BACKENDS[mq].enabled_by
    return [
        finding(
            "MQ105",
            f"mq.type {mq} but {key} is empty: Milvus fails `{res.fails}`",
            res.origin(key),
            key=key,
            hint=f"set {key}",
        )
    ]


def _natsmq_left_to_default(res: Resolution) -> list[Finding]:
    """natsmq set up in the yaml, yet `default` never picks it (the comment in milvus.yaml says otherwise)."""
    if res.mq_type != "default" or (res.version is not None and res.version < V2_3):  # 2.2: no natsmq (MQ162)
        return []
    written = [s for s in res.yaml_layers if normalize_key(s.key).startswith("natsmq") and s.source == "yaml"]
    customised = [s for s in written if (spec := spec_for(s.key)) is not None and (s.value or "") != spec.default]
    if not written or not (customised or not res.value("rocksmq.path")):
        return []
    starts = f"Milvus starts {res.effective_mq}" if res.effective_mq else "Milvus does not start"
    return [
        finding(
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
    store = res.origin(NATS_STORE_KEY)
    if chosen and not store.value:
        found.append(
            finding(
                "MQ110",
                "natsmq is chosen but natsmq.server.storeDir is empty",
                store,
                key=NATS_STORE_KEY,
                hint="set it to a persistent directory, e.g. /var/lib/milvus/nats",
            )
        )
    port = res.origin(NATS_PORT_KEY)
    number = go_parse_int(port.value)
    if not chosen and port.source == "default":
        pass
    elif number == -1:
        found.append(
            finding(
                "MQ112",
                "natsmq.server.port -1: the NATS server listens on a random port",
                port,
                key=NATS_PORT_KEY,
                hint="fine for Milvus; set a fixed port to inspect it with NATS tools",
            )
        )
    elif number is None or not 1 <= number <= 65535:
        shown = "is empty" if port.value in (None, "") else f"{port.value!r} is not a port"
        found.append(
            finding(
                "MQ111",
                f"natsmq.server.port {shown} (1-65535, or -1 for random)",
                port,
                key=NATS_PORT_KEY,
                hint="e.g. 4222",
            )
        )
    payload = res.origin("natsmq.server.maxPayload")
    size = go_parse_int(payload.value)
    if not chosen and payload.source == "default":
        pass
    elif size is not None and size > INT32_MAX:
        found.append(
            finding(
                "MQ114",
                f"natsmq.server.maxPayload {size} overflows int32 ({INT32_MAX})",
                payload,
                key="natsmq.server.maxPayload",
                hint="8388608 (8 MB) is Milvus's default",
            )
        )
    elif size is not None and size < MIN_SAFE_PAYLOAD:
        found.append(
            finding(
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
        origin = res.origin(spec.key)
        if origin.source == "default" or origin.value in (None, "") or spec.key == NATS_PORT_KEY:
            continue  # the port has a rule of its own (MQ111)
        if go_parse_int(origin.value) is None:
            effect = "no age limit" if spec.key.endswith("maxAge") else "0"
            found.append(
                finding(
                    "MQ115",
                    f"{spec.key} {origin.value!r} is "
                    + (
                        "outside the 64-bit integers"
                        if re.fullmatch(r"[+-]?[0-9]+", origin.value)
                        else "not an integer"
                    )
                    + f": Milvus reads it as 0 ({effect})",
                    origin,
                    key=spec.key,
                    hint=f"write a plain integer{' of minutes, e.g. 4320 for 3 days' if spec.type == 'minutes' else ''}",
                )
            )
    for key in SIXTY_FOUR_BIT_KEYS:
        origin = res.origin(key)
        number = go_parse_int(origin.value)
        why = too_large(key, number) if origin.source != "default" and number is not None else None
        if why:
            found.append(finding("MQ117", why, origin, key=key, hint="use 0 (or leave it empty) for no limit"))
    for backend, keys in RETENTION_KEYS.items():
        for key in keys:
            origin = res.origin(key)
            number = go_parse_int(origin.value)
            if origin.source != "default" and number is not None and number <= 0:
                found.append(
                    finding(
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
    for setting in res.yaml_layers:
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
                finding(
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
            finding(
                "MQ120",
                f"unknown key {setting.key}: Milvus ignores it",
                setting,
                hint=f"did you mean {guess}?" if guess else f"known keys: {', '.join(candidates[:6])}",
            )
        )
    return found


def _several_backends(res: Resolution) -> list[Finding]:
    configured = [
        (backend.name, written)
        for backend in BACKENDS.values()
        if backend.available(res.version)  # woodpecker before 2.6, natsmq from 2.6: not Milvus's backends
        and (written := res.yaml_setting(backend.enabled_by)) is not None
        and written.value
    ]
    if len(configured) < 2 or res.effective_mq is None:
        return []
    others = [b for b, _ in configured if b != res.effective_mq]
    typed = res.version is None or res.version >= V2_3  # 2.0-2.2 have no mq.type
    return [
        finding(
            "MQ121",
            f"{len(configured)} backends configured ({', '.join(b for b, _ in configured)}): "
            f"Milvus starts {res.effective_mq}; the settings of {', '.join(others)} are ignored",
            res.origin("mq.type") if typed else None,
            key="mq.type" if typed else None,
            hint="remove unused blocks to avoid confusion" + (", or set mq.type explicitly" if typed else ""),
        )
    ]


def _pulsar_address(res: Resolution) -> list[Finding]:
    origin = res.origin("pulsar.address")
    value = origin.value or ""
    if origin.source in ("default", "operator", "helm") or ":" not in value:
        return []
    return [
        finding(
            "MQ122",
            f"pulsar.address {value!r} has a scheme or port: it is used as is and pulsar.port is ignored",
            origin,
            hint="write the host only (e.g. pulsar) and the port in pulsar.port",
        )
    ]


MQ_CHECKS: tuple[Callable[[Resolution], list[Finding]], ...] = (
    _mq_type,
    _backend_settings,
    _natsmq_left_to_default,
    _natsmq,
    _numbers,
    _unknown_keys,
    _several_backends,
    _pulsar_address,
)
