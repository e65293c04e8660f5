"""What each step saw, one dataclass per kind of step (the `evidence` object of a journaled step).

Fields left None were not observed and are not written, so the journal holds exactly what a step saw.
Keys a newer mqctl wrote that this one does not know are kept as they are.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

Counts = dict[str, dict[str, Any]]  # `db/collection` -> {rows, was_loaded, method} (migrate.milvus.collection_counts)
CheckpointRows = list[dict[str, Any]]  # per vchannel (migrate.checkpoints.checkpoint_evidence)


@dataclass
class Evidence:
    _extra: dict[str, Any] = field(default_factory=dict, repr=False)  # keys this mqctl does not know

    def to_dict(self) -> dict[str, Any]:
        written = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name != "_extra" and getattr(self, f.name) is not None
        }
        return {**self._extra, **written}

    @classmethod
    def from_dict(cls: type[E], data: dict[str, Any]) -> E:
        """The evidence a journal holds, or ValueError naming the first field whose value has not its type."""
        hints = typing.get_type_hints(cls)
        known = {f.name for f in dataclasses.fields(cls)} - {"_extra"}
        for name in sorted(known & data.keys()):
            if not conforms(data[name], hints[name]):
                raise ValueError(f"evidence {name} is {data[name]!r}, not {hints[name]}")
        for name, objects, shape in READ_KEYS:
            if name in known and data.get(name) is not None:
                for obj in objects(data[name]):
                    if not isinstance(obj, dict) or not all(k in obj and conforms(obj[k], h) for k, h in shape.items()):
                        raise ValueError(f"evidence {name} holds {obj!r}, not an object with {', '.join(shape)}")
        evidence = cls(**{k: v for k, v in data.items() if k in known})
        evidence._extra = {k: v for k, v in data.items() if k not in known}
        return evidence


E = TypeVar("E", bound=Evidence)

# The keys mqctl reads from the objects inside an evidence field (status, resume and rollback), with their types:
# (field, the objects in its value, {key: type}).
READ_KEYS: tuple[tuple[str, Callable[[Any], Iterable[Any]], dict[str, Any]], ...] = (
    ("counts", lambda counts: counts.values(), {"rows": int | None}),
    ("checkpoints", lambda rows: rows, {"vchannel": str}),
    ("command", lambda run: [run], {"command": str, "returncode": int | None}),
    ("etcd_cleared", lambda cleared: _each_key(cleared), {"key": str, "old": str}),
    ("etcd_restored", lambda cleared: _each_key(cleared), {"key": str, "old": str}),
)


def _each_key(cleared: dict[str, Any]) -> list[Any]:
    """The first etcd key cleared (what older journals hold) and every one in `keys`."""
    return [cleared, *cleared.get("keys", [])]


def conforms(value: object, hint: Any) -> bool:
    """Whether a JSON value has the type annotated (str, int, float, bool, None, list[...], dict[...], unions, Any)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, arg) for arg in args)
    if hint is type(None):
        return value is None
    if hint in (int, float):  # JSON has one kind of number; a bool is no number here
        return isinstance(value, (int, float) if hint is float else int) and not isinstance(value, bool)
    if origin is list:
        return isinstance(value, list) and all(conforms(item, args[0]) for item in value)
    if origin is dict:
        return isinstance(value, dict) and all(conforms(k, args[0]) and conforms(v, args[1]) for k, v in value.items())
    return isinstance(value, origin or hint)


@dataclass
class PreflightEvidence(Evidence):
    configs: list[str] | None = None
    target: str | None = None
    source_mq: str | None = None
    milvus_version: str | None = None
    environment: str | None = None  # where Milvus's environment was read, or why not
    mode: str | None = None
    etcd_mq_type: str | None = None  # an mq.type override found in etcd
    etcd_mq_type_keys: list[str] | None = None  # every etcd key that spells it (`by-dev/config/mqtype`, ...)
    source_mq_bytes: int | None = None
    store_dir: str | None = None
    store_free_bytes: int | None = None
    nats_port: int | None = None
    target_endpoint: str | None = None
    rocksmq_path: str | None = None
    stop_writes: str | None = None  # file | etcd | none | why the operator's own stop
    quota_interval_seconds: float | None = None
    counts: Counts | None = None
    milvus_wait_seconds: float | None = None
    pre_flush_ts: int | None = None  # FlushAll while writes were still open (the flush step then has less left)
    pre_flush_seconds: float | None = None
    pre_flush_resent: int | None = None  # FlushAlls sent again while waiting (mqctl.milvus.client.flush_all)
    # writes still open: waited for the running Milvus's next config re-read, so forceDeny is written just before it
    refresh_wait_seconds: float | None = None
    refresh_anchor: str | None = None  # the log line the re-read schedule was reckoned from
    findings: list[dict[str, Any]] | None = None


