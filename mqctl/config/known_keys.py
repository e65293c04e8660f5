"""Known Milvus MQ keys: their type, Milvus's defaults and the versions they exist in.

A key left out takes one of two defaults, by the role of the file: under a whole milvus.yaml
(what Milvus reads as its config; 2.3 reads nothing else) the code default of that version
(Milvus's paramtable, `pkg/util/paramtable/service_param.go`); under an overlay (user.yaml in
2.4+, Helm `extraConfigFiles.user.yaml`, Operator `spec.config`) the stock milvus.yaml of that
version beneath it. They differ where it matters most: `rocksmq.path` and `pulsar.address` are
empty in code ("due to implicit rule of MQ priority") and set in the stock file.

Milvus reads every setting as a string and compares key names after normalising them
(lower-case, `/ _ .` dropped), so the schema is indexed by that normal form too.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mqctl.backends import BACKENDS, CLUSTER, NAMES, STANDALONE, V2_3, V2_6, Version, go_parse_int
from mqctl.errors import InputError

MODES = (STANDALONE, CLUSTER)
FULL, OVERLAY = "full", "overlay"  # the file's role: Milvus's whole milvus.yaml, or layered on the stock one
ROLES = (FULL, OVERLAY)
INT32_MAX = 2**31 - 1
NATS_UNTIL = BACKENDS["natsmq"].until or V2_6  # the natsmq keys go with natsmq
WOODPECKER_SINCE = BACKENDS["woodpecker"].since or V2_6
MIN_SAFE_PAYLOAD = 5 * 1024 * 1024  # Milvus messages can reach 5 MB (pulsar.maxMessageSize default)


def normalize_key(key: str) -> str:
    """The form Milvus compares config keys in: lower-case, without `/`, `_` and `.`."""
    return re.sub(r"[/_.]", "", key.lower())


def parse_version(text: str | None) -> Version | None:
    """'v2.5.4', '2.3', 'milvusdb/milvus:v2.6.0-gpu' -> (2, 5, 4); None when no version is in it."""
    if not text:
        return None
    tag = str(text).rsplit(":", 1)[-1] if "/" in str(text) or ":" in str(text) else str(text)
    match = re.match(r"^v?(\d+)\.(\d+)(?:\.(\d+))?", tag.strip())
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def format_version(version: Version | None) -> str | None:
    return None if version is None else ".".join(str(part) for part in version)


@dataclass(frozen=True)
class KeySpec:
    key: str
    type: str  # int, bool, bytes, path, str, float, list, minutes, enum
    default: str = ""
    choices: tuple[str, ...] = ()
    since: Version = (2, 0, 0)
    until: Version | None = None  # first version without the key
    later_defaults: tuple[tuple[Version, str], ...] = field(default=())
    doc: str = ""
    stock: str | None = None  # the stock milvus.yaml's value, where it differs from the code default

    def default_for(self, version: Version | None) -> str:
        """The code default (paramtable) of that version."""
        value = self.default
        for since, later in self.later_defaults:
            if version is not None and version >= since:
                value = later
        return value

    def default_in(self, role: str, version: Version | None) -> str:
        """What Milvus takes for the key when the file leaves it out, by the file's role."""
        if role == OVERLAY and self.stock is not None:
            return self.stock
        return self.default_for(version)

    @property
    def example(self) -> str:
        return self.stock or self.default


def _spec(key: str, type_: str, default: str = "", **kw: Any) -> KeySpec:
    return KeySpec(key, type_, default, **kw)


