"""`mqctl channels woodpecker`: the segment files of a Milvus 2.6+ Woodpecker WAL."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mqctl.cli.channels.group import (
    app,
)
from mqctl.cli.common import (
    EtcdOpt,
    EtcdRootOpt,
    S3EndpointOpt,
    output,
)
from mqctl.mq.sources import SourceOptions

if TYPE_CHECKING:
    from mqctl.cli.terminal import FitTable
    from mqctl.mq.sources import SourceOptions
    from mqctl.mq.streaming.wal_files import WoodpeckerReport


def _render_woodpecker(report: WoodpeckerReport) -> list[FitTable | str]:
    from mqctl.cli.terminal import ID, KEY, LABEL, NUMBER, TEXT, TIME, Column, Output

    rows = [
        (
            r.log or r.log_id,
            r.segment,
            r.layout,
            r.state if not r.problems else "CORRUPT",
            r.blocks,
            r.entries,
            r.first_entry,
            r.last_entry,
            r.first_time,
            r.last_time,
            r.footer_version,
            r.lac,
        )
        for r in report.segments
    ]
    columns: list[Column | str] = [
        Column("log", KEY),
        Column("segment", ID),
        Column("layout", LABEL, 4),
        Column("state", LABEL, 0),
        Column("blocks", NUMBER, 3),
        Column("entries", NUMBER, 0),
        Column("first entry", ID, 2),
        Column("last entry", ID, 2),
        Column("first time", TIME, 1, wide_header="first time (UTC)"),
        Column("last time", TIME, 1, wide_header="last time (UTC)"),
        Column("footer", NUMBER, 3),
        Column("LAC", ID, 3),
    ]
    parts: list[FitTable | str] = [Output.table(f"Woodpecker segments below {report.path}", columns, rows)]
    if report.entries is not None:
        parts.append(
            Output.table(
                f"log {report.log}: {len(report.entries)} entries",
                [
                    Column("position", KEY),
                    Column("type", LABEL, 0),
                    Column("time", TIME, 1, wide_header="time (UTC)"),
                    Column("vchannel", LABEL, 2),
                    Column("bytes", NUMBER, 3),
                    Column("note", TEXT, 1),
                ],
                [
                    (
                        e.position,
                        e.type,
                        e.time,
                        e.vchannel,
                        e.bytes,
                        ", ".join(
                            note
                            for note, on in (
                                ("encrypted: not decoded", e.encrypted),
                                ("in a transaction", e.in_txn),
                                ("no 2.6 envelope", not e.streaming),
                            )
                            if on
                        ),
                    )
                    for e in report.entries
                ],
            )
        )
    parts += [f"corrupt: {problem}" for r in report.segments for problem in r.problems]
    parts.append(f"note: {report.verification}")
    return parts


@app.command()
def woodpecker(
    path: Annotated[
        str | None,
        typer.Argument(
            help="The local Woodpecker folder (<localStorage.path>/wp), a directory copy of the bucket, or "
            "s3://BUCKET/PREFIX read straight from MinIO/S3 (e.g. s3://a-bucket/files/wp with --s3-endpoint); "
            "segments are found below it. Default: where --config puts it.",
            show_default=False,
        ),
    ] = None,
    config: Annotated[
        list[Path] | None,
        typer.Option(
            "--config",
            help="milvus.yaml/user.yaml/CR/Helm values of a 2.6 on Woodpecker: read the WAL where they put it (its "
            "folder, or its bucket with the endpoint and keys they name) when PATH is not given.",
        ),
    ] = None,
    log: Annotated[
        str | None,
        typer.Option("--log", help="Also list the entries of this log (its pchannel with --etcd, or its id)."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many entries with --log.")] = 20,
    s3_endpoint: S3EndpointOpt = None,
    etcd: EtcdOpt = None,
    etcd_root: EtcdRootOpt = None,
) -> None:
    """Woodpecker segment files of a Milvus 2.6+ WAL, read-only: per segment its state (finalized, active,
    fenced), blocks, entries, time ticks, footer version and LAC, with record and block CRCs checked; with --log
    the entries' 2.6 envelope (type, time tick, vchannel). With --etcd, logs are named after their pchannels.
    Without PATH, --config says where the WAL is (its folder, or its bucket with the endpoint and keys it names).
    An s3:// PATH is read straight from MinIO/S3 (list and get only). Exit 1 when a segment is corrupt, 2 for bad
    input (a missing folder or bucket, a bad URL), 3 when the endpoint is unreachable or refuses the credentials.
    Format from Milvus v2.6.x / Woodpecker v0.1.x source, verified against upstream's code: read back entry by entry
    from segments upstream's Woodpecker (v0.1.13 through Milvus's wp adapter, v0.1.37) wrote to a folder and to
    moto's S3 server, and with --etcd a segment sealed without footer or with a footer LAC below its LastEntryId
    (CP119, milvus #52341) named on such a state; not yet verified on a running 2.6, nor against MinIO or AWS."""
    from mqctl.cli.common import exit_with
    from mqctl.errors import InputError
    from mqctl.mq.sources import load_config, resolve_source, woodpecker_access
    from mqctl.mq.streaming.wal_files import woodpecker_report

    wal = SourceOptions(woodpecker=path, s3_endpoint=s3_endpoint, config=list(config or []))
    if path is None:
        if not config:
            raise InputError("give the WAL: PATH, or --config FILE of a 2.6 on Woodpecker to derive it")
        resolution = load_config(wal.config)
        wal = resolve_source(wal, resolution)
        if wal.woodpecker is None:
            raise InputError(
                f"{', '.join(resolution.files)}: the effective MQ is {resolution.effective_mq or 'none'}, not "
                "woodpecker, so the config puts no Woodpecker WAL anywhere",
                hint="see `mqctl config explain` for why, or give the WAL's PATH",
            )
    location = wal.woodpecker or ""
    if s3_endpoint and "://" not in location:
        raise InputError("--s3-endpoint is where an s3:// PATH is read", hint="give s3://BUCKET/PREFIX, or drop it")
    meta = None
    if etcd:
        from mqctl.config.resolve.sources import DEFAULT_ETCD_ROOT, EtcdConfig
        from mqctl.mq.woodpecker.meta import read_woodpecker_meta

        meta = read_woodpecker_meta(EtcdConfig(etcd, etcd_root or DEFAULT_ETCD_ROOT))
    report = woodpecker_report(location, log=log, limit=limit, access=woodpecker_access(wal), meta=meta)
    output().emit(report, _render_woodpecker)
    exit_with(1 if report.corrupt else 0)
