"""`mqctl sandbox`: a real embedded Milvus 2.3.5 to rehearse migrations on."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from mqctl.cli.common import JsonOpt, output

app = typer.Typer(help="Run a real embedded Milvus 2.3.5 to rehearse migrations on.", no_args_is_help=True)

DirOpt = Annotated[Path, typer.Option("--dir", help="Sandbox folder (created on first `up`).")]
TimeoutOpt = Annotated[float, typer.Option("--timeout", help="Seconds to wait for Milvus.")]


def _render_info(info):
    from rich.table import Table

    table = Table(title=f"sandbox {info.dir}", show_header=False, title_justify="left")
    rows = [("running", "yes" if info.running else "no"), ("mq", info.mq), ("pid", info.pid), ("uri", info.uri),
            ("config", info.config), ("log", info.log), ("etcd", info.etcd), ("health_url", info.health_url),
            ("stop_cmd", info.stop_cmd), ("start_cmd", info.start_cmd)]
    rows += [(f"seeded {name}", f"{count} rows") for name, count in info.seeded.items()]
    for key, value in rows:
        table.add_row(key, "" if value is None else str(value))
    return table


@app.command()
def up(directory: DirOpt,
       mq: Annotated[Optional[str], typer.Option("--mq", help="rocksmq (default) or natsmq; only for a new sandbox.")] = None,
       seed: Annotated[bool, typer.Option("--seed", help="Create two demo collections with inserts and deletes.")] = False,
       timeout: TimeoutOpt = 180, json_mode: JsonOpt = False):
    """Create (first time) and start the sandbox, wait for health, print how to reach it."""
    from mqctl import sandbox

    out = output(json_mode)
    out.info(f"starting Milvus 2.3.5 in {directory} ...")
    out.emit(sandbox.up(str(directory), mq=mq, seed=seed, timeout=timeout), _render_info)


@app.command()
def down(directory: DirOpt, timeout: TimeoutOpt = 10, json_mode: JsonOpt = False):
    """Stop the sandbox's Milvus (SIGTERM, SIGKILL after --timeout); its data stays."""
    from mqctl import sandbox

    output(json_mode).emit(sandbox.down(str(directory), timeout=timeout), _render_info)


@app.command()
def status(directory: DirOpt, json_mode: JsonOpt = False):
    """Where the sandbox is, whether it runs and on which MQ."""
    from mqctl import sandbox

    output(json_mode).emit(sandbox.status(str(directory)), _render_info)
