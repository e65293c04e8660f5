"""`mqctl bundle`: one .tar.gz for a support ticket, secrets masked (parsing and printing only)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mqctl.cli.common import output
from mqctl.cli.doctor import Target, takes_target

if TYPE_CHECKING:
    from rich.console import RenderableType

    from mqctl.doctor.bundle import BundleResult

app = typer.Typer(
    help="Write one .tar.gz for a support ticket: configs (secrets masked), doctor, channels, checkpoints, logs.",
    add_completion=False,
)


@app.command()
@takes_target
def bundle(
    out: Annotated[Path, typer.Option("--out", help="The archive to write, e.g. milvus-mq-bundle.tar.gz.")],
    target: Target,
    log: Annotated[
        Path | None, typer.Option("--log", help="Milvus's log (default: the one the process or sandbox writes).")
    ] = None,
    log_lines: Annotated[int, typer.Option("--log-lines", min=1, max=1_000_000, help="Last lines of the log.")] = 2000,
) -> None:
    """Examine the Milvus as `mqctl doctor` does and write what a support ticket needs into one archive: the
    configs with every secret masked, the doctor's JSON and metrics, channels, retention and checkpoints, the
    etcd config and 2.6 WAL state, the migration journal, the end of Milvus's log, versions; MANIFEST.json at
    its root lists every part and what could not be read and why. Exit 0 when written, 2 on bad options or an
    --out that exists or whose folder does not, 3 when nothing can be examined or the archive cannot be written
    (nothing half-written is left)."""
    from mqctl.cli.terminal import to_jsonable
    from mqctl.doctor.bundle import bundle as write

    request = target.request()
    result = write(request, out, log=log, log_lines=log_lines, jsonable=to_jsonable)
    output().emit(result, _render)


def _render(result: BundleResult) -> list[RenderableType]:
    from rich.text import Text

    from mqctl.cli.terminal import TEXT, Column, Output

    manifest = result.manifest
    parts: list[RenderableType] = [
        Text(f"wrote {result.path} ({result.bytes} bytes, {len(manifest.parts)} part(s), verdict {manifest.verdict})"),
        Output.table(
            None,
            [Column("part", TEXT, 0), "bytes", Column("what", TEXT, 1)],
            [(p.path, p.bytes, p.what) for p in manifest.parts],
            right=["bytes"],
        ),
    ]
    if manifest.missing:
        parts.append(
            Output.table(
                "not in the bundle",
                [Column("part", TEXT, 0), Column("why", TEXT, 0)],
                [(m.part, m.reason) for m in manifest.missing],
            )
        )
    return parts
