"""How `--measure` shows search, query and insert figures before and after a switch (sandbox rehearse, migrate)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from collections.abc import Callable

    from mqctl.cli.terminal import FitTable, Output
    from mqctl.measure import MeasureComparison, Measurement
    from mqctl.migrate.journal import Journal
    from mqctl.milvus_client import MilvusTarget

MEASURE_HELP = (
    "Time search and query (p50/p99/mean) and 64 KB inserts before the switch and after it, on scratch "
    "collections created and dropped each time (adds about 20 s)."
)
MeasureOpt = Annotated[bool, typer.Option("--measure", help=MEASURE_HELP)]


def render_measured(measured: MeasureComparison) -> FitTable:
    """Before and after the switch side by side, with the NATS announcement's ratio where it has one."""
    from mqctl.cli.terminal import KEY, NUMBER, TEXT, Column, Output

    def ratio(value: float | None) -> str:
        return "" if value is None else f"{value:.2f}"

    before = measured.before
    return Output.table(
        f"search, query and insert before / after the switch ({before.rows:,} vectors of dim {before.dim}, "
        f"{before.search.count} searches, {before.query.count} queries, consistency {before.consistency})",
        [
            Column("metric", KEY),
            Column("unit", TEXT, 2),
            Column(measured.before_mq, NUMBER, 0),
            Column(measured.after_mq, NUMBER, 0),
            Column("after/before", NUMBER, 0),
            Column("announced", NUMBER, 1, wide_header="announced NATS/RocksMQ"),
        ],
        [
            (f.metric, f.unit, f"{f.before:.2f}", f"{f.after:.2f}", ratio(f.ratio), ratio(f.announced_ratio))
            for f in measured.figures
        ],
    )


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
    from mqctl.measure import MeasureSettings, measure

    say("measuring search, query and insert before the migration (scratch collections, dropped after) ...")
    return measure(target, MeasureSettings(), say)


def emit_measured_journal(out: Output, journal: Journal, target: MilvusTarget, before: Measurement) -> None:
    """The journal, and once the migration completed (writes resumed) the figures after it beside those
    before; measuring after is a warning when it fails: the migration itself is done."""
    from mqctl.cli.migrate.render import emit_journal, render_journal
    from mqctl.errors import PreconditionError
    from mqctl.measure import MeasureSettings, compare, measure
    from mqctl.migrate.journal import COMPLETED

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
