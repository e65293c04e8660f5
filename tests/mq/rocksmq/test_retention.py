"""RocksMQ's purge rule: which pages Milvus deletes, and when."""

from __future__ import annotations

import datetime as dt

from mqctl.mq.rocksmq.model import RocksPage
from mqctl.mq.rocksmq.retention import rocksmq_purge


def _page(end_id, size, closed_min_ago, acked_min_ago, now):
    at = lambda minutes: None if minutes is None else now - dt.timedelta(minutes=minutes)  # noqa: E731
    return RocksPage(end_id, size, at(closed_min_ago), at(acked_min_ago))


def test_rocksmq_purge_rule():
    now = dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc)
    pages = [
        _page(1, 100, 90, 80, now),
        _page(2, 100, 70, 60, now),
        _page(3, 100, 50, 40, now),
        _page(4, 100, 45, None, now),
        _page(5, 100, 10, 5, now),
    ]
    by_time = rocksmq_purge(pages, retention_minutes=55, retention_mb=0, now=now)
    assert [p.end_id for p in by_time.purgeable] == [1, 2]
    assert [p.end_id for p in by_time.unacked] == [4] and by_time.blocked == []
    late = rocksmq_purge(pages, retention_minutes=30, retention_mb=0, now=now)
    assert [p.end_id for p in late.purgeable] == [1, 2, 3]  # page 5 waits behind unacked page 4
    assert [p.end_id for p in late.blocked] == [4]
    tiny = rocksmq_purge(
        [_page(i, 1024 * 1024, 1, 1, now) for i in range(1, 5)], retention_minutes=0, retention_mb=2, now=now
    )
    assert [p.end_id for p in tiny.purgeable] == [1, 2]  # purged until 2 MB are left
