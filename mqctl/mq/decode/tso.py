"""Milvus TSOs and wall-clock times, apart from the message decoders so that a listing that only needs the times
of its first and last messages does not load them (`mqctl.mq.decode.messages` re-exports these)."""

from __future__ import annotations

import datetime as dt

from mqctl.clock import utc_from_seconds

TSO_LOGICAL_BITS = 18  # Milvus TSO: (unix_ms << 18) | logical


def tso_to_datetime(tso: int | None) -> dt.datetime | None:
    """The wall-clock time (UTC) of a Milvus TSO, or None for 0/None and for a value no uint64 TSO can hold
    (a damaged `_tt` property or header: shown as no time, see `tso_out_of_range`)."""
    if not tso or tso_out_of_range(tso):
        return None
    return utc_from_seconds((tso >> TSO_LOGICAL_BITS) / 1000)


def tso_out_of_range(tso: int) -> bool:
    """A Milvus TSO is a uint64; anything else came from damaged or hostile bytes."""
    return not 0 <= tso < 1 << 64


def datetime_to_tso(when: dt.datetime) -> int:
    """The smallest TSO at or after a wall-clock time (for --from TIME)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.timezone.utc)
    return int(when.timestamp() * 1000) << TSO_LOGICAL_BITS
