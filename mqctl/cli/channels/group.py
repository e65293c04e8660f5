"""The `mqctl channels` group and what its commands share: the Typer app, the channel argument, --etcd for Woodpecker's log names, byte counts for people, and printing a result with its warnings."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mqctl.cli.lazy import group_callback, lazy_group
from mqctl.mq.sources import SourceOptions

if TYPE_CHECKING:
    from rich.console import RenderableType

    from mqctl.cli.terminal import Output
    from mqctl.mq.channel_detail import ChannelDetail, PeekResult
    from mqctl.mq.channels import ChannelList
    from mqctl.mq.sources import SourceOptions


# the commands in the order `mqctl channels --help` lists them, each in its own module, imported when used
COMMANDS = {
    "list": "mqctl.cli.channels.listing",
    "show": "mqctl.cli.channels.show",
    "peek": "mqctl.cli.channels.peek",
    "decode": "mqctl.cli.channels.decode",
    "checkpoints": "mqctl.cli.channels.checkpoints",
    "woodpecker": "mqctl.cli.channels.woodpecker",
}

app = typer.Typer(
    cls=lazy_group(__name__, COMMANDS),
    callback=group_callback,
    help="Inspect channels of RocksMQ (offline, read-only), NATS JetStream and Woodpecker (2.6+, offline, read-only; "
    "format from Woodpecker v0.1.x / Milvus v2.6.x source, verified against what upstream's code wrote, not yet on a "
    "running 2.6); decode messages.",
    no_args_is_help=True,
)

NameArg = Annotated[
    str, typer.Argument(help="Channel (topic/stream) name, e.g. by-dev-rootcoord-dml_0.", show_default=False)
]


def format_bytes(count: int | None) -> str:
    """A byte count for people (B, KiB, MiB, GiB); empty when unknown."""
    if count is None:
        return ""
    size: float = count
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{count} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return ""


WoodpeckerEtcdOpt = Annotated[
    str | None,
    typer.Option(
        "--etcd",
        help="With --woodpecker: etcd client URL of this Milvus; Woodpecker's meta there names each log after its "
        "pchannel (else logs go by their ids).",
    ),
]


def with_etcd(source: SourceOptions, etcd: str | None, etcd_root: str | None) -> SourceOptions:
    """The source with --etcd/--etcd-root, which only --woodpecker reads (log names)."""
    import dataclasses

    from mqctl.errors import InputError

    if (etcd or etcd_root) and not source.woodpecker and not source.config:
        raise InputError("--etcd/--etcd-root name Woodpecker's logs here", hint="add --woodpecker PATH, or drop --etcd")
    return dataclasses.replace(source, etcd=etcd, etcd_root=etcd_root)


def emit_with_warnings(
    out: Output,
    result: ChannelList | ChannelDetail | PeekResult,
    render: Callable[[Any], RenderableType | Iterable[RenderableType]],
) -> None:
    """Print a result; when its data and metadata disagree, warn on stderr and end with exit 1."""
    from mqctl.cli.common import exit_with

    for warning in result.warnings:
        out.warn(warning)
    out.emit(result, render)
    exit_with(1 if result.warnings else 0)
