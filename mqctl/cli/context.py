"""How this invocation prints, read from one place: `--json` and `--wide` are options of the root command, and every
command that prints a result accepts them after its name as well (`mqctl channels list --json` and
`mqctl --json channels list` are the same). Both forms set the root context's object; commands read it through
`presentation()` and never declare the options themselves."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

JSON_DECLS = ("--json",)
JSON_HELP = "Print one JSON object (stable schema, see docs/json.md)."
WIDE_DECLS = ("--wide", "--no-trunc")
WIDE_HELP = "Show every column, full ids and full times (lines may run past the terminal)."
# the commands that print no result object (no --json) or no table (no --wide); every other command that runs
# something takes both
WITHOUT_JSON = frozenset({"exporter"})
WITHOUT_WIDE = frozenset({"exporter", "bundle", "config get", "config set", "config unset", "config switch"})


@dataclass(frozen=True)
class Presentation:
    """What the root context says of the output: one JSON object, every column, no colour."""

    json: bool = False
    wide: bool = False
    no_color: bool = False


def settings(ctx: click.Context | None = None) -> dict[str, Any]:
    """The root context's object (the root command makes it a dict), or an empty one outside a command."""
    ctx = ctx if ctx is not None else click.get_current_context(silent=True)
    obj = ctx.find_root().obj if ctx is not None else None
    return obj if isinstance(obj, dict) else {}


def presentation() -> Presentation:
    """How the running command prints: --json, --wide and --no-color, wherever they were given."""
    given = settings()
    return Presentation(bool(given.get("json")), bool(given.get("wide")), bool(given.get("no_color")))


def _remember(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and param.name is not None:
        root = ctx.find_root()
        root.ensure_object(dict)[param.name] = True


def option(name: str) -> click.Option:
    """--json or --wide as a command's option: not passed to the command, stored in the root context."""
    from typer.core import TyperOption

    decls, text = (JSON_DECLS, JSON_HELP) if name == "json" else (WIDE_DECLS, WIDE_HELP)
    return TyperOption(
        param_decls=[name, *decls], is_flag=True, default=False, expose_value=False, callback=_remember, help=text
    )


def root_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The root command's --json and --wide (`mqctl --json COMMAND`), passed to it as `json` and `wide`."""
    command = click.option(*WIDE_DECLS, "wide", is_flag=True, help=WIDE_HELP)(command)
    return click.option(*JSON_DECLS, "json", is_flag=True, help=JSON_HELP)(command)


def add_options(command: click.Command, path: str) -> None:
    """Give `command` (named `path` below the root) and every command below it that runs something --json and
    --wide, unless it prints no such output (WITHOUT_JSON, WITHOUT_WIDE): there the root's option is a usage
    error, as the command's own would be."""
    if isinstance(command, click.Group):
        when_built = getattr(command.commands, "when_built", None)  # a group whose commands are built when used
        if when_built is not None:
            when_built(lambda name, sub: add_options(sub, f"{path} {name}"))
        else:
            for name, sub in command.commands.items():
                add_options(sub, f"{path} {name}")
        if not command.invoke_without_command:
            return
    names = {opt for param in command.params for opt in getattr(param, "opts", [])}
    refused = []
    for name, without in (("json", WITHOUT_JSON), ("wide", WITHOUT_WIDE)):
        if path in without:
            refused.append(name)
        elif not names & set(JSON_DECLS if name == "json" else WIDE_DECLS):
            command.params.append(option(name))
    if refused and command.callback is not None:
        command.callback = _refusing(command.callback, path, refused)


def _refusing(callback: Callable[..., Any], path: str, refused: list[str]) -> Callable[..., Any]:
    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        given = settings()
        for name in refused:
            if given.get(name):
                flag = "--json" if name == "json" else "--wide"
                raise click.UsageError(f"`mqctl {path}` has no {flag} output: leave {flag} out")
        return callback(*args, **kwargs)

    return run
