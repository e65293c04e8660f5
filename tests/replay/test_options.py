"""Replay options: bounds, sources, the collection and channel selection."""

from __future__ import annotations

import datetime as dt

import pytest

from mqctl.errors import InputError
from mqctl.mq.decode.messages import datetime_to_tso
from mqctl.replay.reader.options import Bound, parse_bound, parse_options


def test_bounds_accept_ids_tsos_and_times():
    assert parse_bound("120", "from", upper=False) == Bound("id", 120)
    assert parse_bound("seq:7", "from", upper=False) == Bound("id", 7)
    assert parse_bound("tso:470633384395407379", "from", upper=False) == Bound("tso", 470633384395407379)
    when = dt.datetime(2024, 5, 1, 12, tzinfo=dt.timezone.utc)
    assert parse_bound("2024-05-01T12:00:00Z", "from", upper=False) == Bound("tso", datetime_to_tso(when))
    # an upper time bound takes in every logical TSO of its millisecond
    assert parse_bound("2024-05-01T12:00:00+00:00", "to", upper=True).value == datetime_to_tso(when) + (1 << 18) - 1


def test_bad_bound_says_what_is_accepted():
    with pytest.raises(InputError) as err:
        parse_bound("yesterday", "from", upper=False)
    assert "tso:N" in err.value.message and "ISO-8601" in err.value.message


def test_options_need_exactly_one_source_and_a_collection_for_rows():
    with pytest.raises(InputError, match="exactly one source"):
        parse_options({})
    with pytest.raises(InputError, match="exactly one source"):
        parse_options({"nats": "nats://x", "rocksmq": "/x"})
    with pytest.raises(InputError, match="needs a collection"):
        parse_options({"nats": "nats://x", "shape": "rows"})
    with pytest.raises(InputError, match="unknown message type"):
        parse_options({"nats": "nats://x", "types": "insert,bogus"})
    with pytest.raises(InputError, match="select no insert or delete message"):
        parse_options({"nats": "nats://x", "collection": "items", "types": "timetick"})
    assert parse_options({"nats": "nats://x", "collection": "items", "types": "delete"}).types == frozenset({401})
    opts = parse_options({"NATS": "nats://x", "Types": "insert, Delete", "channels": "a, b_*", "partitions": "3"})
    assert opts.types == frozenset({400, 401}) and opts.channels == ["a", "b_*"] and opts.partitions == 3


def test_channel_selection_by_name_and_glob():
    opts = parse_options({"nats": "nats://x", "channels": "dml_1,dml_1*,extra_*"})
    known = ["dml_1", "dml_10", "extra_a", "other"]
    assert opts.select_channels(known) == ["dml_1", "dml_10", "extra_a"]
    with pytest.raises(InputError, match="unknown channel 'nope'"):
        parse_options({"nats": "nats://x", "channels": "nope"}).select_channels(known)
    with pytest.raises(InputError, match="no channel matches"):
        parse_options({"nats": "nats://x", "channels": "zz_*"}).select_channels(known)
