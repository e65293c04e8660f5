"""Replay positions on a Milvus 2.6 Woodpecker WAL: where `--from checkpoint` starts, where a follow batch may end,
and when a query lost entries. Format from Woodpecker v0.1.x / Milvus v2.6.x source; not yet verified on a running
2.6.

A position is a message id (`segment * 10**10 + entry`, mqctl.mq.woodpecker.source). Woodpecker numbers entries per
segment from 0, and truncation removes whole segments (woodpecker server/storage, v0.1.25), so the entry after
`s/e` is `s/(e+1)` or, when `s/e` was the last of its segment, `(s+1)/0`.

`--from checkpoint`: each vchannel resumes after datacoord's channel checkpoint (`datacoord-meta/channel-cp/<v>`, a
MsgPosition whose `WAL_name` must be woodpecker), or, for a live vchannel datacoord holds none for yet, after its
pchannel's WAL checkpoint (`streamingnode-meta/wal/<p>/consume-checkpoint`: the streaming node recovers from there,
so all the vchannel has not persisted follows it) — the meaning the 2.3-2.5 form gives datacoord's seek position.
A vchannel the streaming node marks dropped is left out (as a dropped collection's on 2.3-2.5).

Transactions in follow mode: a batch never ends inside a transaction (open_transactions.py, shared with RocksMQ
written by 2.6).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mqctl.config.resolve.sources import DEFAULT_ETCD_ROOT
from mqctl.errors import InputError, PreconditionError
from mqctl.mq.woodpecker.source import ENTRY_SPAN, position_of

if TYPE_CHECKING:
    from mqctl.mq.streaming.state import StreamingState
    from mqctl.replay.model import ReplayRequest

WOODPECKER = "woodpecker"


def continues(next_position: int, first_stored: int) -> bool:
    """Whether the first stored entry is the one at `next_position` (a query's next position, a checkpoint + 1), or
    the first of the next segment: nothing between them is missing. Entries at the end of a segment that truncation
    removed with it cannot be told from a segment that ended there."""
    if first_stored <= next_position:
        return True
    segment = next_position // ENTRY_SPAN
    return first_stored == (segment + 1) * ENTRY_SPAN


# ---------------------------------------------------------------------------------------- --from checkpoint
def woodpecker_checkpoints(request: ReplayRequest) -> dict[str, tuple[str, int]]:
    """vchannel -> (pchannel, checkpoint message id) from the 2.6 state in etcd, each checked against the WAL
    folder: a checkpoint on another WAL, a dropped vchannel's sentinel or a checkpoint whose next entries the folder
    no longer holds stops the replay in one line."""
    from mqctl.config.resolve.sources import EtcdConfig
    from mqctl.mq.streaming.state import StreamingReader

    if not request.etcd:
        raise InputError(
            "--from checkpoint on a Woodpecker WAL needs --etcd URL: the channel checkpoints and the names of the logs "
            "are in Milvus's etcd",
            hint="add --etcd http://HOST:2379 (and --etcd-root, etcd.rootPath, if it is not by-dev)",
        )
    etcd = EtcdConfig(request.etcd, request.etcd_root or DEFAULT_ETCD_ROOT)
    reader = StreamingReader(etcd)
    state = reader.read()
    if not state.channel_checkpoints and not state.found:
        raise PreconditionError(
            f"etcd at {etcd.shown} holds no Milvus 2.6 channel or WAL checkpoint under {state.meta_root}/",
            hint="check --etcd-root (etcd.rootPath) and that this etcd belongs to the Milvus 2.6 whose WAL you read",
        )
    found = checkpoint_positions(state)
    _check_stored(request, found)
    return found


def checkpoint_positions(state: StreamingState) -> dict[str, tuple[str, int]]:
    """The checkpoint of every vchannel not dropped (see the module docstring), as Woodpecker message ids."""
    from mqctl.mq.streaming.state import CHANNEL_CP, CONSUME_CHECKPOINT, WAL

    found: dict[str, tuple[str, int]] = {}
    for vchannel in sorted(set(state.channel_checkpoints) | set(state.vchannels)):
        record = state.vchannels.get(vchannel)
        if record is not None and record.state == "dropped":
            continue
        pchannel = record.pchannel if record is not None else _pchannel_of(vchannel)
        channel_cp = state.channel_checkpoints.get(vchannel)
        if channel_cp is not None:
            key = f"{state.meta_root}/{CHANNEL_CP}{vchannel}"
            if channel_cp.dropped:
                raise PreconditionError(
                    f"{key}: vchannel {vchannel} has the dropped-channel checkpoint (timestamp MaxUint64), which is "
                    "no position to resume after, while the streaming node "
                    + ("still lists it as live" if record is not None else "holds no vchannel meta for it"),
                    hint="its collection is being dropped: wait until Milvus finished (the streaming node marks it "
                    "dropped, datacoord removes the checkpoint), or replay from a position (segment/entry) or time",
                )
            wal, position = channel_cp.wal, channel_cp.position
        else:
            wal_cp = state.wal_checkpoints.get(pchannel)
            if record is None or wal_cp is None or wal_cp.position is None:
                continue  # no position known for it: as on 2.3-2.5, not a vchannel to resume
            key = f"{state.meta_root}/{WAL}{pchannel}/{CONSUME_CHECKPOINT}"
            wal, position = wal_cp.position.wal, wal_cp.position
        if wal != WOODPECKER:
            named = "carries no WAL_name (written before 2.6?)" if wal == "unknown" else f"is a {wal} position"
            raise PreconditionError(
                f"{key}: the checkpoint of vchannel {vchannel} {named}, not a Woodpecker one; the WAL read is "
                "Woodpecker",
                hint="after a WAL switch (AlterWAL) the checkpoints move to the new WAL once it flushed "
                "(`mqctl channels checkpoints --etcd URL` shows each one's WAL); replay from a position or time",
            )
        if position.order is None or len(position.order) != 2 or not 0 <= position.order[1] < ENTRY_SPAN:
            raise PreconditionError(
                f"{key}: the checkpoint of vchannel {vchannel} does not decode as a Woodpecker position "
                f"({position.text or 'empty'})",
                hint="report it with the Milvus version: the format may differ in this release",
            )
        segment, entry = position.order
        found[vchannel] = (pchannel, segment * ENTRY_SPAN + entry)
    return found


def _pchannel_of(vchannel: str) -> str:
    from mqctl.mq.milvus_meta import physical_channel

    return physical_channel(vchannel)


def _check_stored(request: ReplayRequest, found: dict[str, tuple[str, int]]) -> None:
    """Refuse a checkpoint whose next entry the folder no longer holds: what Milvus had not flushed is lost."""
    from mqctl.mq.sources import choose_source, woodpecker_access, woodpecker_log_names
    from mqctl.mq.woodpecker.source import WoodpeckerSource
    from mqctl.replay.reader.options import ReplayOptions

    _, location = choose_source(request.source)
    names = woodpecker_log_names(request.source)
    with WoodpeckerSource(location, names=names, access=woodpecker_access(request.source)) as source:
        known = [info.name for info in source.list_channels(message_times=False)]
        selected = set(ReplayOptions(woodpecker=location, channels=request.channels).select_channels(known))
        for vchannel, (pchannel, position) in sorted(found.items()):
            bounds = source.id_range(pchannel) if pchannel in selected else None
            if bounds is None or continues(position + 1, bounds[0]):
                continue
            raise PreconditionError(
                f"vchannel {vchannel}: channel checkpoint {position_of(position)} precedes the first entry "
                f"{position_of(bounds[0])} stored for {pchannel} in {source.path}: the entries after the checkpoint "
                "that Milvus had not flushed are lost",
                hint="the WAL was truncated past the checkpoint (or the folder is an older copy): replay what is "
                "left from a position or time, and check the WAL retention against the flush interval",
            )
