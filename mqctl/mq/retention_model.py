"""What each source's retention_report() fills (mqctl.mq.retention judges and groups it): the configured retention
settings and, per channel, what is configured against what is kept. Apart from mqctl.mq.model, whose shapes every
listing loads, so that a listing does not create them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mqctl.findings import Finding

if TYPE_CHECKING:
    from mqctl.config.resolve.resolution import Resolution

NATS_KEYS = {
    "max_age": "natsmq.server.retention.maxAge",
    "max_bytes": "natsmq.server.retention.maxBytes",
    "max_msgs": "natsmq.server.retention.maxMsgs",
}


@dataclass
class ConfiguredValue:
    """One retention setting: as written, as Milvus parses it, and where it comes from."""

    key: str
    raw: str | None  # as written (None: not set)
    # as Milvus parses it: unparsable or empty -> 0 (paramtable's ParamItem.GetAsInt, pkg/util/paramtable/param_item.go)
    value: int
    where: str  # file:line, env/etcd, or "Milvus default"
    file: str | None = None
    line: int | None = None


class ConfiguredRetention:
    """The retention settings a deployment asks for, from its resolved config or Milvus's defaults."""

    def __init__(self, resolution: Resolution | None = None) -> None:
        self.resolution = resolution

    def get(self, key: str) -> ConfiguredValue:
        from mqctl.backends import go_parse_int
        from mqctl.config.known_keys import spec_for

        if self.resolution is None:
            spec = spec_for(key)
            raw = (spec.default_for(None) if spec is not None else None) or None
            return ConfiguredValue(key, raw, go_parse_int(raw) or 0, "Milvus default (no --config)")
        origin = self.resolution.origin(key)
        raw = origin.value if origin.value not in ("", None) else None
        return ConfiguredValue(key, raw, go_parse_int(raw) or 0, self.resolution.where(key), origin.file, origin.line)

    def nats_limits(self) -> dict[str, ConfiguredValue]:
        return {limit: self.get(key) for limit, key in NATS_KEYS.items()}


@dataclass
class ChannelRetention:
    name: str
    configured: dict[str, Any]
    actual: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)
    _causes: list[str] = field(default_factory=list)  # per finding: its message without this channel's own numbers

    def add(self, finding: Finding, cause: str) -> None:
        self.findings.append(finding)
        self._causes.append(cause)


@dataclass
class FindingGroup:
    """One cause shared by several channels (one table row for 17 streams); every channel is named."""

    code: str
    severity: str
    message: str  # the cause, without a channel name
    key: str | None
    file: str | None
    line: int | None
    hint: str | None
    channels: list[str]

    @classmethod
    def of(cls, finding: Finding, channels: list[str], cause: str | None = None) -> FindingGroup:
        """The group of `finding` for `channels`; `cause`: its message without a channel's own numbers."""
        return cls(
            finding.code,
            finding.severity,
            finding.message if cause is None else cause,
            finding.key,
            finding.file,
            finding.line,
            finding.hint,
            channels,
        )


@dataclass
class RetentionReport:
    source: str
    mq: str
    channels: list[ChannelRetention]
    findings: list[Finding]  # one per channel and cause
    warnings: list[str] = field(default_factory=list)  # data and metadata disagree: the numbers are not the MQ's
    finding_groups: list[FindingGroup] = field(default_factory=list)  # the findings, one per cause
