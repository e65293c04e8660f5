"""`mqctl migrate --measure`: the figures before the migration and after it, shown with the journal."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from mqctl.cli.terminal import Output
    from mqctl.migrate.record.journal import Journal
    from mqctl.milvus.client import MilvusTarget
    from mqctl.milvus.measure import Measurement


def check_can_measure(measure: bool, writes_stopped: bool) -> None:
    """Measuring inserts before the migration needs writes open."""
    if measure and writes_stopped:
        from mqctl.errors import InputError

        raise InputError(
            "--measure times inserts before the migration, but --writes-stopped says writes are already stopped",
            hint="drop --measure (or measure before stopping writes)",
        )


def measure_before(target: MilvusTarget, say: Callable[[str], None]) -> Measurement:
    """`migrate --measure`: the figures before the migration starts (writes still open)."""
    from mqctl.milvus.measure import MeasureSettings, measure

    say("measuring search, query and insert before the migration (scratch collections, dropped after) ...")
    return measure(target, MeasureSettings(), say)


def emit_measured_journal(out: Output, journal: Journal, target: MilvusTarget, before: Measurement) -> None:
    """The journal, and once the migration completed (writes resumed) the figures after it beside those
    before; measuring after is a warning when it fails: the migration itself is done."""
    from mqctl.cli.measure import render_measured
    from mqctl.cli.migrate.render import emit_journal, render_journal
    from mqctl.errors import PreconditionError
    from mqctl.migrate.record.journal import COMPLETED
    from mqctl.milvus.measure import MeasureSettings, compare, measure

    if journal.state != COMPLETED:
        out.warn(f"--measure: the migration is {journal.state}, so nothing was measured after it")
        emit_journal(out, journal)
        return
    out.info("measuring search, query and insert after the migration, the same way ...")
    try:
        after = measure(target, MeasureSettings(), out.info)
    except PreconditionError as err:
        out.warn(f"--measure after the migration failed: {err}")
        emit_journal(out, journal)
        return
    measured = compare(journal.source_mq, journal.target_mq, before, after)
    out.emit(
        {**journal.to_dict(), "measured": measured}, lambda _: [*render_journal(journal), render_measured(measured)]
    )
