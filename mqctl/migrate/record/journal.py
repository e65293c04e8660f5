"""The migration journal: one JSON file that says exactly where a migration stands.

Written atomically after every state change (`Context.save_journal`), so a crash or Ctrl-C at any point
leaves a journal that `mqctl migrate status` can explain and `mqctl migrate resume` can continue from.
Secrets are never written to it. `schema_version` says which layout it has: a journal of a newer
layout than this mqctl knows is refused rather than misread (one without the field is version 1).
"""

from __future__ import annotations

import datetime as dt
import enum
import json
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from mqctl.errors import InputError, PreconditionError
from mqctl.files import replace_atomically
from mqctl.migrate.record.evidence import Evidence, conforms, new_evidence, of

JOURNAL_NAME = ".mqctl-migrate.json"
SCHEMA_VERSION = 1
MIGRATION_STEPS = ("preflight", "stop-writes", "flush", "stop", "switch", "start", "verify", "resume-writes", "backup")
# the steps a rollback may run, in any order it plans (executor.REGISTRY gives each one its `back` function)
ROLLBACK_STEPS = ("stop-writes", "flush", "stop", "restore-config", "restore-data", "start", "verify", "resume-writes")
E = TypeVar("E", bound=Evidence)


class _JournalWord(str, enum.Enum):
    """A word the journal writes: the member's value, also when printed."""

    def __str__(self) -> str:
        return str(self.value)


class StepStatus(_JournalWord):
    """Where a step stands."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"


class JournalState(_JournalWord):
    IN_PROGRESS = "in-progress"
    COMPLETED = "completed"
    ROLLING_BACK = "rolling-back"
    ROLLED_BACK = "rolled-back"


PENDING, RUNNING, DONE, FAILED, SKIPPED = StepStatus
IN_PROGRESS, COMPLETED, ROLLING_BACK, ROLLED_BACK = JournalState


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class StepRecord:
    """One step: its status, when it ran and what it saw (evidence, typed by the step's name)."""

    name: str
    status: StepStatus = PENDING
    started: str | None = None
    finished: str | None = None
    seconds: float | None = None
    evidence: Evidence = field(default_factory=Evidence)
    error: str | None = None

    def __post_init__(self) -> None:
        if type(self.evidence) is Evidence and not self.evidence._extra:
            self.evidence = new_evidence(self.name)

    def of(self, kind: type[E]) -> E:
        return of(self.evidence, kind)

    def reset(self) -> None:
        """Back to pending with no evidence (its step runs again from the start)."""
        self.status, self.evidence = PENDING, new_evidence(self.name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status.value,
            "started": self.started,
            "finished": self.finished,
            "seconds": self.seconds,
            "evidence": self.evidence.to_dict(),
            "error": self.error,
        }


@dataclass
class Journal:
    path: str
    id: str
    created: str
    source_mq: str
    target_mq: str
    options: dict[str, Any]
    state: JournalState = IN_PROGRESS
    updated: str | None = None
    steps: list[StepRecord] = field(default_factory=list)
    rollback: list[StepRecord] = field(default_factory=list)

    @classmethod
    def new(cls, path: Path, source_mq: str, target_mq: str, options: dict[str, Any]) -> Journal:
        return cls(
            path=str(path),
            id=uuid.uuid4().hex[:12],
            created=now(),
            source_mq=source_mq,
            target_mq=target_mq,
            options=options,
            steps=[StepRecord(name) for name in MIGRATION_STEPS],
        )

    def step(self, name: str, *, rollback: bool = False) -> StepRecord:
        for record in self.rollback if rollback else self.steps:
            if record.name == name:
                return record
        raise KeyError(name)

    def evidence(self, name: str, kind: type[E]) -> E:
        """The typed evidence of the migration's step `name`."""
        return self.step(name).of(kind)

    def done(self, name: str) -> bool:
        return self.step(name).status == DONE

    def to_dict(self) -> dict[str, Any]:
        """The journal as its file and `--json` show it."""
        return {
            "schema_version": SCHEMA_VERSION,
            "path": self.path,
            "id": self.id,
            "created": self.created,
            "source_mq": self.source_mq,
            "target_mq": self.target_mq,
            "options": self.options,
            "state": self.state.value,
            "updated": self.updated,
            "steps": [r.to_dict() for r in self.steps],
            "rollback": [r.to_dict() for r in self.rollback],
        }

    def save(self) -> None:
        """Atomic write: a reader never sees half a journal. Steps save through `Context.save_journal`."""
        self.updated = now()
        replace_atomically(Path(self.path), (json.dumps(self.to_dict(), indent=2, default=str) + "\n").encode("utf-8"))

    @classmethod
    def load(cls, path: Path) -> Journal:
        try:
            data = json.loads(Path(path).read_text())
        except FileNotFoundError:
            raise PreconditionError(
                f"no migration journal at {path}",
                hint="start one with `mqctl migrate ...`, or point --state-dir/--config at it",
            ) from None
        except (OSError, ValueError, RecursionError) as err:  # RecursionError: JSON nested past any journal
            raise InputError(f"{path}: unreadable migration journal: {err}") from None
        version = data.get("schema_version", 1) if isinstance(data, dict) else 1
        if not isinstance(version, int) or isinstance(version, bool) or version > SCHEMA_VERSION:
            raise InputError(
                f"{path}: journal schema_version {version!r} is newer than this mqctl reads ({SCHEMA_VERSION})",
                hint="run the mqctl release that wrote it (or a newer one)",
            )
        try:
            return cls._parse(data)
        except (TypeError, ValueError) as err:
            raise InputError(
                f"{path}: unreadable migration journal: {err}",
                hint="it is not a journal mqctl wrote; point --config/--state-dir at the right one",
            ) from None

    @classmethod
    def _parse(cls, data: object) -> Journal:
        """A journal from its JSON, or ValueError/TypeError saying what is not a journal about it."""
        from mqctl.migrate.options import MigrateOptions

        if not isinstance(data, dict):
            raise TypeError(f"a JSON {type(data).__name__}, not a journal object")
        for key in ("path", "id", "created", "source_mq", "target_mq"):
            if not isinstance(data.get(key), str):
                raise TypeError(f"{key} is missing or not text")
        states = [s.value for s in JournalState]
        if data.get("state") not in states:
            raise ValueError(f"state {data.get('state')!r} is not one of {', '.join(states)}")
        if not isinstance(data.get("options"), dict):
            raise TypeError("options are missing or not an object")
        MigrateOptions.check_journaled(data["options"])
        steps = [_step_record(s) for s in _records(data.get("steps"), "steps")]
        if tuple(r.name for r in steps) != MIGRATION_STEPS:
            raise ValueError(f"steps are {[r.name for r in steps]}, not {list(MIGRATION_STEPS)}")
        rollback = [_step_record(s) for s in _records(data.get("rollback", []), "rollback")]
        _check_rollback_names([r.name for r in rollback])
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**{**fields, "state": JournalState(data["state"]), "steps": steps, "rollback": rollback})

    def check_belongs(self, path: Path, configs: list[str] | None) -> None:
        """Refuse a journal that was written elsewhere, or for other configs than the ones asked for:
        resuming it would act on another Milvus's config without a word."""
        journaled = self.options["configs"]
        if configs is not None and configs != journaled:
            raise InputError(
                f"the journal {path} belongs to {', '.join(journaled)}, not {', '.join(configs)}",
                hint="pass the same --config as the migration it journals",
            )
        if Path(self.path) != path:
            raise InputError(
                f"{path} was written as {self.path}: it belongs to another migration",
                hint=f"pass the --config or --state-dir of that migration (journal {self.path})",
            )


