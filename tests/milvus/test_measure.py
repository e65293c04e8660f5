"""The arithmetic and the report of `mqctl.milvus.measure` (the timing itself needs a real Milvus: see
tests/e2e/test_rehearse.py, which rehearses with --measure)."""

from __future__ import annotations

import pytest

from mqctl.errors import InputError
from mqctl.milvus.measure import (
    KB,
    ROW_PAYLOAD_MAX,
    InsertRate,
    Latency,
    Measurement,
    MeasureSettings,
    compare,
    latency,
    parse_sizes,
    payload_rows,
    percentile,
    size_label,
)


def test_percentile_interpolates_between_ranks_like_numpy():
    values = [float(v) for v in range(1, 101)]  # 1..100, shuffled order must not matter
    shuffled = values[::-1]
    assert percentile(shuffled, 50) == pytest.approx(50.5)
    assert percentile(shuffled, 99) == pytest.approx(99.01)
    assert percentile(shuffled, 0) == 1.0 and percentile(shuffled, 100) == 100.0
    assert percentile([4.0], 99) == 4.0
    assert percentile([1.0, 2.0], 25) == pytest.approx(1.25)


def test_percentile_refuses_no_values_and_a_bad_rank():
    with pytest.raises(ValueError, match="no values"):
        percentile([], 50)
    with pytest.raises(ValueError, match="between 0 and 100"):
        percentile([1.0], 101)


def test_latency_reports_milliseconds_from_seconds():
    stats = latency([0.001] * 98 + [0.010, 0.100])
    assert stats.count == 100
    assert stats.p50_ms == pytest.approx(1.0)
    assert stats.p99_ms == pytest.approx(10.9)  # between the 99th (10 ms) and 100th (100 ms) value
    assert stats.mean_ms == pytest.approx((98 * 1 + 10 + 100) / 100)


def test_an_insert_rate_derives_its_figures():
    rate = InsertRate(64 * KB, 20, 0.5)
    assert rate.per_second == 40.0 and rate.mb_per_second == 2.5 and rate.ms_per_insert == 25.0


def test_payload_rows_add_up_to_the_message_size():
    for size in (1, KB, 64 * KB, 64 * KB + 1, 1024 * KB):
        rows = payload_rows(size, first_id=10)
        payloads = [str(r["payload"]) for r in rows]
        assert sum(len(p) for p in payloads) == size
        assert all(len(p) <= ROW_PAYLOAD_MAX for p in payloads)
        assert [r["id"] for r in rows] == list(range(10, 10 + len(rows)))


def test_sizes_parse_and_print_in_binary_units():
    assert parse_sizes("1KB, 64kb,1MB,512") == (1024, 65536, 1048576, 512)
    assert [size_label(s) for s in (512, 1024, 65536, 1048576, 1536)] == ["512 B", "1 KB", "64 KB", "1 MB", "1536 B"]
    with pytest.raises(InputError, match="not a size"):
        parse_sizes("64 GB")
    with pytest.raises(InputError, match="name no size"):
        parse_sizes(" , ")


def test_settings_bound_the_number_of_inserts_and_refuse_nonsense():
    settings = MeasureSettings(insert_bytes=1024 * KB, min_inserts=20, max_inserts=500)
    assert settings.inserts_for(KB) == 500  # 1024 would exceed the cap
    assert settings.inserts_for(16 * KB) == 64
    assert settings.inserts_for(1024 * KB) == 20  # one would be too few to time
    with pytest.raises(InputError, match="searches 0"):
        MeasureSettings(searches=0)


def measurement(search_ms: float, query_ms: float, insert_seconds: dict[int, float]) -> Measurement:
    return Measurement(
        rows=1000,
        dim=8,
        consistency="Bounded",
        search=Latency(100, search_ms, search_ms * 3, search_ms * 1.2),
        query=Latency(100, query_ms, query_ms * 3, query_ms * 1.1),
        inserts=[InsertRate(size, 10, seconds) for size, seconds in insert_seconds.items()],
    )


def test_a_rocksmq_to_nats_comparison_sits_beside_the_announcement():
    before = measurement(10.0, 4.0, {KB: 0.05, 64 * KB: 0.2, 4 * KB: 0.1})
    after = measurement(8.0, 5.0, {KB: 0.06, 64 * KB: 0.1})  # no 4 KB figure after: that row is left out
    result = compare("rocksmq", "natsmq", before, after)
    rows = {f.metric: f for f in result.figures}
    assert list(rows) == [
        "search p50",
        "search p99",
        "search mean",
        "query p50",
        "query p99",
        "query mean",
        "insert 1 KB",
        "insert 64 KB",
    ]
    assert rows["search p50"].ratio == 0.8 and rows["query p50"].ratio == 1.25
    assert rows["search mean"].before == 12.0 and rows["search mean"].after == pytest.approx(9.6)
    assert rows["search mean"].announced_ratio == round(20.17 / 23.55, 3)  # the announcement's averages
    assert rows["query mean"].announced_ratio == round(6.74 / 7.2, 3)
    assert rows["search p50"].announced_ratio is None  # the announcement gives averages only
    assert (rows["insert 1 KB"].unit, rows["insert 1 KB"].before, rows["insert 1 KB"].after) == ("ms/insert", 5.0, 6.0)
    assert rows["insert 1 KB"].announced_ratio == round(2.629391004 / 0.897638581, 3)  # RocksMQ ahead under 64 KB
    assert (
        rows["insert 64 KB"].ratio == 0.5 and (rows["insert 64 KB"].announced_ratio or 1) < 1
    )  # NATS ahead from 64 KB


def test_other_directions_carry_no_announced_ratio():
    before, after = measurement(10.0, 4.0, {KB: 0.05}), measurement(8.0, 5.0, {KB: 0.06})
    assert all(f.announced_ratio is None for f in compare("natsmq", "rocksmq", before, after).figures)
    zero = measurement(0.0, 4.0, {})
    assert compare("rocksmq", "natsmq", zero, after).figures[0].ratio is None  # no division by zero
