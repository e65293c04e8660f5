"""`retention apply`: plan, confirm, apply all-or-nothing and verify new NATS stream limits.

A --nats-store is planned and rehearsed on a private copy first (what the new limits delete, whether
nats-server leaves tombstones an older Milvus misreads); the store itself is opened only once the change
was confirmed. A stream that refuses its new limits puts back the streams already changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from mqctl import interrupts
from mqctl.errors import InputError, MqctlError, PreconditionError, Stopped
from mqctl.mq.nats.retention import ApplyPlan, LimitChange, checkpoint_losses, plan_apply
from mqctl.mq.retention import Limits, show_limit
from mqctl.mq.retention_guard import LossWording, guard_checkpoints

if TYPE_CHECKING:
    from mqctl.mq.checkpoints import LiveCheckpoint
    from mqctl.mq.nats.client import JetStreamSource
    from mqctl.mq.sources import SourceOptions


@dataclass
class ApplyOutcome:
    """What `retention apply` did: the changes planned, the streams updated, and whether they verified."""

    source: str
    dry_run: bool
    changes: list[LimitChange]
    applied: list[str]  # streams updated
    verified: bool | None  # None: nothing applied
    mismatches: list[str] = field(default_factory=list)
    losses: list[str] = field(default_factory=list)  # see ApplyPlan.losses


def apply_retention(
    options: SourceOptions,
    wanted: Limits,
    *,
    dry_run: bool,
    confirm: Callable[[ApplyPlan], bool],
    checkpoints: Callable[[], list[LiveCheckpoint] | None] | None = None,
    force: bool = False,
) -> ApplyOutcome:
    """Plan, confirm (`confirm(plan)` shows the plan and answers), apply all-or-nothing, verify.

    A --nats-store is planned and rehearsed on a private copy: the copy shows exactly which messages the new
    limits delete and whether nats-server would leave tombstones an older Milvus misreads; the store itself is
    opened only after the change was confirmed. A live --nats server cannot be copied: its losses are estimated.
    `checkpoints()` reads them once the store is open and the plan changes something (None: not checked): the
    plan is refused when it deletes messages after one, unless `force`."""
    from mqctl.mq.sources import open_streams

    started: list[ApplyPlan] = []  # the plan whose updates may have begun: an interrupt reads the store back
    try:
        if options.nats_store is None:
            with open_streams(options) as source:
                plan = plan_apply(source, wanted)
                _guard_checkpoints(plan, checkpoints, force=force, dry_run=dry_run)
                if not plan.changes or dry_run:
                    return ApplyOutcome(plan.source, dry_run, plan.changes, [], None, losses=plan.losses)
                _confirmed(confirm, plan)
                started.append(plan)
                with interrupts.held() as interrupted:
                    applied = apply_plan(source, plan, interrupted)
                    mismatches = verify(source, plan)
            return ApplyOutcome(
                plan.source, False, plan.changes, applied, not mismatches, mismatches, losses=plan.losses
            )
        return _apply_to_store(options, wanted, confirm, checkpoints, force=force, dry_run=dry_run, started=started)
    except KeyboardInterrupt as stop:
        raise _stopped(options, started[0] if started else None, stop) from None


def _apply_to_store(
    options: SourceOptions,
    wanted: Limits,
    confirm: Callable[[ApplyPlan], bool],
    checkpoints: Callable[[], list[LiveCheckpoint] | None] | None,
    *,
    force: bool,
    dry_run: bool,
    started: list[ApplyPlan],
) -> ApplyOutcome:
    """apply_retention for a --nats-store: rehearsed on a copy, then applied to the store by a private server."""
    from mqctl.mq.nats.server import check_writable, store_root
    from mqctl.mq.sources import open_streams

    plan = rehearse(options, wanted)
    _guard_checkpoints(plan, checkpoints, force=force, dry_run=dry_run)
    if not plan.changes or dry_run:
        return ApplyOutcome(plan.source, dry_run, plan.changes, [], None, losses=plan.losses)
    check_writable(store_root(options.nats_store or ""))
    _confirmed(confirm, plan)
    started.append(plan)
    with interrupts.held() as interrupted:
        with open_streams(options, writable_store=True) as source:
            fresh = plan_apply(source, wanted)
            if fresh.targets() != plan.targets():
                raise PreconditionError(
                    f"{plan.source} changed since it was planned; nothing applied",
                    hint="run apply again to plan from the store as it is now",
                )
            applied = apply_plan(source, fresh, interrupted)
            mismatches = verify(source, fresh)
        if not mismatches:
            with open_streams(options) as reopened:  # the limits survive a restart of the store
                mismatches = verify(reopened, fresh)
    return ApplyOutcome(plan.source, False, plan.changes, applied, not mismatches, mismatches, losses=plan.losses)


def _stopped(options: SourceOptions, plan: ApplyPlan | None, stop: KeyboardInterrupt) -> Stopped:
    """What an interrupted apply says: nothing changed when it stopped before the first update was sent; else what
    the streams hold, read back from the store itself (a second Ctrl-C does not cut the read-back short)."""
    reason = interrupts.describe(stop)
    if plan is None:
        return Stopped(f"{reason} before any change: nothing changed")
    with interrupts.held():
        held, error = _read_back(options, plan)
    if error is not None:
        return Stopped(
            f"{reason} while the new limits were being applied; the streams could not be read back: {error}",
            hint="run `mqctl retention show` with the same source to see which limits each stream holds",
        )
    changed = sorted({c.stream for c in plan.changes})
    new = [s for s in changed if held.get(s) == "new"]
    old = [s for s in changed if held.get(s) == "old"]
    other = [s for s in changed if s not in new and s not in old]
    where = f"read back from {plan.source}"
    if len(new) == len(changed):
        return Stopped(
            f"{reason}; {where}: all {len(changed)} stream(s) hold the new limits",
            hint="the change is complete: `mqctl retention show` shows no drift left",
        )
    if len(old) == len(changed):
        return Stopped(f"{reason}; {where}: no stream was changed, all {len(changed)} keep their old limits")
    parts = [f"{len(new)} stream(s) hold the new limits ({', '.join(new)})"] if new else []
    parts += [f"{len(old)} keep the old ones ({', '.join(old)})"] if old else []
    parts += [f"{len(other)} hold neither ({', '.join(other)})"] if other else []
    return Stopped(
        f"{reason}; {where}: {'; '.join(parts)}",
        hint="run apply again to finish the change, or apply the old config to put the streams back",
    )


def _read_back(options: SourceOptions, plan: ApplyPlan) -> tuple[dict[str, str], str | None]:
    """Per planned stream, whether it now holds its "new" limits, its "old" ones, or neither ("other"); or why
    the store could not be read."""
    from mqctl.mq.sources import open_streams

    try:
        with open_streams(options) as source:
            left = plan_apply(source, plan.wanted).changes
    except MqctlError as err:
        return {}, err.message
    now = {(c.stream, c.limit): c.actual for c in left}  # a limit not listed holds its wanted value
    held = {}
    for stream in {c.stream for c in plan.changes}:
        planned = [c for c in plan.changes if c.stream == stream]
        if not any(c.stream == stream for c in left):
            held[stream] = "new"
        elif all((c.stream, c.limit) in now and now[(c.stream, c.limit)] == c.actual for c in planned):
            held[stream] = "old"
        else:
            held[stream] = "other"
    return held, None


def _confirmed(confirm: Callable[[ApplyPlan], bool], plan: ApplyPlan) -> None:
    if not confirm(plan):
        raise PreconditionError("not confirmed; nothing changed")


_NATS_WORDING = LossWording(
    change="the new limits",
    checkpoint="channel checkpoint",
    channels="vchannel(s)",
    show="`mqctl channels checkpoints`",
    deleted="messages",
)


def _guard_checkpoints(
    plan: ApplyPlan,
    read_checkpoints: Callable[[], list[LiveCheckpoint] | None] | None,
    *,
    force: bool,
    dry_run: bool,
) -> None:
    """guard_checkpoints in the terms of NATS streams."""
    losses = partial(checkpoint_losses, plan)
    guard_checkpoints(plan, read_checkpoints, losses, _NATS_WORDING, force=force, dry_run=dry_run)


def rehearse(options: SourceOptions, wanted: Limits) -> ApplyPlan:
    """The plan for a --nats-store, applied to a private copy first; its losses are what the copy lost."""
    from mqctl.mq.channels import data_warnings
    from mqctl.mq.nats.server import store_root
    from mqctl.mq.nats.store import read_store, written_by_nats_29
    from mqctl.mq.sources import open_streams, store_copy

    store = options.nats_store
    if store is None:
        raise InputError("a rehearsal needs --nats-store DIR")
    root = store_root(store)
    with store_copy(options) as copy:
        with open_streams(copy, writable_store=True) as source:
            source.description = f"nats-store:{Path(store).expanduser()}"
            source.store = root  # checked against the store's own files, not the copy the server changes
            damage = data_warnings(source)
            if damage:
                raise PreconditionError(
                    f"the store's data and metadata disagree ({'; '.join(damage)}); nothing changed",
                    hint="see `mqctl channels list --nats-store DIR`; restore the "
                    "store from a backup before changing its limits",
                )
            plan = plan_apply(source, wanted)
            if not plan.changes:
                return plan
            first_before = {d.name: d.first_seq for d in source.stream_details()}
            before = {d.name: d.messages for d in source.stream_details()}
            try:
                apply_plan(source, plan, [])  # a copy: a signal stops the rehearsal as anywhere else
            except PreconditionError as err:
                raise PreconditionError(
                    f"{err.message} (rehearsed on a copy: the store is unchanged)", hint=err.hint
                ) from err
            details = source.stream_details()
            after = {d.name: d.messages for d in details}
            plan.kept_from = {
                d.name: (first_before[d.name], d.first_seq)
                for d in details
                if d.name in first_before and d.first_seq > first_before[d.name]
            }
            plan.age_cutoff = {}  # the copy shows exactly where each stream was cut
        tombstoned = sorted(
            name for name, stream in read_store(store_root(copy.nats_store or "")).items() if stream.tombstones
        )
    plan.losses = [
        f"stream {name}: the new limits delete {before[name] - after.get(name, 0)} of its {before[name]} "
        f"message(s) at once (rehearsed on a copy of the store)"
        for name in before
        if after.get(name, 0) < before[name]
    ]
    if tombstoned and not written_by_nats_29(root):  # also after an earlier apply rewrote a 2.9 store's index
        plan.losses.append(
            f"stream(s) {', '.join(tombstoned)} end up empty: nats-server keeps each one's last "
            f"sequence in a tombstone that Milvus 2.3 (nats-server 2.9.17) would read as a message with "
            f"sequence 2^62+N; fine for Milvus 2.4/2.5"
        )
    elif tombstoned:
        raise PreconditionError(
            f"the new limits empty stream(s) {', '.join(tombstoned)}: mqctl's nats-server then keeps each "
            f"stream's last sequence in a delete tombstone, which the nats-server 2.9 that wrote this store "
            f"(Milvus 2.3) reads as a message with sequence 2^62+N; nothing changed",
            hint="raise natsmq.server.retention.maxAge/maxMsgs/maxBytes so every stream keeps a message, or start "
            "Milvus with its old config and run apply against its own server (--nats URL --force)",
        )
    return plan


def apply_plan(source: JetStreamSource, plan: ApplyPlan, interrupted: list[int]) -> list[str]:
    """Send every stream's new config; when one is refused, put back the streams already changed, so the
    streams either all hold the new limits or all keep the old ones (messages already deleted stay deleted).

    Called inside `interrupts.held()`: a stopping signal (`interrupted`) is acted on before each update (the
    changed streams go back, then Interrupted); one that comes after the last update is left to the caller,
    which verifies and reports the limits as applied, since they are."""
    done: list[str] = []
    for stream, (_, after) in sorted(plan._configs.items()):
        if interrupted:
            _restore(source, plan, done)
            raise interrupts.Interrupted(interrupted[0])
        try:
            source.update_config(stream, after)
        except MqctlError as err:
            unrestored = _restore(source, plan, done)
            restored = (
                f"put back the {len(done) - len(unrestored)} stream(s) already changed"
                if done
                else "no stream was changed"
            )
            if unrestored:
                restored += f"; could NOT put back {', '.join(unrestored)}"
            raise PreconditionError(
                f"stream {stream} refused the new limits: {err.message}; {restored}",
                hint="no stream holds the new limits; fix the cause and run apply again",
            ) from err
        done.append(stream)
    return done


def _restore(source: JetStreamSource, plan: ApplyPlan, streams: list[str]) -> list[str]:
    """Give the streams their old config back; the names of those that refused."""
    failed = []
    for stream in reversed(streams):
        try:
            source.update_config(stream, plan._configs[stream][0])
        except MqctlError:
            failed.append(stream)
    return failed


def verify(source: JetStreamSource, plan: ApplyPlan) -> list[str]:
    """Limits that still differ from the plan's targets, read back from the server."""
    return [
        f"{c.stream}: {c.limit} is {show_limit(c.limit, c.actual)}" for c in plan_apply(source, plan.wanted).changes
    ]
