"""`mqctl sandbox rehearse`: the whole production migration, acted out on a real Milvus 2.3.5.

sandbox up on RocksMQ with seeded data -> full migration to natsmq with every verification ->
the new NATS streams listed -> sandbox down. Everything a production run journals is shown.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mqctl.migrate.record.evidence import Counts, FlushEvidence, VerifyEvidence
from mqctl.migrate.record.journal import Journal
from mqctl.mq.model import ChannelInfo

if TYPE_CHECKING:
    from mqctl.migrate.context import Reporter
    from mqctl.milvus.measure import MeasureComparison, MeasureSettings


@dataclass
class Rehearsal:
    dir: str
    kept: bool
    journal: Journal
    counts_before: Counts
    counts_after: Counts
    streams: list[ChannelInfo] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)  # phase -> seconds
    measured: MeasureComparison | None = None  # search/query/insert before and after the switch (--measure)

    def to_dict(self) -> dict[str, Any]:
        """The rehearsal as `--json` shows it, its journal as the journal file says it."""
        return {**{f.name: getattr(self, f.name) for f in fields(self)}, "journal": self.journal.to_dict()}


def rehearse(
    directory: str | None,
    report: Reporter,
    say: Callable[[str], None],
    keep: bool = False,
    external_etcd: bool = False,
    measure: MeasureSettings | None = None,
) -> Rehearsal:
    """`measure`: time search, query and inserts on scratch collections before the migration (on RocksMQ)
    and after it (on NATS, writes resumed); they are dropped each time, so the migration never sees them."""
    from mqctl.migrate import run
    from mqctl.migrate.options import MigrateOptions
    from mqctl.migrate.record.journal import journal_path
    from mqctl.milvus.client import MilvusTarget
    from mqctl.milvus.measure import compare
    from mqctl.milvus.measure import measure as measure_milvus
    from mqctl.mq.nats.client import JetStreamSource
    from mqctl.sandbox import server as sandbox

    created = directory is None
    folder = Path(directory or tempfile.mkdtemp(prefix="mqctl-rehearsal-"))
    seconds: dict[str, float] = {}
    began = time.monotonic()
    topology = " with its own etcd server (production topology)" if external_etcd else ""
    say(
        f"1/4 sandbox up in {folder}: Milvus 2.3.5 on RocksMQ{topology}, seeding two collections (inserts + deletes) ..."
    )
    info = sandbox.up(str(folder), mq="rocksmq", seed=True, external_etcd=external_etcd)
    seconds["sandbox up + seed"] = round(time.monotonic() - began, 1)
    say(f"    Milvus at {info.uri}, config {info.config}, log {info.log}, etcd {info.etcd} ({info.etcd_mode})")
    measured_before = None
    try:
        if measure is not None:
            say("    measuring search, query and insert on RocksMQ (scratch collections, dropped after) ...")
            mark = time.monotonic()
            measured_before = measure_milvus(MilvusTarget(info.uri), measure, say)
            seconds["measure before"] = round(time.monotonic() - mark, 1)
        say(
            "2/4 migrating RocksMQ -> natsmq, exactly as in production (stop-writes, FlushAll, stop, switch, start, "
            "verify, resume-writes, backup) ..."
        )
        fill = info.migrate_fill()
        options = MigrateOptions(
            to="natsmq", milvus=MilvusTarget(fill.pop("milvus")), **fill, backup_dir=str(folder / "backup")
        )
        mark = time.monotonic()
        journal = run.start(options, journal_path(state_dir=None, config=info.config), report)
        seconds["migration"] = round(time.monotonic() - mark, 1)
        say("3/4 listing the new NATS JetStream streams (one per Milvus channel) ...")
        port = sandbox.Sandbox(folder).ports["natsmq_port"]
        source = JetStreamSource(f"nats://127.0.0.1:{port}")
        try:
            streams = source.list_channels()
        finally:
            source.close()
        measured = None
        if measure is not None and measured_before is not None:
            say("    measuring search, query and insert on NATS, the same way ...")
            mark = time.monotonic()
            measured_after = measure_milvus(MilvusTarget(info.uri), measure, say)
            seconds["measure after"] = round(time.monotonic() - mark, 1)
            measured = compare("rocksmq", "natsmq", measured_before, measured_after)
    except BaseException:
        say(
            f"rehearsal failed: stopping the sandbox; {folder} is kept to read (log {info.log}, journal beside "
            f"{info.config}); remove it when done"
        )
        sandbox.down(str(folder))
        raise
    say("4/4 sandbox down ...")
    mark = time.monotonic()
    sandbox.down(str(folder))
    seconds["sandbox down"] = round(time.monotonic() - mark, 1)
    kept = keep or not created
    if not kept:
        shutil.rmtree(folder, ignore_errors=True)
    seconds["total"] = round(time.monotonic() - began, 1)
    return Rehearsal(
        str(folder),
        kept,
        journal,
        journal.evidence("flush", FlushEvidence).counts or {},
        journal.evidence("verify", VerifyEvidence).counts or {},
        streams,
        seconds,
        measured,
    )
