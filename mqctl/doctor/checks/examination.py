"""What every check family reads and writes: the examination of one Milvus (its target, the config it will restart with, etcd, the checks found so far and what was measured)."""

from __future__ import annotations

import contextlib
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mqctl.doctor.discovery import Target
from mqctl.doctor.verdict import Check, Measured

if TYPE_CHECKING:
    from mqctl.config.resolve.resolution import Resolution
    from mqctl.config.resolve.sources import EtcdConfig
    from mqctl.migrate.record.journal import Journal


FORCE_DENY = "quotaAndLimits.limitWriting.forceDeny"
MiB = 1 << 20


@dataclass
class Examination:
    """What the checks share: the target, the next restart's resolution, the etcd, and what the MQ holds."""

    target: Target
    res: Resolution
    etcd: EtcdConfig | None
    etcd_error: str | None
    etcd_given: bool = False  # --etcd named it: it must answer
    checks: list[Check] = field(default_factory=list)
    unflushed: int | None = None  # messages after the channel checkpoints in the MQ read
    unflushed_rows: int | None = None  # the rows their inserts carry
    data_mq: str | None = None  # the MQ whose data was read
    journal: Journal | None = None  # the migration journal beside the config
    journal_fix: str | None = None  # how to go on with an interrupted migration
    data_messages: int | None = None
    measured: Measured = field(default_factory=Measured)  # the reports behind the checks (the exporter's metrics)

    def add(self, area: str, code: str, severity: str, message: str, fix: str | None = None, **more: Any) -> Check:
        check = Check(area, code, severity, message, fix, **more)
        self.checks.append(check)
        return check

    @property
    def config(self) -> str:
        return self.target.configs[0] if self.target.configs else "milvus.yaml"

    def migrate_command(self, to: str) -> str:
        """The migration that moves this Milvus to `to` (the command the operator copies)."""
        words = ["mqctl", "migrate"]
        if self.target.found_by == "--sandbox" and self.target.paths.get("log"):
            words += ["--sandbox", str(Path(self.config).parent.parent)]
        else:
            words += ["--config", self.config]
            if self.target.milvus:
                words += ["--milvus", self.target.milvus]
        return shlex.join([*words, "--to", to])


def parse_int(text: str | None, default: int) -> int:
    with contextlib.suppress(TypeError, ValueError):
        return int(str(text).strip())
    return default


def fix_value(exam: Examination, key: str, value: str) -> str:
    """The command that gives `key` the value `value` where its effective value comes from."""
    origin = exam.res.origin(key)
    if origin.source == "env":
        return f"remove (or set to {value}) {origin.detail} in Milvus's environment (unit file, compose file, pod spec)"
    if origin.source == "etcd" and exam.etcd is not None:
        return (
            f"etcdctl --endpoints {exam.etcd.shown} put {origin.detail} {value} (or `del` it to fall back to the yaml)"
        )
    file = origin.file or exam.config
    return shlex.join(["mqctl", "config", "set", file, key, value, "--yes"])
