"""The doctor's small model: one check result per thing examined, its stable code, and the one verdict.

Every check that ran is a `Check`, the passed ones too (severity ok), so a script sees what was covered.
Findings of the domain (config rules MQ1xx, retention RET1xx, checkpoints CP1xx) keep their own codes;
the doctor's own checks are DR codes, listed in CODES and in docs/doctor.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mqctl.errors import EXIT_FINDINGS, EXIT_OK
from mqctl.findings import ERROR, INFO, WARNING, Finding

if TYPE_CHECKING:
    from mqctl.milvus.client import QuotaStates
    from mqctl.mq.checkpoints import CheckpointReport
    from mqctl.mq.retention_model import RetentionReport
    from mqctl.mq.streaming.checkpoint_model import StreamingCheckpointReport

OK = "ok"
SEVERITY_RANK = {ERROR: 0, WARNING: 1, INFO: 2, OK: 3}
AREAS = ("config", "writes", "mq", "checkpoints", "upgrade", "health")


@dataclass
class Check:
    """One thing examined: what was found, what Milvus will do about it and what it costs, and the fix."""

    area: str
    code: str
    severity: str  # ok | info | warning | error
    message: str
    fix: str | None = None
    impact: str | None = None  # what Milvus will do, and what it costs (rows, bytes, minutes), where known
    details: list[str] = field(default_factory=list)  # --wide

    @classmethod
    def of(cls, area: str, finding: Finding, impact: str | None = None) -> Check:
        """A domain finding (config rule, retention, checkpoint) as a check of `area`, its code kept."""
        where = f" ({finding.file}:{finding.line})" if finding.file and finding.line else ""
        return cls(area, finding.code, finding.severity, finding.message + where, finding.hint or None, impact)


@dataclass(frozen=True)
class Code:
    code: str
    area: str
    title: str
    reads: str  # what the check reads
    source: str  # the Milvus source or issue behind it


CODES: tuple[Code, ...] = (
    Code(
        "DR100", "config", "the MQ Milvus starts at its next restart", "yaml + process env + etcd", "mustSelectMQType"
    ),
    Code(
        "DR101",
        "config",
        "a config Milvus would not start with",
        "yaml + process env + etcd",
        "internal/util/dependency (panics `mq type X is invalid`, `no available mq config found`)",
    ),
    Code(
        "DR110",
        "config",
        "the running MQ differs from the one the next restart starts",
        "the Milvus log's `mqType=` line (else its open files, its NATS port), the config now",
        "milvus #50217; unflushed rows stay in the old MQ",
    ),
    Code(
        "DR111",
        "config",
        "the MQ holding the data is not the configured one",
        "--rocksmq/--nats/--nats-store against the config (no process running)",
        "a switch without FlushAll leaves what was not flushed behind",
    ),
    Code(
        "DR112",
        "config",
        "etcd config keys an embedded-etcd Milvus does not read",
        "<root>/config/ in the embedded etcd",
        "seen on 2.3.5: only FileSource refreshes with an embedded etcd",
    ),
    Code(
        "DR200",
        "writes",
        "quotaAndLimits.limitWriting.forceDeny is true",
        "yaml + env + etcd",
        "quota center: inserts refused with ForceDeny (code 9/48)",
    ),
    Code(
        "DR210",
        "writes",
        "a migration journal that did not finish",
        ".mqctl-migrate.json next to the config",
        "mqctl migrate journal",
    ),
    Code("DR300", "mq", "the MQ data could not be read", "rocksmq.path / the natsmq server or store / kafka.*", "-"),
    Code(
        "DR301",
        "mq",
        "retention as configured vs the MQ's data",
        "retention report (RET100 drift, RET101 unacked pages; Kafka RET110 compacted topic, RET111 size retention)",
        "nmq_client.go AddStream (10058); milvus #24106",
    ),
    Code(
        "DR302",
        "mq",
        "data and metadata of the MQ disagree",
        "the RocksMQ meta or the JetStream store",
        "a deleted WAL, a corrupt block, a stream the server did not load",
    ),
    Code(
        "DR310",
        "mq",
        "free disk of the MQ volume against its size limit",
        "statvfs of the MQ folder, rocksmq.retentionSizeInMB / natsmq.server.maxFileStore",
        "milvus #16606, #19574 (full disks)",
    ),
    Code(
        "DR311",
        "mq",
        "a natsmq store used by another process",
        "/proc: processes with the store open or named",
        "two servers on one JetStream store corrupt it",
    ),
    Code(
        "DR400",
        "checkpoints",
        "every vchannel's checkpoint against what the MQ still holds",
        "datacoord channel-cp in etcd + the MQ (CP100 expired, CP101 at risk, CP102 unknown, CP104 retention)",
        "reproduced on 2.3.5: natsmq retention past a checkpoint loses rows silently",
    ),
    Code("DR401", "checkpoints", "channel checkpoints not checked", "etcd", "-"),
    Code(
        "DR402",
        "checkpoints",
        "a 2.6 deployment's WAL state: checkpoints on the pinned WAL, Woodpecker's quorum and truncation (its findings "
        "keep their codes: CP110 WAL name mismatch, CP112 loopback quorum, CP113 truncation behind, CP114 dropped "
        "vchannel, CP115 undecodable, CP120 a dropped collection's state behind the truncation point; with the "
        "Woodpecker files CP116 expired, CP117 damaged segment, CP118 entries lost after the WAL checkpoint, CP119 a "
        "sealed segment without footer or short of LastEntryId)",
        "streamingnode-meta/wal/*/consume-checkpoint, datacoord-meta/channel-cp/*, Woodpecker's logs/ meta in etcd",
        "milvus #52013, #53582, #44434, #51032, #52341, #47802; zilliztech/woodpecker #216, #242; birdwatcher #522, "
        "PR #527",
    ),
    Code(
        "DR500",
        "upgrade",
        "natsmq is gone in Milvus 2.6 (info on 2.3/2.4, warning on 2.5, error on 2.6)",
        "the MQ in use and configured, the version, a 2.6 state in etcd",
        "milvus #41564, PR #41565",
    ),
    Code(
        "DR501",
        "upgrade",
        "2.6 pins mq.type at first boot",
        "the MQ the next restart starts",
        "PR #51543 (ProcessImmutableConfigs); AlterWAL PR #45286",
    ),
    Code(
        "DR502",
        "upgrade",
        "a Milvus 2.6 deployment's streaming state in etcd: the pinned mq.type, an online WAL switch under way",
        "<root>/config/mqtype, <root>/meta/streamingcoord-meta/pchannel/, streamingnode-meta/wal/*/consume-checkpoint",
        "PR #45286 (ProcessImmutableConfigs, AlterWAL), milvus #50217, #49584",
    ),
    Code("DR600", "health", "/healthz of the running Milvus", ":9091/healthz (METRICS_PORT)", "-"),
    Code("DR601", "health", "the Milvus version", "the log banner, the sandbox package", "-"),
    Code("DR602", "health", "collections not loaded", "gRPC: ListCollections, GetLoadState, GetVersion", "-"),
    Code(
        "DR603",
        "health",
        "the quota center's state: writes or reads refused (or slowed) right now",
        "gRPC CheckHealth: quota_states and reasons of the proxy's rate limiter",
        "internal/proxy/impl.go CheckHealth, multi_rate_limiter.go GetQuotaStates, quota_center.go forceDeny",
    ),
)
CODE_BY_NAME = {code.code: code for code in CODES}


@dataclass
class DiskUsage:
    """The MQ's folder on its volume (DR310): what it holds, what the volume has free, the configured cap."""

    folder: str
    used_bytes: int
    free_bytes: int
    limit_bytes: int  # rocksmq.retentionSizeInMB / natsmq.server.maxFileStore in bytes (0: none)
    limit_key: str


