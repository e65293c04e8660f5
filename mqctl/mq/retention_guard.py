"""The checkpoint-loss guard every retention apply runs before it changes anything: the plan's deletions are
checked against the channel checkpoints Milvus keeps, shown either way, and refused (unless forced) when they
delete messages Milvus has not persisted. Each MQ names its own parts (limits or topic configs, vchannels or
channels, messages or offsets) through a LossWording."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from mqctl.errors import PreconditionError

if TYPE_CHECKING:
    from collections.abc import Sized

    from mqctl.mq.checkpoints import LiveCheckpoint


class GuardedPlan(Protocol):
    @property
    def changes(self) -> Sized: ...

    losses: list[str]


@dataclass(frozen=True)
class LossWording:
    """What the refusal calls the parts of one MQ."""

    change: str  # what the plan sets: "the new limits"
    checkpoint: str  # "channel checkpoint"
    channels: str  # "vchannel(s)"
    show: str  # the command that shows the checkpoints: "`mqctl channels checkpoints`"
    deleted: str  # what the checkpoints must pass: "messages"


def guard_checkpoints(
    plan: GuardedPlan,
    read_checkpoints: Callable[[], list[LiveCheckpoint] | None] | None,
    losses: Callable[[list[LiveCheckpoint]], list[str]],
    wording: LossWording,
    *,
    force: bool,
    dry_run: bool,
) -> None:
    """Refuse a plan that deletes what a channel needs after its checkpoint (unless forced); shown either way
    (added to plan.losses). The checkpoints are read only for a plan that changes something
    (`read_checkpoints()`: None = not checked); `losses(checkpoints)` says what the plan deletes past them."""
    if read_checkpoints is None or not plan.changes:
        return
    checkpoints = read_checkpoints()
    if checkpoints is None:
        return
    lost = losses(checkpoints)
    plan.losses += lost
    if lost and not force and not dry_run:
        raise PreconditionError(
            f"{wording.change} delete messages Milvus has not persisted, after the {wording.checkpoint} of "
            f"{len(lost)} {wording.channels}: {'; '.join(lost)}; nothing changed",
            hint=f"run FlushAll and wait until {wording.show} shows the checkpoints past the deleted "
            f"{wording.deleted}, then apply again; or pass --force to delete them anyway",
        )
