"""The shape a decoded Milvus message takes, at the bottom of the decode package: the decoder fills it, the column
and schema readers take it, and none of them imports another for the type."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any


@dataclass
class DecodedMessage:
    """What mqctl knows about one message; `proto` holds the parsed request (not in JSON)."""

    type: str
    type_code: int
    tso: int | None = None
    time: dt.datetime | None = None
    collection: str | None = None
    collection_id: int | None = None
    partition: str | None = None
    partition_id: int | None = None
    segment_id: int | None = None
    shard: str | None = None
    rows: int = 0
    pks: list[int | str] = field(default_factory=list)
    pk_field: str | None = None
    payload_size: int = 0
    error: str | None = None
    detail: str | None = None  # 2.6: what a version-2 message says beyond these fields (bodies.py), one line
    _proto: Any = field(default=None, repr=False, compare=False)

    @property
    def proto(self) -> Any:
        return self._proto
