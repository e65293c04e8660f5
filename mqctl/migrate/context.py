"""What every step works with: the journal, the options, how progress is reported, and the few facts
about Milvus (up or down, its config, its data folders) more than one step reads."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mqctl.backends import BACKENDS, is_embedded
from mqctl.errors import PreconditionError
from mqctl.host import hooks
from mqctl.migrate.options import MigrateOptions
from mqctl.migrate.record.journal import PENDING, Journal, StepRecord

if TYPE_CHECKING:
    from mqctl.config.resolve.resolution import Resolution
    from mqctl.milvus.rpc import MilvusGrpc


class StepFailed(PreconditionError):
    """A step could not complete: exit 3 with the step, what was seen and what to do next."""

    def __init__(self, step: str, seen: str, next_action: str, *, writes_note: str = ""):
        message = f"step {step} failed: {seen}" + (f" ({writes_note})" if writes_note else "")
        super().__init__(message, hint=next_action)
        self.step, self.seen, self.next_action, self.writes_note = step, seen, next_action, writes_note

    def noted(self, writes_note: str, next_action: str | None = None) -> StepFailed:
        """The same failure, saying where writes (and Milvus) stand."""
        return StepFailed(self.step, self.seen, next_action or self.next_action, writes_note=writes_note)


def _quiet(_: Any) -> None:
    return None


@dataclass
class Reporter:
    """How progress reaches the operator (the CLI prints; tests and JSON mode stay quiet)."""

    step_started: Callable[[StepRecord], None] = _quiet
    step_finished: Callable[[StepRecord], None] = _quiet
    waiting: Callable[[str], None] = _quiet


@dataclass
class Context:
    journal: Journal
    options: MigrateOptions
    report: Reporter = field(default_factory=Reporter)
    rollback: bool = False

    def save_journal(self) -> None:
        """Save the journal: the one place a migration writes it (before and after every change)."""
        self.journal.save()

    @property
    def expected_mq(self) -> str:
        """The MQ Milvus must run on after the step sequence in progress."""
        return self.journal.source_mq if self.rollback else self.journal.target_mq

    @property
    def steps(self) -> list[StepRecord]:
        return self.journal.rollback if self.rollback else self.journal.steps

    def record(self, name: str) -> StepRecord:
        """The step of this sequence, else the migration's (a rollback reuses its stop-writes and flush)."""
        for record in self.steps:
            if record.name == name and record.status != PENDING:
                return record
        return self.journal.step(name)

    def client(self) -> MilvusGrpc:
        """A gRPC channel to Milvus (the generated stubs, not pymilvus's client); close it after use."""
        from mqctl.milvus.rpc import MilvusGrpc

        return MilvusGrpc.of(self.options.milvus)


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def parse_time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def resolution(options: MigrateOptions, version: str | None = None, env: dict[str, str] | None = None) -> Resolution:
    from mqctl.config.resolve.resolution import resolve

    configs: list[Path | str] = [*options.configs]
    return resolve(configs, milvus_version=version or options.milvus_version, env=env, etcd=options.etcd_client())


def milvus_up(options: MigrateOptions) -> bool:
    if options.health_url:
        return hooks.http_healthy(options.health_url)
    return hooks.port_open(options.milvus.uri)


def milvus_down(options: MigrateOptions) -> bool:
    health_gone = not options.health_url or not hooks.http_healthy(options.health_url)
    return health_gone and not hooks.port_open(options.milvus.uri)


def non_empty_dir(path: Path) -> bool:
    return path.is_dir() and any(path.iterdir())


def dir_size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def mq_dirs(res: Resolution, mq: str, store_dir: str | None = None) -> list[Path]:
    """The local folders that hold an embedded MQ's data (what backup archives and cleanup deletes).

    RocksMQ keeps its topics under `rocksmq.path` and its metadata beside it in `<path>_meta_kv`
    (milvus pkg/mq/mqimpl/rocksmq/server/rocksmq_impl.go); NATS JetStream under `<storeDir>/jetstream`.
    """
    if not is_embedded(mq):
        return []
    key = BACKENDS[mq].store_key
    base = (store_dir if mq == "natsmq" else None) or (res.value(key) if key else None)
    if not base:
        return []
    return [Path(base), Path(f"{base}_meta_kv")] if mq == "rocksmq" else [Path(base) / "jetstream"]


def migration_dirs(res: Resolution, options: MigrateOptions) -> list[Path]:
    """The MQ folders a migration archives, cleans up or starts the new MQ in: the current MQ's, and the natsmq
    store it switches to. No output path of the migration (backup, journal) may lie in one."""
    folders = mq_dirs(res, res.effective_mq or "")
    if options.to == "natsmq":
        folders += mq_dirs(res, "natsmq", options.store_dir)
    return folders


def in_background(work: Callable[[], object]) -> None:
    """Run `work` on a daemon thread and forget it: for work done ahead, while Milvus is being waited for,
    that a later step would otherwise do inside the write-denied window (parsing the config texts that
    step will edit: parses are kept by text). Its errors do not matter: the step does the work again."""
    import threading

    def run() -> None:
        try:
            work()
        except Exception:  # the step itself reports what is wrong
            pass

    threading.Thread(target=run, daemon=True).start()
