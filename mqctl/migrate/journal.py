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
STEP_STATUSES = (PENDING, RUNNING, DONE, FAILED, SKIPPED)
# Journal states
IN_PROGRESS, COMPLETED, ROLLING_BACK, ROLLED_BACK = "in-progress", "completed", "rolling-back", "rolled-back"
JOURNAL_STATES = (IN_PROGRESS, COMPLETED, ROLLING_BACK, ROLLED_BACK)


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
    def new(cls, path: Path, source_mq: str, target_mq: str, options: dict) -> Journal:
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

    def done(self, name: str) -> bool:
        return self.step(name).status == DONE

    def save(self) -> None:
        """Atomic write: a reader never sees half a journal."""
        self.updated = now()
        target = Path(self.path)
        replace_atomically(target, (json.dumps(asdict(self), indent=2, default=str) + "\n").encode("utf-8"))

    @classmethod
    def load(cls, path: Path) -> Journal:
        try:
            data = json.loads(Path(path).read_text())
        except FileNotFoundError:
            raise PreconditionError(
                f"no migration journal at {path}",
                hint="start one with `mqctl migrate ...`, or point --state-dir/--config at it",
            ) from None
        except (OSError, ValueError) as err:
            raise InputError(f"{path}: unreadable migration journal: {err}") from None
        try:
            return cls._parse(data)
        except (TypeError, ValueError) as err:
            raise InputError(
                f"{path}: unreadable migration journal: {err}",
                hint="it is not a journal mqctl wrote; point --config/--state-dir at the right one",
            ) from None

    @classmethod
    def _parse(cls, data) -> Journal:
        """A journal from its JSON, or ValueError/TypeError saying what is not a journal about it."""
        from mqctl.migrate.steps import MigrateOptions

        if not isinstance(data, dict):
            raise TypeError(f"a JSON {type(data).__name__}, not a journal object")
        for key in ("path", "id", "created", "source_mq", "target_mq"):
            if not isinstance(data.get(key), str):
                raise TypeError(f"{key} is missing or not text")
        if data.get("state") not in JOURNAL_STATES:
            raise ValueError(f"state {data.get('state')!r} is not one of {', '.join(JOURNAL_STATES)}")
        if not isinstance(data.get("options"), dict):
            raise TypeError("options are missing or not an object")
        MigrateOptions.check_journaled(data["options"])
        steps = [_step_record(s) for s in _records(data.get("steps"), "steps")]
        if tuple(r.name for r in steps) != MIGRATION_STEPS:
            raise ValueError(f"steps are {[r.name for r in steps]}, not {list(MIGRATION_STEPS)}")
        rollback = [_step_record(s) for s in _records(data.get("rollback", []), "rollback")]
        return cls(**{**data, "steps": steps, "rollback": rollback})

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


def _records(value, name: str) -> list:
    if not isinstance(value, list):
        raise TypeError(f"{name} is not a list")
    return value


def _step_record(data) -> StepRecord:
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise TypeError(f"step {data!r} is not a step record")
    if data.get("status") not in STEP_STATUSES or not isinstance(data.get("evidence", {}), dict):
        raise ValueError(f"step {data['name']} has status {data.get('status')!r} or evidence that is not an object")
    return StepRecord(**data)


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
