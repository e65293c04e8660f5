"""Follow mode's positions, no Spark: the batch cap shared by backlog, the stream options checked, visibility up to
the last time tick (mqctl/replay/reader/positions.py; follow through the CLI: tests/cli/replay/test_follow.py)."""

from __future__ import annotations

import pytest

from mqctl.errors import InputError
from tests.helpers.paths import FIXTURES

ROCKSMQ = FIXTURES / "rocksmq" / "rdb_data"


DML_0 = "by-dev-rootcoord-dml_0"


# ---------------------------------------------------------------------------- stream.py's pure parts
def test_a_batch_cap_is_shared_by_backlog_and_never_exceeded():
    from mqctl.replay.reader.positions import share

    assert share({"a": 5, "b": 3}, 100) == {"a": 5, "b": 3}
    granted = share({"a": 900, "b": 90, "c": 10}, 100)
    assert granted == {"a": 90, "b": 9, "c": 1} and sum(granted.values()) == 100
    uneven = share({"a": 7, "b": 7, "c": 7}, 10)
    assert sum(uneven.values()) == 10 and all(count <= 7 for count in uneven.values())


def test_stream_options_are_checked():
    from mqctl.replay.reader.stream import stream_settings

    assert stream_settings({"startingOffsets": '{"x": 5}'}).starting == {"x": 5}
    assert stream_settings({"maxMessagesPerTrigger": "10"}).max_messages == 10
    assert stream_settings({}).fail_on_data_loss is True
    for bad in ({"startingOffsets": "soon"}, {"maxMessagesPerTrigger": "0"}, {"failOnDataLoss": "maybe"}, {"to": "1"}):
        with pytest.raises(InputError):
            stream_settings(bad)


def test_visibility_ends_after_the_last_time_tick_and_caps_count_stored_messages():
    from mqctl.mq.rocksmq.reader import RocksMQSource
    from mqctl.replay.reader.positions import count_messages, end_after, visible_end

    with RocksMQSource(ROCKSMQ) as source:
        first, last = source.id_range(DML_0)  # type: ignore[misc]
        ids = [raw.id for raw in source.iter_messages(DML_0)]
        assert visible_end(source, DML_0, first, last) == last + 1  # the fixture's channels end on a time tick
        assert visible_end(source, "by-dev-replicate-msg", 0, 5) == 6  # no time ticks there: all is visible
        assert count_messages(source, DML_0, first, last + 1) == len(ids) == 116
        assert end_after(source, DML_0, first, last + 1, 10) == ids[9] + 1
        assert count_messages(source, DML_0, first, ids[9] + 1) == 10