@dataclass
class WritesEvidence(Evidence):
    """stop-writes and resume-writes: the forceDeny edit and Milvus's confirmation of it."""

    mechanism: str | None = None  # file | etcd
    old: dict[str, str | None] | None = None  # {mechanism: forceDeny before the deny}
    log_offset: int | None = None
    edited_at: str | None = None
    needs_event: bool | None = None
    diff: str | None = None
    backup: str | None = None
    confirmed: str | None = None
    effect: str | None = None  # what a zero-row write probe showed (milvus_client.write_probe)
    milvus_wait_seconds: float | None = None
    reopened_after: str | None = None  # the step whose failure gave writes back


@dataclass
class FlushEvidence(Evidence):
    result: str | None = None
    flush_all_ts: int | None = None
    seconds: float | None = None
    resent: int | None = None  # FlushAlls sent again while waiting (mqctl.milvus.client.flush_all)
    counts: Counts | None = None
    milvus_wait_seconds: float | None = None
    checkpoints_unread: str | None = None
    checkpoints: CheckpointRows | None = None
    checkpoint_wait_seconds: float | None = None


@dataclass
class CommandEvidence(Evidence):
    """stop and start: the operator's command and how long Milvus took."""

    result: str | None = None
    command: dict[str, Any] | None = None  # hooks.CommandRun
    log_offset: int | None = None
    started_at: str | None = None
    milvus_wait_seconds: float | None = None
    # stop: the etcd sessions (key, lease) of the Milvus being stopped; start: those revoked once it was down
    sessions: list[dict[str, str]] | None = None
    sessions_unread: str | None = None
    sessions_revoked: list[str] | None = None


@dataclass
class SwitchEvidence(Evidence):
    backup: str | None = None
    diff: str | None = None
    result: str | None = None
    etcd_cleared: dict[str, Any] | None = None  # {key, old}


@dataclass
class VerifyEvidence(Evidence):
    init_mq_line: str | None = None
    jetstream_dir: str | None = None
    runtime_info: str | None = None
    milvus_wait_seconds: float | None = None
    writes_after_start: str | None = None  # whether Milvus denied writes again after its start (write probe)
    counts: Counts | None = None
    count_seconds: float | None = None  # from the deny seen again to every count (the loads' rest, the counts)
    checkpoints_unread: str | None = None
    checkpoints: CheckpointRows | None = None
    checkpoint_wait_seconds: float | None = None
    checkpoint_warnings: list[str] | None = None
    kafka_topics: list[str] | None = None  # the topics of Milvus's channels seen on the brokers after the start
    kafka_topics_seconds: float | None = None


@dataclass
class BackupEvidence(Evidence):
    result: str | None = None
    archive: str | None = None
    dirs: list[str] | None = None
    files: int | None = None
    bytes: int | None = None
    manifest: dict[str, dict[str, Any]] | None = None
    read_back: str | None = None
    deleted: list[str] | None = None


@dataclass
class RestoreConfigEvidence(Evidence):
    restored: str | None = None
    backup_of_switched: str | None = None
    etcd_restored: dict[str, Any] | None = None


@dataclass
class RestoreDataEvidence(Evidence):
    result: str | None = None
    restored: list[str] | None = None


EVIDENCE_TYPES: dict[str, type[Evidence]] = {
    "preflight": PreflightEvidence,
    "stop-writes": WritesEvidence,
    "flush": FlushEvidence,
    "stop": CommandEvidence,
    "switch": SwitchEvidence,
    "start": CommandEvidence,
    "verify": VerifyEvidence,
    "resume-writes": WritesEvidence,
    "backup": BackupEvidence,
    "restore-config": RestoreConfigEvidence,
    "restore-data": RestoreDataEvidence,
}


def new_evidence(step: str) -> Evidence:
    return EVIDENCE_TYPES.get(step, Evidence)()


def of(evidence: Evidence, kind: type[E]) -> E:
    """`evidence` as the kind its step journals (a TypeError is a bug: step and evidence kind disagree)."""
    if not isinstance(evidence, kind):
        raise TypeError(f"{type(evidence).__name__} is not {kind.__name__}")
    return evidence
