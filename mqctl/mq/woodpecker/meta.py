"""Woodpecker's log and segment metadata in etcd, read-only (format from Woodpecker v0.1.x source; not yet
verified on a running 2.6).

Keys (zilliztech/woodpecker meta/constant.go): `<prefix>/logs/<logName>` holds a `LogMeta`,
`<prefix>/logs/<logName>/segments/<segNo>` a `SegmentMetadata`, `<prefix>/logs/<logName>/lock` the writer lock.
Milvus names each log after its pchannel (milvus pkg/streaming/walimpls/impls/wp/opener.go: `CreateLog` /
`OpenLog(opt.Channel.Name)`).

Two prefixes: up to v0.1.29 the prefix is the literal `woodpecker` at the top of etcd (meta/constant.go
`ServicePrefix`, v0.1.25). From v0.1.30 it is `path.Join(etcd.rootPath, woodpecker.meta.prefix)` unless any
legacy key exists, in which case the legacy `woodpecker` prefix stays in use (meta/metadata_etcd.go
`buildConfiguredMetadataPrefix`, `detectEffectiveMetadataPrefix`, `hasLegacyMetadata`). Both are read here.

Field numbers (proto/meta.proto, v0.1.25; `QuorumInfo.replicas` 6 from the default branch at 2823159):
LogMeta logId 1, creation_timestamp 6 (fixed64, unix s), modification_timestamp 7, truncated_segment_id 8
(-1 when nothing was truncated, metadata_etcd.go CreateLog), truncated_entry_id 9; SegmentMetadata segNo 1,
createTime 2 (unix ms), state 4 (Active 0, Completed 2, Sealed 3, Truncated 4), completionTime 5 (ms),
lastEntryId 6, size 7, sealedTime 8 (ms), quorum 9; QuorumInfo id 1, es 2, wq 3, aq 4, nodes 5.

The embedded client records a fixed placeholder quorum `{id -1, nodes ["127.0.0.1:59456"]}` in every segment
(woodpecker/woodpecker_embed_client.go, quoted in milvus #53582): normal for embedded Woodpecker (storage
minio or local), a hazard when the deployment runs Woodpecker in service mode (milvus #53582,
zilliztech/woodpecker #216).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mqctl.config.resolve.sources import EtcdConfig

from mqctl.mq.declared_protos import declare, parse

LEGACY_PREFIX = "woodpecker"
DEFAULT_META_PREFIX = "woodpecker"  # woodpecker.meta.prefix
SEGMENT_STATES = {0: "active", 2: "completed", 3: "sealed", 4: "truncated"}
EMBEDDED_QUORUM_ID = -1

declared = declare(
    "mqctl.woodpecker",
    {
        "LogMeta": {
            "logId": (1, "int64", False),
            "creation_timestamp": (6, "fixed64", False),
            "modification_timestamp": (7, "fixed64", False),
            "truncated_segment_id": (8, "int64", False),
            "truncated_entry_id": (9, "int64", False),
        },
        "QuorumNode": {"endpoint": (1, "string", False)},
        "QuorumInfo": {
            "id": (1, "int64", False),
            "es": (2, "int32", False),
            "wq": (3, "int32", False),
            "aq": (4, "int32", False),
            "nodes": (5, "string", True),
            "replicas": (6, "msg:QuorumNode", True),
        },
        "SegmentMetadata": {
            "segNo": (1, "int64", False),
            "createTime": (2, "int64", False),
            "state": (4, "int32", False),
            "completionTime": (5, "int64", False),
            "lastEntryId": (6, "int64", False),
            "size": (7, "int64", False),
            "sealedTime": (8, "int64", False),
            "quorum": (9, "msg:QuorumInfo", False),
        },
    },
)


def is_loopback(address: str) -> bool:
    """`127.0.0.1:59456`, `localhost:...`, `[::1]:...`: an address only its own host can reach."""
    host = address.strip()
    if host.startswith("["):
        host = host[1:].split("]", 1)[0]
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _ms(value: int) -> dt.datetime | None:
    if value <= 0:
        return None
    try:
        return dt.datetime.fromtimestamp(value / 1000, dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


@dataclass
class Segment:
    log: str
    id: int
    state: str
    created: dt.datetime | None
    completed: dt.datetime | None
    sealed: dt.datetime | None
    last_entry: int
    size: int
    quorum_id: int | None
    quorum_nodes: list[str]

    @property
    def embedded_quorum(self) -> bool:
        """The embedded client's placeholder quorum (id -1, loopback nodes)."""
        return self.quorum_id == EMBEDDED_QUORUM_ID or any(is_loopback(n) for n in self.quorum_nodes)

    @property
    def closed_at(self) -> dt.datetime | None:
        return self.sealed or self.completed


