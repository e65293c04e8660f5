"""The MQ backends Milvus knows: one record each, used by config rules, edits, migrate and channels.

Each record says which Milvus versions have the backend, whether it runs inside Milvus standalone
(embedded, data on local disk), which key enables it under `mq.type: default`, where it keeps its
data, which key holds its port, and what `config switch` writes for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Version = tuple[int, int, int]

STANDALONE, CLUSTER = "standalone", "cluster"
V2_3: Version = (2, 3, 0)
V2_6: Version = (2, 6, 0)


@dataclass(frozen=True)
class Backend:
    name: str
    embedded: bool  # runs inside Milvus standalone (not in cluster mode), data under a local directory
    enabled_by: str  # a non-empty value enables it for `mq.type: default` (paramtable's IsEnabled)
    since: Version | None = None  # first Milvus version that has it (None: all)
    until: Version | None = None  # first Milvus version without it (None: still there)
    store_key: str | None = None  # the local directory of an embedded backend
    port_key: str | None = None
    default_port: int | None = None
    # what `config switch` writes when the target's settings are missing, with Milvus's defaults
    switch_settings: tuple[tuple[str, str], ...] = ()

    def available(self, version: Version | None) -> bool:
        """Whether Milvus `version` has this backend (an unknown version has every one)."""
        if version is None:
            return True
        return (self.since is None or version >= self.since) and (self.until is None or version < self.until)


BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in (
        Backend(
            "rocksmq",
            embedded=True,
            enabled_by="rocksmq.path",
            store_key="rocksmq.path",
            switch_settings=(
                ("rocksmq.path", "/var/lib/milvus/rdb_data"),
                ("rocksmq.retentionTimeInMinutes", "4320"),
                ("rocksmq.retentionSizeInMB", "8192"),
            ),
        ),
        Backend(
            "natsmq",
            embedded=True,
            enabled_by="natsmq.server.storeDir",
            since=V2_3,
            until=V2_6,  # removed in 2.6 (milvus #41564, PR #41565)
            store_key="natsmq.server.storeDir",
            port_key="natsmq.server.port",
            default_port=4222,
            switch_settings=(
                ("natsmq.server.port", "4222"),
                ("natsmq.server.storeDir", "/var/lib/milvus/nats"),
                ("natsmq.server.maxFileStore", "17179869184"),
                ("natsmq.server.maxPayload", "8388608"),
                ("natsmq.server.maxPending", "67108864"),
                ("natsmq.server.initializeTimeout", "4000"),
                ("natsmq.server.retention.maxAge", "4320"),
            ),
        ),
        Backend(
            "pulsar",
            embedded=False,
            enabled_by="pulsar.address",
            port_key="pulsar.port",
            default_port=6650,
            switch_settings=(("pulsar.address", "localhost"), ("pulsar.port", "6650")),
        ),
        Backend(
            "kafka",
            embedded=False,
            enabled_by="kafka.brokerList",
            switch_settings=(("kafka.brokerList", "localhost:9092"),),
        ),
        Backend(
            "woodpecker",
            embedded=False,
            enabled_by="woodpecker.meta.prefix",
            since=V2_6,
            switch_settings=(
                ("woodpecker.meta.type", "etcd"),
                ("woodpecker.meta.prefix", "woodpecker"),
                ("woodpecker.storage.type", "minio"),
            ),
        ),
    )
}
NAMES = tuple(BACKENDS)
EMBEDDED = tuple(name for name, b in BACKENDS.items() if b.embedded)


def is_embedded(name: str | None) -> bool:
    """True for the backends that live inside Milvus standalone (rocksmq, natsmq)."""
    backend = BACKENDS.get(name or "")
    return backend is not None and backend.embedded


def valid_mq_types(version: Version | None) -> tuple[str, ...]:
    """Values Milvus accepts for mq.type; with no version, those of 2.3-2.5 (woodpecker needs 2.6)."""
    known = version if version is not None else (2, 5, 0)
    return ("default", *(name for name, b in BACKENDS.items() if b.available(known)))


def default_order(mode: str, version: Version | None) -> tuple[str, ...]:
    """Backends `mq.type: default` tries, in order. natsmq never takes part (Milvus PR #26791)."""
    order: tuple[str, ...] = ("rocksmq", "pulsar", "kafka") if mode == STANDALONE else ("pulsar", "kafka")
    if version is not None and version >= V2_6:
        order += ("woodpecker",)
    return order


def go_parse_int(text: object) -> int | None:
    """What Milvus's strconv-based parsing gets: an int, or None when it fails (Milvus then uses 0)."""
    if text is None:
        return None
    stripped = str(text).strip()
    if re.fullmatch(r"[+-]?[0-9]+", stripped):  # Go's strconv takes ASCII digits only, not "６０"
        value = int(stripped)
        return value if -(1 << 63) <= value < (1 << 63) else None  # Atoi's range error: Milvus reads 0
    return None


def port_of(name: str, value: object) -> int | None:
    """The port `name` listens on for a configured `value`: its default when unset, None when unparsable."""
    backend = BACKENDS[name]
    if value is None or str(value).strip() == "":
        return backend.default_port
    return go_parse_int(value)
