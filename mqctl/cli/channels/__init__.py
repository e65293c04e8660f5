"""`mqctl channels`: list, show, peek, decode, checkpoints and woodpecker, a module each (parsing and printing only;
the reading and judging is in mqctl.mq). The group (`app`, in group.py) declares the commands in the order
`mqctl channels --help` lists them and imports a command's module when that command is used."""

from __future__ import annotations

from mqctl.cli.channels.group import app

__all__ = ["app"]
