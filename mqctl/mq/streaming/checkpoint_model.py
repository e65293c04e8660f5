"""The shapes of the 2.6 checkpoint report (a row per pchannel and per vchannel, the report) and its rule codes and
statuses, shared by the judgement (checkpoints.py) and what Woodpecker's meta and files add to it
(woodpecker_checks.py)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from mqctl.findings import ERROR, WARNING, Finding

RULE_WAL_MISMATCH = "CP110"
RULE_ALTER_WAL_MIDWAY = "CP111"
RULE_LOOPBACK_QUORUM = "CP112"
RULE_TRUNCATION_BEHIND = "CP113"
RULE_DROPPED = "CP114"
RULE_UNDECODABLE = "CP115"
RULE_WAL_EXPIRED = "CP116"
RULE_WAL_CORRUPT = "CP117"
RULE_WAL_SHORTFALL = "CP118"
RULE_SEALED_SHORT = "CP119"
RULE_STALE_DROPPED = "CP120"
RULE_NOTHING = "CP103"
DEFAULT_TRUNCATION_LAG = dt.timedelta(hours=24)
OK, DROPPED, MISMATCH, ALTERING, LAGGING, UNKNOWN = "ok", "dropped", "wal-mismatch", "altering", "lagging", "unknown"
EXPIRED = "expired"
STALE = "stale"  # CP120: left behind the WAL's truncation point by a dropped collection
AT_RISK = "at-risk"  # entries after the WAL checkpoint are not in the files (CP118)


@dataclass
class PChannelRow:
    pchannel: str
    node: str | None
    term: int | None
    state: str | None  # streaming coordinator's PChannelMeta state
    wal: str | None  # WAL of the checkpoint position
    checkpoint: str | None  # position as Milvus tools print it
    checkpoint_time: dt.datetime | None
    alter_stage: str | None  # none | flushing | advance-checkpoint
    alter_target: str | None
    log_id: int | None = None  # Woodpecker
    segments: int | None = None
    truncated_to: str | None = None  # segment/entry, "none" when nothing was truncated
    last_entry: str | None = None
    untruncated_before_checkpoint: int | None = None
    untruncated_bytes: int | None = None
    oldest_untruncated_closed: dt.datetime | None = None
    loopback_segments: int | None = None
    first_retained: str | None = None  # with the WAL files: first stored entry, segment/entry
    last_retained: str | None = None
    status: str = OK
    reasons: list[str] = field(default_factory=list)


@dataclass
class VChannelRow:
    vchannel: str
    pchannel: str
    collection: str | None
    collection_id: int | None
    state: str | None  # VChannelMeta state: normal | dropped
    wal: str | None  # WAL_name of datacoord's channel checkpoint
    position: str | None
    checkpoint_time: dt.datetime | None
    meta_time: dt.datetime | None  # VChannelMeta checkpoint time tick
    first_retained: str | None = None  # with the WAL files: first stored entry of its pchannel
    status: str = OK
    reason: str = ""


@dataclass
class StreamingCheckpointReport:
    etcd: str
    meta_root: str
    verification: str
    pinned_mq: str | None
    pinned_key: str
    woodpecker_prefix: str | None
    woodpecker_storage: str | None
    pchannels: list[PChannelRow]
    vchannels: list[VChannelRow]
    findings: list[Finding] = field(default_factory=list)

    @property
    def failing(self) -> bool:
        return any(f.severity in (ERROR, WARNING) for f in self.findings)


def pchannel_of(vchannel: str) -> str:
    return vchannel.rsplit("_", 1)[0] if "_" in vchannel else vchannel
