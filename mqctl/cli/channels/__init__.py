"""`mqctl channels`: list, show, peek, decode, checkpoints and woodpecker, a module each (parsing and printing only;
the reading and judging is in mqctl.mq). Importing the package registers the commands on `app`, in the order
`mqctl channels --help` lists them."""

from __future__ import annotations

import importlib

from mqctl.cli.channels.group import app

for _command in ("listing", "show", "peek", "decode", "checkpoints", "woodpecker"):
    importlib.import_module(f"{__name__}.{_command}")

__all__ = ["app"]
