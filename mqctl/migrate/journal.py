"""The migration journal: one JSON file that says exactly where a migration stands.

Written atomically after every state change, so a crash or Ctrl-C at any point leaves a
journal that `mqctl migrate status` can explain and `mqctl migrate resume` can continue from.
Secrets are never written to it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mqctl.errors import InputError, PreconditionError
from mqctl.files import replace_atomically

JOURNAL_NAME = ".mqctl-migrate.json"
MIGRATION_STEPS = ("preflight", "stop-writes", "flush", "stop", "switch", "start", "verify", "resume-writes", "backup")
PENDING, RUNNING, DONE, FAILED, SKIPPED = "pending", "running", "done", "failed", "skipped"
# Journal states
IN_PROGRESS, COMPLETED, ROLLING_BACK, ROLLED_BACK = "in-progress", "completed", "rolling-back", "rolled-back"


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class StepRecord:
    """One step: its status, when it ran and what it saw (evidence)."""

    name: str
    status: str = PENDING
    started: str | None = None
    finished: str | None = None
    seconds: float | None = None
    evidence: dict = field(default_factory=dict)
    error: str | None = None


@dataclass
class Journal:
    path: str
    id: str
    created: str
    source_mq: str
    target_mq: str
    options: dict
    state: str = IN_PROGRESS
    updated: str | None = None
    steps: list[StepRecord] = field(default_factory=list)
    rollback: list[StepRecord] = field(default_factory=list)

    @classmethod
    def new(cls, path: Path, source_mq: str, target_mq: str, options: dict) -> "Journal":
        return cls(path=str(path), id=uuid.uuid4().hex[:12], created=now(), source_mq=source_mq,
                   target_mq=target_mq, options=options, steps=[StepRecord(name) for name in MIGRATION_STEPS])

    def step(self, name: str, *, rollback: bool = False) -> StepRecord:
        for record in self.rollback if rollback else self.steps:
            if record.name == name:
                return record
        raise KeyError(name)

    def done(self, name: str) -> bool:
        return self.step(name).status == DONE

    def save(self) -> None:
        """Atomic write: a reader never sees half a journal."""
        self.updated = now()
        target = Path(self.path)
        replace_atomically(target, (json.dumps(asdict(self), indent=2, default=str) + "\n").encode("utf-8"))

    @classmethod
    def load(cls, path: Path) -> "Journal":
        try:
            data = json.loads(Path(path).read_text())
        except FileNotFoundError:
            raise PreconditionError(f"no migration journal at {path}",
                                    hint="start one with `mqctl migrate ...`, or point --state-dir/--config at it") from None
        except (OSError, ValueError) as err:
            raise InputError(f"{path}: unreadable migration journal: {err}") from None
        data["steps"] = [StepRecord(**s) for s in data.get("steps", [])]
        data["rollback"] = [StepRecord(**s) for s in data.get("rollback", [])]
        return cls(**data)


def journal_path(*, state_dir: str | None, config: str | None) -> Path:
    """`--state-dir` wins; otherwise the journal sits next to the (first) config file."""
    if state_dir:
        folder = Path(state_dir).expanduser().resolve()
        folder.mkdir(parents=True, exist_ok=True)
        return folder / JOURNAL_NAME
    if not config:
        raise InputError("where is the migration journal?", hint="pass --config FILE, --state-dir DIR or --sandbox DIR")
    return Path(config).expanduser().resolve().parent / JOURNAL_NAME


def archive_finished(path: Path) -> Path | None:
    """Move a finished journal aside (`.mqctl-migrate.<id>.json`) so a new migration can start.

    One that stopped in preflight changed nothing and is moved aside too; any other unfinished
    one is refused: it must be resumed or rolled back first.
    """
    if not path.exists():
        return None
    old = Journal.load(path)
    changed_nothing = all(r.status == PENDING for r in old.steps if r.name != "preflight")
    if old.state not in (COMPLETED, ROLLED_BACK) and not changed_nothing:
        raise PreconditionError(
            f"an unfinished migration {old.source_mq} -> {old.target_mq} ({old.state}) is journaled in {path}",
            hint="see `mqctl migrate status`, then `mqctl migrate resume` or `mqctl migrate rollback`")
    moved = path.with_name(f".mqctl-migrate.{old.id}.json")
    os.replace(path, moved)
    return moved