def _records(value: object, name: str) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"{name} is not a list")
    return value


def _step_record(data: object) -> StepRecord:
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise TypeError(f"step {data!r} is not a step record")
    evidence = data.get("evidence", {})
    if data.get("status") not in [s.value for s in StepStatus] or not isinstance(evidence, dict):
        raise ValueError(f"step {data['name']} has status {data.get('status')!r} or evidence that is not an object")
    for key, hint in (("started", str | None), ("finished", str | None), ("error", str | None)):
        if not conforms(data.get(key), hint):
            raise ValueError(f"step {data['name']} has {key} {data.get(key)!r}, not text")
    if not conforms(data.get("seconds"), float | None):
        raise ValueError(f"step {data['name']} has seconds {data.get('seconds')!r}, not a number")
    kind = type(new_evidence(data["name"]))
    return StepRecord(**{**data, "status": StepStatus(data["status"]), "evidence": kind.from_dict(evidence)})


def _check_rollback_names(names: list[str]) -> None:
    """A rollback runs only steps that have a way back (ROLLBACK_STEPS)."""
    for name in names:
        if name not in ROLLBACK_STEPS:
            raise ValueError(f"rollback step {name!r} is no step of a rollback")


def journal_path(*, state_dir: str | None, config: str | None, new: bool = False) -> Path:
    """`--state-dir` wins; otherwise the journal sits next to the (first) config file. Nothing is created
    here; a `new` migration may name a state folder that does not exist yet (`start` creates it)."""
    if state_dir:
        folder = Path(state_dir).expanduser().resolve()
        if folder.exists() and not folder.is_dir():
            raise InputError(f"--state-dir {folder} is not a folder", hint="pass a folder for the migration journal")
        if not new and not folder.exists():
            raise InputError(
                f"--state-dir {folder} does not exist", hint="pass the folder the migration journaled into"
            )
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
            hint="see `mqctl migrate status`, then `mqctl migrate resume` or `mqctl migrate rollback`",
        )
    moved = path.with_name(f".mqctl-migrate.{old.id}.json")
    os.replace(path, moved)
    return moved
