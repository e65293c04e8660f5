"""What an executor checks before it reads: that it sees the source the driver planned against.

A RocksMQ or Woodpecker source is a local path: on a cluster an executor may not have it, or have another store
under the same name, and would then read nothing or something else. NATS must be reachable from
every executor, not just from the driver. Each failure names the executor's host and says the fix
in its message (the driver shows only the message of an executor's error).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import TypeVar

from mqctl.errors import MqctlError, PreconditionError
from mqctl.replay.reader.options import ReplayOptions

T = TypeVar("T")
SHARED_STORAGE_FIX = "put the RocksMQ directory on shared storage or replay from a copy"


def checked_read(opts: ReplayOptions, marker: str | None, read: Iterator[T]) -> Iterator[T]:
    """`read` (an executor's batches), after checking that this executor sees the planned store;
    source errors raised here name the host."""
    host = socket.gethostname()
    local = opts.rocksmq or opts.woodpecker
    if local:
        kind = "RocksMQ store" if opts.rocksmq else "Woodpecker folder" if "://" not in local else "Woodpecker bucket"
        fix = (
            SHARED_STORAGE_FIX
            if opts.rocksmq
            else "put the Woodpecker folder on shared storage or replay from a copy"
            if "://" not in local
            else "the endpoint must be reachable from every executor, with the bucket's keys in its environment "
            "(AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)"
        )
        try:
            source = opts.open_source()
        except MqctlError as err:
            raise PreconditionError(f"executor on {host} cannot see {local} ({err.message}): {fix}") from err
        try:
            seen = source.store_identity()
        finally:
            source.close()
        if marker is not None and seen != marker:
            raise PreconditionError(
                f"executor on {host} sees another {kind} at {local} than the driver planned with: {fix}"
            )
    try:
        yield from read
    except PreconditionError as err:
        if opts.nats:
            raise PreconditionError(
                f"executor on {host}: {err.message}: the NATS URL must be reachable from every "
                "executor, use an address of the NATS host that the workers can reach"
            ) from err
        raise
