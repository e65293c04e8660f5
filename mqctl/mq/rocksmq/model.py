"""What RocksMQ's `_meta_kv` says about its topics and pages: the shapes the reader fills and retention judges, at the
bottom of the package so that neither has to import the other for a type."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field


@dataclass
class RocksPage:
    """One closed RocksMQ page: messages with ids up to end_id."""

    end_id: int
    size: int  # payload bytes, as Milvus counts them for retention
    closed_at: dt.datetime | None
    acked_at: dt.datetime | None  # set once every consumer group read past the page (#24106)

    @property
    def acked(self) -> bool:
        return self.acked_at is not None


@dataclass
class RocksTopicMeta:
    """What `_meta_kv` says about one topic."""

    name: str
    created_at: dt.datetime | None = None
    open_page_size: int = 0
    pages: list[RocksPage] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return self.open_page_size + sum(p.size for p in self.pages)
