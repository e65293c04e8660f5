"""Options and helpers shared by every command group (parsing and printing only)."""

from __future__ import annotations

from typing import Annotated

import click
import typer

from mqctl.cli.terminal import Output

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object (stable schema, see README).")]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
WideOpt = Annotated[
    bool,
    typer.Option(
        "--wide", "--no-trunc", help="Show every column, full ids and full times (lines may run past the terminal)."
    ),
]
DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Show what would change; write nothing.")]


def output(json_mode: bool = False, wide: bool = False) -> Output:
    """The Output for this invocation, honouring the root --no-color flag."""
    ctx = click.get_current_context(silent=True)
    root_obj = ctx.find_root().obj if ctx is not None else None
    no_color = bool(root_obj and root_obj.get("no_color"))
    return Output(json_mode=json_mode, no_color=no_color, wide=wide)


def exit_with(code: int) -> None:
    """End the command with an exit code (0 returns normally)."""
    if code:
        raise typer.Exit(code)
