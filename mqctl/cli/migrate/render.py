"""How `mqctl migrate` shows progress, journals and plans (the JSON is the journal's or the plan's own)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import RenderableType

    from mqctl.cli.terminal import FitTable, Output
    from mqctl.migrate.alter_wal import AlterWalPlan
    from mqctl.migrate.context import Reporter
    from mqctl.migrate.record.journal import Journal, StepRecord
    from mqctl.migrate.run import Plan


def reporter(out: Output) -> Reporter:
    from rich.text import Text

    from mqctl.migrate.context import Reporter
    from mqctl.migrate.record.report import summarize

    last_text, last_at = [""], [0.0]

    def waiting(text: str) -> None:
        if text != last_text[0] and time.monotonic() - last_at[0] > 5:
            out.info(Text(f"    {text}", style="dim"))
            last_text[0], last_at[0] = text, time.monotonic()

    def finished(record: StepRecord) -> None:
        mark = {"done": ("✓", "green"), "skipped": ("-", "dim")}.get(record.status, ("✗", "red"))
        out.info(Text.assemble(mark, f" {record.name:<14} {record.seconds or 0:7.1f} s  {summarize(record)}"))

    return Reporter(
        step_started=lambda r: out.info(Text(f"▶ {r.name} ...", style="bold")), step_finished=finished, waiting=waiting
    )


def _steps_table(title: str, records: list[StepRecord]) -> FitTable:
    from mqctl.cli.terminal import KEY, LABEL, NUMBER, TEXT, Column, Output
    from mqctl.migrate.record.report import summarize

    return Output.table(
        title,
        [Column("step", KEY), Column("status", LABEL, 0), Column("seconds", NUMBER, 1), Column("evidence", TEXT, 0)],
        [(r.name, r.status, f"{r.seconds:.1f}" if r.seconds is not None else "", summarize(r)) for r in records],
    )


def render_journal(journal: Journal) -> list[RenderableType]:
    title = f"migration {journal.source_mq} -> {journal.target_mq}: {journal.state} (journal {journal.path})"
    tables: list[RenderableType] = [_steps_table(title, journal.steps)]
    if journal.rollback:
        tables.append(_steps_table("rollback", journal.rollback))
    return tables


def render_plan(result: Plan | AlterWalPlan) -> list[RenderableType]:
    from mqctl.cli.terminal import KEY, LABEL, NUMBER, TEXT, Column, Output

    head = (
        f"migration plan: {result.source_mq or 'unknown'} -> {result.target_mq} (Milvus {result.milvus_version or '?'}); "
        "nothing was changed"
    )
    items: list[RenderableType] = [
        Output.table(
            head, [Column("step", KEY), Column("what it will do", TEXT, 0)], [(s.name, s.action) for s in result.steps]
        )
    ]
    if result.findings:
        items.append(
            Output.table(
                "preflight findings",
                [
                    Column("code", KEY),
                    Column("level", LABEL, 1),
                    Column("finding", TEXT, 0),
                    Column("how to fix", TEXT, 0),
                ],
                [(f.code, f.severity, f.message, f.hint or "") for f in result.findings],
            )
        )
    if result.counts:
        items.append(
            Output.table(
                "row counts now",
                [Column("collection", KEY), Column("rows", NUMBER, 0)],
                [
                    (n, c["rows"] if c["rows"] is not None else "not loaded (loaded at preflight)")
                    for n, c in result.counts.items()
                ],
            )
        )
    if result.checkpoints:
        items.append(
            Output.table(
                "channel checkpoints now",
                [
                    Column("vchannel", KEY),
                    Column("collection", TEXT, 0),
                    Column("checkpoint (UTC)", TEXT, 1),
                    Column("position", NUMBER, 2),
                    Column("from", LABEL, 3),
                ],
                [(c["vchannel"], c["collection"], c["time"], c["position"], c["from"]) for c in result.checkpoints],
            )
        )
    if result.config_diff:
        from rich.syntax import Syntax

        items.append(Syntax(result.config_diff, "diff", theme="ansi_dark", background_color="default"))
    return items


def emit_journal(out: Output, journal: Journal) -> None:
    """The journal as its file says it (`--json`), or as tables."""
    out.emit(journal.to_dict(), lambda _: render_journal(journal))


def emit_plan(out: Output, plan: Plan | AlterWalPlan) -> None:
    out.emit(plan.to_dict(), lambda _: render_plan(plan))
