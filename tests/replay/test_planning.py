"""Partition planning: spans follow message counts and cover every id once."""

from __future__ import annotations

import itertools

from mqctl.replay.model import ChannelSpan
from mqctl.replay.reader.planning import split_spans


def test_split_follows_message_counts_and_covers_every_id_once():
    spans = [ChannelSpan("big", 1, 900, 900), ChannelSpan("small", 1000, 1099, 100)]
    pieces = split_spans(spans, 10, 50_000)
    assert len(pieces) == 10
    assert sum(1 for p in pieces if p.channel == "big") == 9
    for span in spans:
        mine = sorted((p.first, p.last) for p in pieces if p.channel == span.channel)
        assert mine[0][0] == span.first and mine[-1][1] == span.last
        assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(mine))  # contiguous, no overlap
    assert sum(p.messages for p in pieces) == 1000


def test_default_partitions_follow_the_data():
    spans = [ChannelSpan("a", 1, 120_000, 120_000), ChannelSpan("b", 1, 10, 10)]
    pieces = split_spans(spans, None, 50_000)  # ceil(120010 / 50000) = 3, and b gets its own
    assert [(p.channel, p.messages) for p in pieces] == [("a", 60_000), ("a", 60_000), ("b", 10)]
    assert len(split_spans([ChannelSpan("tiny", 5, 6, 2)], 8, 50_000)) == 2  # never more pieces than ids
