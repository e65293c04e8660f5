"""`mqctl exporter`: the doctor's checks as a Prometheus /metrics endpoint (parsing and printing only)."""

from __future__ import annotations

from typing import Annotated

import typer

from mqctl.cli.common import exit_with, output, seconds
from mqctl.cli.doctor import Target, takes_target

app = typer.Typer(
    help="Serve the doctor's checks as Prometheus metrics on /metrics (reads cached between scrapes).",
    add_completion=False,
)


@app.command()
@takes_target
def exporter(
    target: Target,
    listen: Annotated[
        str,
        typer.Option("--listen", help="HOST:PORT to serve /metrics on (0.0.0.0:PORT for other hosts)."),
    ] = "127.0.0.1:9851",
    interval: Annotated[
        float,
        typer.Option(
            "--interval",
            help="Seconds a read is served from the cache before the next scrape reads again.",
            callback=seconds(86400, positive=True),
        ),
    ] = 30.0,
) -> None:
    """Examine the Milvus as `mqctl doctor` does, then serve the result on http://LISTEN/metrics until Ctrl-C or
    SIGTERM (exit 0). A scrape reads again only when the last read is older than --interval; a source that
    fails shows as mqctl_source_up 0 without failing the scrape. Exit 2 on bad options or a first read that
    cannot start (no such config), 3 when the port is in use. Metrics: docs/monitoring.md."""
    import threading

    from mqctl.doctor.checks import examine
    from mqctl.doctor.exporter import CachedExamination, Exporter, parse_listen
    from mqctl.errors import InputError
    from mqctl.interrupts import Interrupted, describe

    request = target.request()
    where = parse_listen(listen)
    cache = CachedExamination(lambda: examine(request), interval)
    cache.refresh()  # the first read at start: bad input stops here instead of serving up 0 forever
    if isinstance(cache.last_exception, InputError):
        raise cache.last_exception
    server = Exporter(cache, where)
    server.start()
    shown = output()
    shown.info(
        f"serving http://{where.shown}/metrics (reads at most every {interval:g} s)"
        + (f"; first read failed: {cache.last_error}" if cache.last_error else "")
    )
    try:
        server.serve_until(threading.Event())
    except Interrupted as err:  # SIGTERM or Ctrl-C is how an exporter is meant to stop
        shown.info(f"stopped: {describe(err)}")
    exit_with(0)