@dataclass
class Log:
    name: str  # the pchannel
    id: int
    key: str
    created: dt.datetime | None
    truncated_segment: int  # -1: nothing truncated
    truncated_entry: int
    segments: list[Segment] = field(default_factory=list)

    @property
    def last_entry(self) -> tuple[int, int] | None:
        """(segment, entry) of the last entry a segment's metadata records."""
        closed = [s for s in self.segments if s.last_entry >= 0]
        if not closed:
            return None
        last = max(closed, key=lambda s: s.id)
        return last.id, last.last_entry


@dataclass
class WoodpeckerMeta:
    prefix: str | None  # the prefix the logs were found under
    prefixes_with_logs: list[str]
    logs: dict[str, Log]
    undecodable: list[str] = field(default_factory=list)


def candidate_prefixes(etcd_root: str, meta_prefix: str | None = None) -> list[str]:
    """Where Woodpecker may keep its meta: the legacy top-level prefix, then `<rootPath>/<meta prefix>`."""
    configured = "/".join(p.strip("/") for p in (etcd_root, meta_prefix or DEFAULT_META_PREFIX) if p.strip("/"))
    return list(dict.fromkeys([LEGACY_PREFIX, configured]))


def read_woodpecker_meta(etcd: EtcdConfig, meta_prefix: str | None = None) -> WoodpeckerMeta:
    """Every log with its segments, under whichever prefix holds them (the legacy one wins, as in Woodpecker)."""
    found: dict[str, dict[str, Log]] = {}
    undecodable: list[str] = []
    for prefix in candidate_prefixes(etcd.root, meta_prefix):
        logs_prefix = f"{prefix}/logs/"
        logs: dict[str, Log] = {}
        segments: list[tuple[str, str, bytes]] = []
        for key, value in etcd.get_prefix(logs_prefix):
            rest = key[len(logs_prefix) :]
            parts = rest.split("/")
            if len(parts) == 1:
                meta = parse(declared("LogMeta"), value)
                if meta is None:
                    undecodable.append(key)
                    continue
                logs[rest] = Log(
                    rest,
                    meta.logId,
                    key,
                    dt.datetime.fromtimestamp(meta.creation_timestamp, dt.timezone.utc)
                    if 0 < meta.creation_timestamp < 2**40
                    else None,
                    meta.truncated_segment_id,
                    meta.truncated_entry_id,
                )
            elif len(parts) == 3 and parts[1] == "segments":
                segments.append((parts[0], key, value))
        for name, key, value in segments:
            segment = parse(declared("SegmentMetadata"), value)
            if segment is None or name not in logs:
                undecodable.append(key)
                continue
            quorum = segment.quorum if segment.HasField("quorum") else None
            nodes = list(quorum.nodes) + [r.endpoint for r in quorum.replicas if r.endpoint] if quorum else []
            logs[name].segments.append(
                Segment(
                    name,
                    segment.segNo,
                    SEGMENT_STATES.get(segment.state, f"state#{segment.state}"),
                    _ms(segment.createTime),
                    _ms(segment.completionTime),
                    _ms(segment.sealedTime),
                    segment.lastEntryId,
                    segment.size,
                    quorum.id if quorum else None,
                    list(dict.fromkeys(nodes)),
                )
            )
        for log in logs.values():
            log.segments.sort(key=lambda s: s.id)
        if logs:
            found[prefix] = logs
    prefixes = list(found)
    chosen = LEGACY_PREFIX if LEGACY_PREFIX in found else (prefixes[0] if prefixes else None)
    return WoodpeckerMeta(chosen, prefixes, found.get(chosen, {}) if chosen else {}, undecodable)