KEYS: tuple[KeySpec, ...] = (
    _spec(
        "mq.type",
        "enum",
        "default",
        choices=("default", *NAMES),
        since=V2_3,  # 2.0-2.2 choose by mode and by which address is set
        doc="which MQ Milvus starts; not refreshable",
    ),
    _spec("mq.enablePursuitMode", "bool", "true"),
    _spec("mq.pursuitLag", "int", "10"),
    _spec("mq.pursuitBufferSize", "bytes", "8388608"),
    _spec("mq.pursuitBufferTime", "int", "60"),
    _spec("mq.mqBufSize", "int", "16"),
    _spec("mq.ignoreBadPosition", "bool", "false"),
    _spec("mq.dispatcher.mergeCheckInterval", "float", "1"),
    _spec("mq.dispatcher.targetBufSize", "int", "16"),
    _spec("mq.dispatcher.maxTolerantLag", "int", "3"),
    _spec("mq.dispatcher.maxDispatcherNumPerPchannel", "int", "5"),
    _spec("mq.dispatcher.retrySleep", "int", "3"),
    _spec("mq.dispatcher.retryTimeout", "int", "60"),
    _spec("rocksmq.path", "path", "", stock="/var/lib/milvus/rdb_data"),  # empty in code since 2.3 (seen on 2.3.5)
    _spec("rocksmq.lrucacheratio", "float", "0.06"),
    _spec("rocksmq.rocksmqPageSize", "bytes", "67108864"),
    _spec("rocksmq.retentionTimeInMinutes", "minutes", "4320"),
    _spec("rocksmq.retentionSizeInMB", "int", "8192"),
    _spec("rocksmq.compactionInterval", "int", "86400"),
    _spec("rocksmq.compressionTypes", "list", "0,0,7,7,7"),
    _spec("natsmq.server.port", "int", "4222", until=NATS_UNTIL),
    _spec("natsmq.server.storeDir", "path", "/var/lib/milvus/nats", until=NATS_UNTIL),
    _spec("natsmq.server.maxFileStore", "bytes", "17179869184", until=NATS_UNTIL),
    _spec("natsmq.server.maxPayload", "bytes", "8388608", until=NATS_UNTIL),
    _spec("natsmq.server.maxPending", "bytes", "67108864", until=NATS_UNTIL),
    _spec("natsmq.server.initializeTimeout", "int", "4000", until=NATS_UNTIL),
    _spec("natsmq.server.monitor.trace", "bool", "false", until=NATS_UNTIL),
    _spec("natsmq.server.monitor.debug", "bool", "false", until=NATS_UNTIL),
    _spec("natsmq.server.monitor.logTime", "bool", "true", until=NATS_UNTIL),
    _spec("natsmq.server.monitor.logFile", "path", "/tmp/milvus/logs/nats.log", until=NATS_UNTIL),
    _spec("natsmq.server.monitor.logSizeLimit", "bytes", "536870912", until=NATS_UNTIL),
    _spec("natsmq.server.retention.maxAge", "minutes", "4320", until=NATS_UNTIL),
    _spec("natsmq.server.retention.maxBytes", "bytes", "", until=NATS_UNTIL),
    _spec("natsmq.server.retention.maxMsgs", "int", "", until=NATS_UNTIL),
    _spec("pulsar.address", "str", "", stock="localhost"),  # empty in code (seen on 2.3.5)
    _spec("pulsar.port", "int", "6650"),
    _spec("pulsar.webport", "int", "80"),
    _spec("pulsar.maxMessageSize", "bytes", "5242880"),
    _spec("pulsar.tenant", "str", "public"),
    _spec("pulsar.namespace", "str", "default"),
    _spec("pulsar.requestTimeout", "int", "60"),
    _spec("pulsar.enableClientMetrics", "bool", "false"),
    _spec("pulsar.authPlugin", "str", ""),
    _spec("pulsar.authParams", "str", ""),
    _spec("kafka.brokerList", "str", "", later_defaults=(((2, 5, 0), "localhost:9092"),)),
    _spec("kafka.saslUsername", "str", ""),
    _spec("kafka.saslPassword", "str", ""),
    _spec("kafka.saslMechanisms", "str", ""),
    _spec("kafka.securityProtocol", "str", ""),
    _spec("kafka.readTimeout", "int", "10"),
    _spec("woodpecker.meta.type", "str", "etcd", since=WOODPECKER_SINCE),
    _spec("woodpecker.meta.prefix", "str", "woodpecker", since=WOODPECKER_SINCE),
    _spec("woodpecker.storage.type", "str", "minio", since=WOODPECKER_SINCE),
    _spec("woodpecker.storage.rootPath", "str", "default", since=WOODPECKER_SINCE),
    _spec("etcd.rootPath", "str", "by-dev"),
    _spec("msgChannel.chanNamePrefix.cluster", "str", "by-dev"),
    _spec("rootCoord.dmlChannelNum", "int", "16"),
    _spec("quotaAndLimits.enabled", "bool", "false"),
    _spec("quotaAndLimits.limitWriting.forceDeny", "bool", "false"),
)

BY_NORMAL: dict[str, KeySpec] = {normalize_key(spec.key): spec for spec in KEYS}

# Sections whose every key mqctl knows: anything else under them is probably a typo. They are also the Milvus
# sections the Helm chart has no values for, so a chart writes them in extraConfigFiles.user.yaml.
CHECKED_SECTIONS = ("mq", "natsmq", "rocksmq")


