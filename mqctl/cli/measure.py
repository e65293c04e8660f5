"""How `--measure` shows search, query and insert figures before and after a switch (sandbox rehearse, migrate)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from mqctl.cli.terminal import FitTable
    from mqctl.milvus.measure import MeasureComparison

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
