"""The moment ages are measured against: the wall clock, or MQCTL_NOW for a report as of a fixed time.

Ages, lags, expiry and "oldest" all go through `now()`, so a report can be reproduced for a given moment
(`MQCTL_NOW=2027-01-01T00:00:00Z mqctl retention show ...`) and tests do not depend on the day they run.
Stamps of what mqctl does (journal times, backup names) keep the wall clock.
"""

from __future__ import annotations

import datetime as dt
import os

from mqctl.errors import InputError

NOW_VARIABLE = "MQCTL_NOW"


def now() -> dt.datetime:
    """MQCTL_NOW (ISO 8601; no zone means UTC) when set, else the wall clock; always timezone-aware."""
    text = os.environ.get(NOW_VARIABLE, "").strip()
    if not text:
        return dt.datetime.now(dt.timezone.utc)
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InputError(
            f"{NOW_VARIABLE}={text!r} is not an ISO 8601 time",
            hint="write it like 2027-01-01T00:00:00Z, or unset it to measure ages against the wall clock",
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


def utc_from_seconds(seconds: float | None) -> dt.datetime | None:
    """The UTC time `seconds` after the epoch, or None when there is none or it falls outside years 1-9999.

    Times come from stored bytes (TSOs, `_tt` properties, RocksMQ metadata) that a damaged or hostile input can
    set to anything: an out-of-range value is shown as no time, never an internal error."""
    if seconds is None:
        return None
    try:
        return dt.datetime.fromtimestamp(seconds, tz=dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
