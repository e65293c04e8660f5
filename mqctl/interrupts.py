"""Signals that end a command (SIGINT, SIGTERM, SIGHUP) as one exception, so cleanup runs on every exit path.

A command stopped by a signal unwinds like Ctrl-C: `finally` blocks stop private servers and remove private
copies, and the CLI reports "interrupted (SIGTERM)" with exit 3. Inside an asyncio loop a signal cancels the
running task instead of raising in whatever callback runs, so no "Task exception was never retrieved" is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

T = TypeVar("T")
STOPPING_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """A stopping signal arrived; `signal_name` says which (SIGINT reads as Ctrl-C)."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signum)
        self.signum = signum

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name


def describe(err: BaseException | None) -> str:
    """How an interrupted command says why it stopped."""
    if isinstance(err, Interrupted) and err.signum != signal.SIGINT:
        return f"interrupted ({err.signal_name})"
    return "interrupted (Ctrl-C)"


def _raise(signum: int, _frame: object) -> None:
    raise Interrupted(signum)


def install() -> None:
    """Every stopping signal raises Interrupted in the main thread (the CLI calls this once at start)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in STOPPING_SIGNALS:
        if signal.getsignal(signum) in (signal.SIG_DFL, signal.default_int_handler, _raise):
            signal.signal(signum, _raise)


_holds: list[list[int]] = []  # the active holds, innermost last


@contextlib.contextmanager
def _cancelling(loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any], received: list[int]) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread() or _holds:
        yield  # signals are being held: the hold records them, the task runs on
        return

    def cancel(signum: int, _frame: object) -> None:
        received.append(signum)
        loop.call_soon_threadsafe(task.cancel)

    previous = {signum: signal.signal(signum, cancel) for signum in STOPPING_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def run_until_complete(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]) -> T:
    """`loop.run_until_complete(coro)`, where a stopping signal cancels the coroutine and then raises
    Interrupted once the loop is idle again."""
    task = loop.create_task(coro)
    received: list[int] = []
    with _cancelling(loop, task, received):
        try:
            return loop.run_until_complete(task)
        except asyncio.CancelledError:
            if received:
                raise Interrupted(received[0]) from None
            raise


@contextlib.contextmanager
def held() -> Iterator[list[int]]:
    """Record stopping signals instead of acting on them while the block runs; the caller reads the list and
    decides (e.g. undo what it started, or finish a change that is already made and report it as made)."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = {signum: signal.signal(signum, lambda s, _f: received.append(s)) for signum in STOPPING_SIGNALS}
    _holds.append(received)
    try:
        yield received
    finally:
        _holds.remove(received)
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Hold stopping signals while cleanup runs (stopping a private server, removing a copy); one that came
    in the meantime is raised at the end, so a second Ctrl-C cannot leave the cleanup half done."""
    with held() as received:
        yield
    if received:
        raise Interrupted(received[0])


class StopRequests:
    """Stopping signals received while a long job asked to finish its current step first (see `requested_stop`)."""

    def __init__(self) -> None:
        self.received: list[int] = []

    def __bool__(self) -> bool:
        return bool(self.received)

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.received[0]).name if self.received else ""


@contextlib.contextmanager
def requested_stop() -> Iterator[StopRequests]:
    """The first stopping signal only asks the job to stop (it finishes its current step, then ends normally);
    a second one interrupts at once, as everywhere else."""
    requests = StopRequests()
    if threading.current_thread() is not threading.main_thread():
        yield requests
        return

    def ask(signum: int, _frame: object) -> None:
        if requests.received:
            raise Interrupted(signum)
        requests.received.append(signum)

    previous = {signum: signal.signal(signum, ask) for signum in STOPPING_SIGNALS}
    try:
        yield requests
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