@dataclass
class SourceRead:
    """Whether one source of the examination answered (the exporter's `mqctl_source_up`)."""

    source: str  # config | etcd | mq | milvus | woodpecker
    up: bool
    detail: str = ""


@dataclass
class Measured:
    """The domain reports the checks judged, kept whole so the numbers behind each check (messages, lags,
    bytes) can be exported as metrics without reading anything a second time. Not part of the doctor's JSON."""

    mq: str | None = None  # the MQ whose data was read (rocksmq | natsmq)
    retention: RetentionReport | None = None
    checkpoints: CheckpointReport | None = None
    streaming: StreamingCheckpointReport | None = None
    disk: DiskUsage | None = None
    force_deny: bool | None = None  # forceDeny in the config and quotas enabled (None: no config read)
    quota: QuotaStates | None = None  # what the proxy enforces now (None: not asked)
    etcd_config: dict[str, str] | None = None  # raw etcd key -> value under <root>/config/ (secrets unmasked)
    sources: list[SourceRead] = field(default_factory=list)

    def read(self, source: str, up: bool, detail: str = "") -> None:
        """Record one source's outcome; a source read twice is up only when every read succeeded."""
        for known in self.sources:
            if known.source == source:
                known.up = known.up and up
                known.detail = known.detail or detail
                return
        self.sources.append(SourceRead(source, up, detail))


@dataclass
class Report:
    """What `mqctl doctor` prints: the verdict, the Milvus examined, every check."""

    verdict: str  # ok | warning | error
    target: Any
    checks: list[Check]
    summary: dict[str, int]
    seconds: float | None = None
    measured: Measured = field(default_factory=Measured, metadata={"json": False})


def verdict_of(checks: list[Check]) -> str:
    """error when any check is an error, warning when any is a warning, else ok."""
    worst = min((SEVERITY_RANK[c.severity] for c in checks), default=SEVERITY_RANK[OK])
    return {0: ERROR, 1: WARNING}.get(worst, OK)


def ordered(checks: list[Check]) -> list[Check]:
    """Worst first, then by area in AREAS order, then by code."""
    return sorted(checks, key=lambda c: (SEVERITY_RANK[c.severity], AREAS.index(c.area), c.code))


def report(target: Any, checks: list[Check], seconds: float | None = None, measured: Measured | None = None) -> Report:
    checks = ordered(checks)
    summary = {level: sum(c.severity == level for c in checks) for level in (ERROR, WARNING, INFO, OK)}
    return Report(verdict_of(checks), target, checks, summary, seconds, measured or Measured())


def exit_code(result: Report, *, strict: bool = False) -> int:
    """1 on any error (with `strict`, any warning too), else 0."""
    failing = {ERROR, WARNING} if strict else {ERROR}
    return EXIT_FINDINGS if result.verdict in failing else EXIT_OK
