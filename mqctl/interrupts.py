"""Signals that end a command (SIGINT, SIGTERM, SIGHUP) as one exception, so cleanup runs on every exit path.

A command stopped by a signal unwinds like Ctrl-C: `finally` blocks stop private servers and remove private
copies, and the CLI reports "interrupted (SIGTERM)" with exit 3. Inside an asyncio loop a signal cancels the
running task instead of raising in whatever callback runs, so no "Task exception was never retrieved" is left.

One handler is installed once for every stopping signal and stays; what a signal does is decided by the
innermost *mode* on a stack (hold it, ask the job to stop, cancel the running task), pushed and popped by the
context managers below. Entering or leaving a mode is one list operation, so a signal can never find the
handlers half swapped, and a mode is removed by identity, never by equality (two holds that recorded the same
signals are equal lists: removing "the first equal one" used to remove the wrong hold, and the next one then
failed with `list.remove(x): x not in list`).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # asyncio loads with the commands that run a loop: installing the handlers stays instant
    import asyncio

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


class _Mode:
    """What a stopping signal does while this mode is the innermost one; `holds` marks a hold."""

    def __init__(self, act: Callable[[int], None], *, holds: bool = False):
        self.act = act
        self.holds = holds


_modes: list[_Mode] = []  # the active modes, innermost last


def _dispatch(signum: int, _frame: object) -> None:
    if _modes:
        _modes[-1].act(signum)
        return
    raise Interrupted(signum)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def install() -> None:
    """Every stopping signal raises Interrupted in the main thread (the CLI calls this first thing at start)."""
    from mqctl import _stop_before_start

    if not _in_main_thread():
        return
    for signum in STOPPING_SIGNALS:
        if signal.getsignal(signum) in (signal.SIG_DFL, signal.default_int_handler, _dispatch, _stop_before_start):
            signal.signal(signum, _dispatch)


def reclaim() -> None:
    """Put mqctl's handler back after a library replaced it (PySpark's SparkContext installs its own SIGINT
    handler, which calls into the JVM from inside the signal and leaves py4j tracebacks behind): Ctrl-C then
    unwinds like any other stopping signal. Only where `install()` ran, i.e. in the CLI's process."""
    if _in_main_thread() and signal.getsignal(signal.SIGTERM) is _dispatch:
        for signum in STOPPING_SIGNALS:
            signal.signal(signum, _dispatch)


def installed() -> bool:
    return signal.getsignal(signal.SIGINT) is _dispatch


@contextlib.contextmanager
def _mode(act: Callable[[int], None], *, holds: bool = False) -> Iterator[None]:
    """Push a mode for the block. Where `install()` was not called (mqctl used as a library, the tests' in-process
    runner), the dispatching handler is put in place for the block and the previous handlers after it."""
    mode = _Mode(act, holds=holds)
    previous: dict[signal.Signals, Any] = {}
    if not installed():
        for signum in STOPPING_SIGNALS:
            previous[signum] = signal.signal(signum, _dispatch)
    _modes.append(mode)
    try:
        yield
    finally:
        for index in range(len(_modes) - 1, -1, -1):
            if _modes[index] is mode:
                del _modes[index]
                break
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def holding() -> bool:
    """True inside `held()`: stopping signals are being recorded, not acted on."""
    return any(mode.holds for mode in _modes)


@contextlib.contextmanager
def _cancelling(loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any], received: list[int]) -> Iterator[None]:
    if not _in_main_thread() or holding():
        yield  # signals are being held: the hold records them, the task runs on
        return

    def cancel(signum: int) -> None:
        received.append(signum)
        loop.call_soon_threadsafe(task.cancel)

    with _mode(cancel):
        yield


def run_until_complete(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]) -> T:
    """`loop.run_until_complete(coro)`, where a stopping signal cancels the coroutine and then raises
    Interrupted once the loop is idle again."""
    import asyncio

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
    if not _in_main_thread():
        yield received
        return
    with _mode(received.append, holds=True):
        yield received


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
    if not _in_main_thread():
        yield requests
        return

    def ask(signum: int) -> None:
        if requests.received:
            raise Interrupted(signum)
        requests.received.append(signum)

    with _mode(ask):
        yield requests


def after_result(code: int) -> None:
    """Once a command's exit code is decided and its output written, a stopping signal can change neither:
    it ends the process at once with that code (flushing what is buffered), instead of raising inside the
    interpreter's shutdown, where it would print a traceback or turn exit 0 into 130/143."""
    import os
    import sys

    def leave(_signum: int, _frame: object) -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)

    if _in_main_thread():
        for signum in STOPPING_SIGNALS:
            signal.signal(signum, leave)
