"""A command group whose commands live in modules of their own, each imported and built only when it is asked for:
`mqctl channels list` imports and builds `list` alone, not the group's five other commands (issue 33; figures in
docs/benchmarks.md#cli-start-up). Help, completion and the usage errors still see every command, in the declared
order: listing the names loads nothing, showing a command's help text loads its module."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

import click
from typer.core import TyperGroup


class LazyCommands(MutableMapping[str, click.Command]):
    """A group's commands by name: the names are declared, each command is built the first time it is looked up
    (`commands[name]`, `commands.get(name)`); `name in commands` and iterating the names build nothing."""

    def __init__(self, names: list[str], build: Callable[[str], click.Command]) -> None:
        self._names = list(names)
        self._build = build
        self._built: dict[str, click.Command] = {}
        self._when_built: list[Callable[[str, click.Command], None]] = []

    def when_built(self, action: Callable[[str, click.Command], None]) -> None:
        """Run `action(name, command)` on every command, those already built now and the others when built."""
        self._when_built.append(action)
        for name, command in self._built.items():
            action(name, command)

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._built:
            if name not in self._names:
                raise KeyError(name)
            command = self._build(name)
            self._built[name] = command
            for action in self._when_built:
                action(name, command)
        return self._built[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        if name not in self._names:
            self._names.append(name)
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        self._names.remove(name)
        self._built.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._names))

    def __len__(self) -> int:
        return len(self._names)


def group_callback() -> None:
    # the group itself does nothing before its command runs; given as the app's callback, it makes Typer build the
    # app as a group while none of its commands is registered yet (no docstring: the app's help is the group's)
    return None


def lazy_group(app_module: str, modules: dict[str, str]) -> type[TyperGroup]:
    """The click group class of the Typer app `app` of `app_module`, whose commands are declared here (command name
    -> the module that registers it on that app with `@app.command`), in the order help lists them; pass it as the
    app's `cls`, with `group_callback` as its callback."""

    class LazyGroup(TyperGroup):
        def __init__(self, *, commands: dict[str, click.Command] | None = None, **settings: Any) -> None:
            super().__init__(**settings)
            self.commands = LazyCommands(list(modules), self._build)
            self.commands.update(commands or {})  # those Typer built: registered before the app was converted

        def list_commands(self, ctx: click.Context) -> list[str]:
            return list(self.commands)  # the names, without building the commands

        def _build(self, name: str) -> click.Command:
            import typer.main

            importlib.import_module(modules[name])
            app = importlib.import_module(app_module).app
            for info in app.registered_commands:
                callback = info.callback
                if (info.name or typer.main.get_command_name(getattr(callback, "__name__", ""))) == name:
                    return typer.main.get_command_from_info(
                        info,
                        pretty_exceptions_short=app.pretty_exceptions_short,
                        rich_markup_mode=app.rich_markup_mode,
                    )
            raise LookupError(f"{modules[name]} registers no command {name!r} on {app_module}.app")

    return LazyGroup
