"""RocksMQ retention as Milvus applies it (internal/mq/mqimpl/rocksmq/server/rocksmq_retention.go): acked pages
older than `retentionTimeInMinutes` or beyond `retentionSizeInMB` are purged; the first unacked page stops the
purge, so a consumer group that stopped reading blocks it for good (milvus #24106).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mqctl.findings import WARNING
from mqctl.mq.retention import ROCKS_SIZE_KEY, ROCKS_TIME_KEY, RULE_BLOCKED, age_seconds, check_64_bits, value_finding
from mqctl.mq.retention_model import ChannelRetention, ConfiguredRetention, RetentionReport
from mqctl.mq.rocksmq.model import RocksPage, RocksTopicMeta

if TYPE_CHECKING:
    from mqctl.mq.model import ChannelInfo

MAX_MINUTES = int(dt.timedelta.max.total_seconds() // 60)


@dataclass
class PagePurge:
    """Which closed pages Milvus's retention removes now, and which it never will."""

    purgeable: list[RocksPage]
    blocked: list[RocksPage]  # unacked pages closed longer ago than the retention time
    unacked: list[RocksPage]


def rocksmq_purge(pages: list[RocksPage], *, retention_minutes: int, retention_mb: int, now: dt.datetime) -> PagePurge:
    """Milvus's rule: walk pages in id order while they are acked; a page goes when its ack is older than the
    retention time, or while the acked pages left exceed the retention size. The first unacked page stops it."""
    acked_prefix = []
    for page in pages:
        if not page.acked:
            break
        acked_prefix.append(page)
    # beyond Python's timedelta (2.7 million years) nothing ever gets old enough
    limit_age = dt.timedelta(minutes=retention_minutes) if 0 < retention_minutes <= MAX_MINUTES else None
    limit_bytes = retention_mb * 1024 * 1024 if retention_mb > 0 else None
    purgeable = []
    remaining = sum(p.size for p in acked_prefix)
    for page in acked_prefix:
        too_old = limit_age is not None and page.acked_at is not None and now - page.acked_at > limit_age
        too_big = limit_bytes is not None and remaining > limit_bytes
        if not (too_old or too_big):
            break
        purgeable.append(page)
        remaining -= page.size
    unacked = [p for p in pages if not p.acked]
    blocked = [
        p for p in unacked if limit_age is not None and p.closed_at is not None and now - p.closed_at > limit_age
    ]
    return PagePurge(purgeable, blocked, unacked)


def rocksmq_report(
    description: str,
    mq: str,
    channels: list[ChannelInfo],
    meta: dict[str, RocksTopicMeta],
    configured: ConfiguredRetention,
    now: dt.datetime,
) -> RetentionReport:
    """Per topic (`channels` as listed, `meta` as `_meta_kv` has it): its pages, which of them retention purges
    now, and unacked pages it never purges."""
    time_value, size_value = configured.get(ROCKS_TIME_KEY), configured.get(ROCKS_SIZE_KEY)
    check_64_bits(time_value)
    check_64_bits(size_value)
    conf = {
        "retention_time_minutes": time_value.value,
        "retention_size_mb": size_value.value,
        "keys": {time_value.key: time_value.raw, size_value.key: size_value.raw},
        "from": sorted({time_value.where, size_value.where}),
    }
    rows = []
    for channel in channels:
        topic = meta.get(channel.name)
        pages = topic.pages if topic else []
        purge = rocksmq_purge(pages, retention_minutes=time_value.value, retention_mb=size_value.value, now=now)
        actual = {
            "messages": channel.messages,
            "bytes": channel.bytes,
            "pages": len(pages),
            "acked_pages": sum(p.acked for p in pages),
            "purgeable_pages": len(purge.purgeable),
            "reclaimable_bytes": sum(p.size for p in purge.purgeable),
            "unacked_pages": len(purge.unacked),
            "unacked_bytes": sum(p.size for p in purge.unacked),
            "never_purged_pages": len(purge.blocked),
            "open_page_bytes": topic.open_page_size if topic else 0,
            "oldest_message_age_seconds": age_seconds(channel.first_time, now),
            "newest_message_age_seconds": age_seconds(channel.last_time, now),
        }
        row = ChannelRetention(channel.name, conf, actual)
        if purge.blocked:
            cause = (
                f"unacked pages closed more than {time_value.value} min ago: RocksMQ purges only acked pages, so "
                f"these are never removed (#24106)"
            )
            row.add(
                value_finding(
                    RULE_BLOCKED,
                    WARNING,
                    f"topic {channel.name}: {len(purge.blocked)} unacked page(s), {actual['unacked_bytes']} bytes, closed more "
                    f"than {time_value.value} min ago: RocksMQ purges only acked pages, so these are never removed (#24106)",
                    time_value,
                    "a consumer group stopped reading this topic (e.g. a collection released or dropped while "
                    "loaded); once every group reads past the pages they are purged",
                ),
                cause,
            )
        rows.append(row)
    return RetentionReport(description, mq, rows, [f for r in rows for f in r.findings])
