"""Resumable replay: the last id / sequence replayed per channel, written only after a write succeeded.

The guarantee (see docs/replay.md): run N writes only into its own part directory `replay_run=N` of the
output (Spark's dynamic partition overwrite), and the checkpoint moves to run N+1 only after
that write committed. A run that crashes leaves the checkpoint at N-1, so the rerun is run N again
and overwrites whatever the crashed run left in `replay_run=N`: no message is replayed twice,
none is skipped.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path

from mqctl.errors import InputError
from mqctl.files import replace_atomically

FORMAT = "mqctl-replay-checkpoint/1"
RUN_COLUMN = "replay_run"  # no leading underscore: Spark hides folders named `_...` from readers


@dataclass
class ResumeState:
    path: Path
    source: str | None = None
    target: str | None = None
    runs: int = 0
    positions: dict[str, int] = field(default_factory=dict)  # channel -> last id / sequence replayed
    updated: str | None = None
    selection: dict[str, str] | None = None  # shape, collection, types, channels: what the positions cover

    @classmethod
    def load(cls, path: Path | str) -> ResumeState:
        """The checkpoint at `path`; a missing file is a fresh start."""
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return cls(path)
        except (OSError, UnicodeDecodeError) as err:
            raise InputError(f"cannot read the checkpoint: {err}", location=str(path)) from None
        except json.JSONDecodeError as err:
            raise InputError(
                f"the checkpoint is not valid JSON: {err.msg}",
                location=f"{path}:{err.lineno}:{err.colno}",
                hint="restore it, or remove it to replay everything again",
            ) from None
        except (ValueError, RecursionError):  # a number of thousands of digits, or nesting no checkpoint has
            raise InputError(
                "the checkpoint is not one mqctl wrote (a number or nesting past any checkpoint's)",
                location=str(path),
                hint="restore it, or remove it to replay everything again",
            ) from None
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("positions"), dict):
            raise InputError(
                f'not a replay checkpoint (expected "format": "{FORMAT}")',
                location=str(path),
                hint="pass another --checkpoint file",
            )
        selection = data.get("selection")
        return cls(
            path,
            data.get("source"),
            data.get("target"),
            int(data.get("runs", 0)),
            {str(k): int(v) for k, v in data["positions"].items()},
            data.get("updated"),
            {str(k): str(v) for k, v in selection.items()} if isinstance(selection, dict) else None,
        )

    def check_belongs_to(self, source: str, target: str, selection: dict[str, str] | None = None) -> None:
        """A checkpoint is only valid for the source, output and selection it was made for: positions
        recorded for one collection would silently skip another collection's messages."""
        if self.runs and (self.source, self.target) != (source, target):
            raise InputError(
                f"this checkpoint belongs to a replay of {self.source} into {self.target}, "
                f"not of {source} into {target}",
                location=str(self.path),
                hint="pass another --checkpoint file for this source and output",
            )
        if self.runs and self.selection is not None and selection is not None and self.selection != selection:
            differs = sorted(
                key for key in set(self.selection) | set(selection) if self.selection.get(key) != selection.get(key)
            )
            was = ", ".join(f"{key} {self.selection.get(key) or '(all)'}" for key in differs)
            now = ", ".join(f"{key} {selection.get(key) or '(all)'}" for key in differs)
            raise InputError(
                f"this checkpoint belongs to a replay of {was}, not of {now}",
                location=str(self.path),
                hint="pass the same options as the runs before, or another --checkpoint file",
            )

    @property
    def next_run(self) -> int:
        return self.runs + 1

    def start_after(self, channel: str, first: int) -> int:
        """The first id to replay in `channel`: after what earlier runs replayed."""
        done = self.positions.get(channel)
        return first if done is None else max(first, done + 1)

    def advanced(
        self, source: str, target: str, ends: dict[str, int], selection: dict[str, str] | None = None
    ) -> ResumeState:
        """The checkpoint after a successful run that replayed up to `ends`."""
        positions = {**self.positions, **ends}
        now = dt.datetime.now(dt.timezone.utc).isoformat().replace("+00:00", "Z")
        return ResumeState(self.path, source, target, self.next_run, positions, now, selection)

    def save(self) -> None:
        """Write atomically: a crash leaves either the old or the new checkpoint, never half of one."""
        data = {
            "format": FORMAT,
            "source": self.source,
            "target": self.target,
            "runs": self.runs,
            "positions": self.positions,
            "updated": self.updated,
            "selection": self.selection,
        }
        replace_atomically(self.path, (json.dumps(data, indent=2) + "\n").encode("utf-8"))
