"""`mqctl channels checkpoints`: is what Milvus has not flushed still in the MQ after its channel checkpoints (2.3-2.5 channel checkpoints, 2.6 WAL checkpoints)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from mqctl.cli.channels.group import (
    app,
)
from mqctl.cli.common import (
    EtcdOpt,
    EtcdRootOpt,
    MilvusOpt,
    S3EndpointOpt,
    output,
    seconds,
    takes_source,
)
from mqctl.mq.sources import SourceOptions

if TYPE_CHECKING:
    from mqctl.cli.terminal import FitTable
    from mqctl.config.resolve.resolution import Resolution
    from mqctl.mq.checkpoints import CheckpointReport
    from mqctl.mq.milvus_meta import ChannelMeta, MetaReader
    from mqctl.mq.sources import SourceOptions
    from mqctl.mq.streaming.checkpoint_model import StreamingCheckpointReport


META = "Milvus meta"
MilvusTokenOpt = Annotated[
    str | None,
    typer.Option(
        "--milvus-token",
        help="Milvus token, user:password (or env MQCTL_MILVUS_TOKEN).",
        envvar="MQCTL_MILVUS_TOKEN",
        rich_help_panel=META,
    ),
]
WatchOpt = Annotated[
    float,
    typer.Option(
        "--watch",
        callback=seconds(86_400),
        help="Sample twice this many seconds apart: a checkpoint "
        "that stays put while its vchannel's messages keep "
        "coming is at-risk.",
    ),
]


def _render_checkpoints(report: CheckpointReport) -> list[FitTable | str]:
    import datetime as dt

    from mqctl.cli.terminal import ID, KEY, LABEL, NUMBER, TIME, Column, Output

    rows = [
        (
            c.status if c.status == "ok" else c.status.upper(),
            c.vchannel,
            f"{c.database}.{c.collection}" if c.collection else (c.collection_id or ""),
            c.checkpoint_time,
            c.checkpoint_from,
            c.position,
            c.first_retained,
            c.last,
            c.lag_messages,
            None if c.lag_seconds is None else dt.timedelta(seconds=c.lag_seconds),
            c.lost_messages,
        )
        for c in report.checkpoints
    ]
    watch = f", watched {report.watch_seconds:g} s" if report.watch_seconds else ""
    columns: list[Column | str] = [
        Column("status", LABEL, 0),
        Column("vchannel", KEY),
        Column("collection", LABEL, 1),
        Column("checkpoint", TIME, 3, wide_header="checkpoint (UTC)"),
        Column("from", LABEL, 5),
        Column("position", ID, 4),
        Column("first retained", ID, 4),
        Column("last", ID, 4),
        Column("lag msgs", NUMBER, 2),
        Column("lag", NUMBER, 2),
        Column("lost", NUMBER, 1),
    ]
    parts: list[FitTable | str] = [
        Output.table(
            f"channel checkpoints of {report.source} (etcd {report.etcd}, {report.meta_root}/{watch})", columns, rows
        )
    ]
    parts += [f"{c.vchannel}: {c.status}: {c.reason}" for c in report.checkpoints if c.status != "ok"]
    parts += [f"fix: {hint}" for hint in sorted({c.hint for c in report.checkpoints if c.hint})]
    parts += [f"note: {f.message} — {f.hint}" for f in report.findings if f.code == "CP103"]
    return parts


MilvusVersionOpt = Annotated[
    str | None,
    typer.Option(
        "--milvus-version",
        help="Milvus version, e.g. 2.6.17: 2.6+ reads the Streaming Service state (default: detected from etcd, "
        "streamingcoord-meta/streamingnode-meta keys).",
        rich_help_panel=META,
    ),
]
WoodpeckerOpt = Annotated[
    str | None,
    typer.Option(
        "--woodpecker",
        help="2.6: the local Woodpecker folder, a copy of its bucket or s3://BUCKET/PREFIX (MinIO/S3, see "
        "--s3-endpoint): is what each checkpoint needs still stored? Default: where a --config on Woodpecker puts "
        "it.",
        rich_help_panel=META,
    ),
]
TruncationLagOpt = Annotated[
    float,
    typer.Option(
        "--truncation-lag",
        min=0,
        help="2.6 Woodpecker: hours a segment before the WAL checkpoint may stay untruncated before it is flagged.",
    ),
]


def _render_streaming(report: StreamingCheckpointReport) -> list[FitTable | str]:
    from mqctl.cli.terminal import ID, KEY, LABEL, NUMBER, TIME, Column, Output

    pinned = report.pinned_mq or "not pinned"
    wp = f", Woodpecker meta under {report.woodpecker_prefix}/" if report.woodpecker_prefix else ""
    prows = [
        (
            r.status if r.status == "ok" else r.status.upper(),
            r.pchannel,
            r.node,
            r.term,
            r.wal,
            r.checkpoint,
            r.checkpoint_time,
            r.alter_stage if r.alter_stage not in (None, "none") else "",
            r.alter_target if r.alter_stage not in (None, "none") else "",
            r.log_id,
            r.segments,
            r.truncated_to,
            r.last_entry,
            r.untruncated_before_checkpoint,
            r.first_retained,
        )
        for r in report.pchannels
    ]
    pcolumns: list[Column | str] = [
        Column("status", LABEL, 0),
        Column("pchannel", KEY),
        Column("node", LABEL, 4),
        Column("term", NUMBER, 5),
        Column("wal", LABEL, 1),
        Column("checkpoint", ID, 2),
        Column("checkpoint time", TIME, 2, wide_header="checkpoint (UTC)"),
        Column("alter stage", LABEL, 1),
        Column("alter to", LABEL, 3),
        Column("log", ID, 5),
        Column("segments", NUMBER, 4),
        Column("truncated to", ID, 3),
        Column("last entry", ID, 4),
        Column("untruncated", NUMBER, 3),
        Column("first stored", ID, 2),
    ]
    vrows = [
        (
            r.status if r.status == "ok" else r.status.upper(),
            r.vchannel,
            r.collection or r.collection_id or "",
            r.state,
            r.wal,
            r.position,
            r.checkpoint_time,
        )
        for r in report.vchannels
    ]
    vcolumns: list[Column | str] = [
        Column("status", LABEL, 0),
        Column("vchannel", KEY),
        Column("collection", LABEL, 1),
        Column("state", LABEL, 3),
        Column("wal", LABEL, 1),
        Column("position", ID, 2),
        Column("checkpoint", TIME, 2, wide_header="checkpoint (UTC)"),
    ]
    parts: list[FitTable | str] = [
        Output.table(f"pchannels of {report.meta_root}/ (etcd {report.etcd}; mq.type {pinned}{wp})", pcolumns, prows),
        Output.table("vchannels (datacoord channel checkpoints)", vcolumns, vrows),
    ]
    parts += [f"{r.pchannel}: {reason}" for r in report.pchannels for reason in r.reasons]
    parts += [f"{r.vchannel}: {r.status}: {r.reason}" for r in report.vchannels if r.status not in ("ok",) and r.reason]
    parts += [
        f"{f.code} {f.severity}: {f.message}" + (f" — {f.hint}" if f.hint else "")
        for f in report.findings
        if f.code != "CP114"
    ]
    parts.append(f"note: {report.verification}")
    return parts


def _checkpoint_wal(
    source: SourceOptions, woodpecker: str | None, s3_endpoint: str | None, resolution: Resolution | None
) -> SourceOptions | None:
    """The Woodpecker files 2.6 checkpoints are compared with: --woodpecker, else the WAL --config derives (as
    `channels list --config` reads it; not a separate Woodpecker service's, whose files are where its own config
    says), else none."""
    import dataclasses

    from mqctl.errors import InputError
    from mqctl.mq.sources import resolve_source
    from mqctl.mq.woodpecker.location import kept_by_service

    wal = SourceOptions(woodpecker=woodpecker, s3_endpoint=s3_endpoint)
    if woodpecker is None and not source.explicit and resolution is not None and not kept_by_service(resolution):
        wal = resolve_source(dataclasses.replace(wal, config=source.config), resolution)
    if s3_endpoint and not (wal.woodpecker and "://" in wal.woodpecker):
        raise InputError("--s3-endpoint is where an s3:// --woodpecker is read", hint="add --woodpecker s3://...")
    return wal if wal.woodpecker else None


def _streaming_checkpoints(
    reader: MetaReader,
    resolution: Resolution | None,
    source: SourceOptions,
    truncation_lag: float,
    wal: SourceOptions | None,
) -> None:
    import datetime as dt

    from mqctl.cli.common import exit_with
    from mqctl.mq.channel_checkpoints import judge_streaming
    from mqctl.mq.streaming.wal_state import WOODPECKER_FILES, WOODPECKER_META, WalFiles

    out = output()
    if source.explicit:
        out.warn(
            f"Milvus 2.6+: {', '.join(source.explicit)} not read: on 2.6 mqctl reads etcd and Woodpecker's files "
            "(--woodpecker, or where a --config on Woodpecker puts them; other WALs written by 2.6 are not read yet)"
        )
    files = None
    if wal is not None and wal.woodpecker:
        from mqctl.mq.sources import woodpecker_access

        files = WalFiles(wal.woodpecker, woodpecker_access(wal))
    judged = judge_streaming(reader, resolution, wal_files=files, truncation_lag=dt.timedelta(hours=truncation_lag))
    for part in (WOODPECKER_FILES, WOODPECKER_META):  # the command answers for every part it was asked to read
        if part in judged.unread:
            raise judged.unread[part]
    report = judged.report
    out.emit(report, _render_streaming)
    exit_with(1 if report.failing else 0)


@app.command()
@takes_source(woodpecker=False)
def checkpoints(
    source: SourceOptions,
    etcd: EtcdOpt = None,
    etcd_root: EtcdRootOpt = None,
    milvus: MilvusOpt = None,
    milvus_token: MilvusTokenOpt = None,
    watch: WatchOpt = 0,
    milvus_version: MilvusVersionOpt = None,
    truncation_lag: TruncationLagOpt = 24.0,
    woodpecker: WoodpeckerOpt = None,
    s3_endpoint: S3EndpointOpt = None,
) -> None:
    """Per vchannel: is what Milvus has not flushed still in the MQ after its channel checkpoint?
    Exit 1 when any vchannel is expired or at-risk (2.6: any error or warning finding), 3 when etcd or the MQ
    cannot be read.

    On Milvus 2.6+ (Streaming Service) it reads etcd: pchannel assignments, WAL checkpoints with the
    AlterWAL stage, vchannel meta, channel checkpoints with their WAL name, the pinned mq.type and Woodpecker's
    log/segment meta; and Woodpecker's files (--woodpecker, or where a --config on Woodpecker puts them) to tell
    whether what each checkpoint needs is still stored. 2.6 support: format from Milvus v2.6.x / Woodpecker v0.1.x
    source; verified against upstream's code: every key decodes as Milvus's and Woodpecker's generated types decode
    it (state the reference writer made with them, v0.1.13 and v0.1.37), and the 3.0 hazards are named on states
    it made (CP110 a checkpoint on another WAL than the pin, CP119 a sealed segment without footer or short of
    LastEntryId, CP120 a dropped collection's state behind the truncation point); not yet verified on a running
    2.6."""
    from mqctl.cli.common import exit_with
    from mqctl.config.known_keys import parse_version
    from mqctl.errors import InputError
    from mqctl.mq.channel_checkpoints import judge_channel_cp, on_streaming
    from mqctl.mq.milvus_meta import collections_from_milvus, meta_reader
    from mqctl.mq.retention import ROCKS_TIME_KEY
    from mqctl.mq.retention_model import ConfiguredRetention
    from mqctl.mq.sources import load_config, open_source

    version = parse_version(milvus_version)
    if milvus_version and version is None:
        raise InputError(f"--milvus-version {milvus_version!r} is not a version", hint="e.g. --milvus-version 2.6.17")
    resolution = load_config(source.config) if source.config else None
    reader = meta_reader(etcd, etcd_root, resolution)
    if version is None and resolution is not None:
        version = resolution.version
    if on_streaming(reader, version):
        wal = _checkpoint_wal(source, woodpecker, s3_endpoint, resolution)
        _streaming_checkpoints(reader, resolution, source, truncation_lag, wal)
        return
    if woodpecker or s3_endpoint:
        raise InputError("--woodpecker is for Milvus 2.6+", hint="give --milvus-version 2.6.x, or leave it out")
    target = None
    if milvus:
        from mqctl.milvus.client import MilvusTarget

        target = MilvusTarget(milvus, token=milvus_token or "")

    def read_meta() -> ChannelMeta:
        return reader.read(collections=collections_from_milvus(target) if target else None)

    rocksmq_window = ConfiguredRetention(resolution).get(ROCKS_TIME_KEY).value * 60
    with open_source(source, resolution=resolution) as opened:
        report = judge_channel_cp(
            read_meta,
            opened,
            watch_seconds=watch,
            rocksmq_retention_seconds=rocksmq_window,
            milvus_uri=target.uri if target else None,
            etcd=reader.etcd.shown,
        )
    output().emit(report, _render_checkpoints)
    exit_with(1 if report.failing else 0)


# --- channels woodpecker ---------------------------------------------------------------------------------------