INT64_MAX = (1 << 63) - 1
# Keys Go multiplies into an int64 before use: key -> (factor, unit as written, what overflows)
SIXTY_FOUR_BIT_KEYS = {
    "natsmq.server.retention.maxAge": (60 * 1_000_000_000, "minutes", "JetStream keeps max_age in nanoseconds"),
    "natsmq.server.retention.maxBytes": (1, "bytes", "a JetStream limit is an int64"),
    "natsmq.server.retention.maxMsgs": (1, "messages", "a JetStream limit is an int64"),
    "rocksmq.retentionTimeInMinutes": (60, "minutes", "Milvus compares it in seconds"),
    "rocksmq.retentionSizeInMB": (1024 * 1024, "MB", "Milvus compares it in bytes"),
}


def too_large(key: str, value: int) -> str | None:
    """Why `value` of `key` overflows the signed 64 bits Go computes it in (None when it fits): one rule for
    `config validate`, `config set` and `retention show/apply` (a JetStream limit would be refused with error
    10025 or wrap to a negative age; RocksMQ's retention check would wrap around)."""
    limit = SIXTY_FOUR_BIT_KEYS.get(key)
    if limit is None or value * limit[0] <= INT64_MAX:
        return None
    factor, unit, why = limit
    return f"{key} {value} is too large: at most {INT64_MAX // factor} {unit} ({why}, 64 bits)"


def spec_for(key: str) -> KeySpec | None:
    return BY_NORMAL.get(normalize_key(key))


def nearest(word: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate, for did-you-mean hints."""
    lowered = {c.lower(): c for c in candidates}
    match = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[match[0]] if match else None


def section_keys(key: str) -> list[str]:
    """The known keys in the top-level section of `key` (the candidates of a did-you-mean)."""
    section = key.split(".")[0]
    return [spec.key for spec in KEYS if spec.key.split(".")[0] == section]


def known_children(section_key: str) -> list[str]:
    """Names of the known keys directly under a dotted section, e.g. 'natsmq.server' -> ['port', ...]."""
    prefix = section_key.lower() + "."
    names = []
    for spec in KEYS:
        if spec.key.lower().startswith(prefix):
            child = spec.key[len(prefix) :].split(".")[0]
            if child not in names:
                names.append(child)
    return names


_UNITS = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kb": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mb": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gb": 1024**3,
    "gib": 1024**3,
}


# the same ranges `validate` checks (MQ111), so an edit never writes a port Milvus cannot listen on
PORT_KEYS = {
    "natsmq.server.port": "1-65535, or -1 for a random port",
    "pulsar.port": "1-65535",
    "pulsar.webport": "1-65535",
}


def _is_port(key: str, number: int) -> bool:
    return 1 <= number <= 65535 or (number == -1 and key == "natsmq.server.port")


def coerce_value(key: str, raw: str) -> str:
    """Check a value typed by a user against the key's schema type; return its YAML text.

    Raises InputError (exit 2) naming the key, the expected type and an example.
    """
    spec = spec_for(key)
    if spec is None:
        return raw
    value = raw.strip()
    if spec.type in ("int", "minutes"):
        if go_parse_int(value) is None:
            raise InputError(
                f"{spec.key} must be an integer, got {raw!r}",
                hint=f"e.g. {spec.example or '0'}" + (" (minutes)" if spec.type == "minutes" else ""),
            )
        if spec.key in PORT_KEYS and not _is_port(spec.key, int(value)):
            raise InputError(f"{spec.key} must be a port, got {raw!r}", hint=PORT_KEYS[spec.key])
        return str(int(value))
    if spec.type == "bytes":
        match = re.fullmatch(r"(\d+)\s*([a-zA-Z]*)", value)
        if not match or match.group(2).lower() not in _UNITS:
            raise InputError(
                f"{spec.key} must be a size in bytes, got {raw!r}",
                hint="give an integer number of bytes, or a size such as 8MB or 16GiB",
            )
        return str(int(match.group(1)) * _UNITS[match.group(2).lower()])
    if spec.type == "bool":
        if value.lower() not in ("true", "false"):
            raise InputError(f"{spec.key} must be true or false, got {raw!r}")
        return value.lower()
    if spec.type == "float":
        try:
            float(value)
        except ValueError:
            raise InputError(f"{spec.key} must be a number, got {raw!r}", hint=f"e.g. {spec.example}") from None
        return value
    if spec.type == "path":
        if not value:
            raise InputError(f"{spec.key} must be a non-empty path", hint=f"e.g. {spec.example}")
        return value
    if spec.type == "enum":
        if value not in spec.choices:
            guess = nearest(value, spec.choices)
            raise InputError(
                f"{spec.key} must be one of {', '.join(spec.choices)}, got {raw!r}",
                hint=f"did you mean {guess!r}?" if guess else None,
            )
        return value
    return raw
