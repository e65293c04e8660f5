"""Where a Woodpecker position continues (the next entry, or the next segment's first): what `replay --from
checkpoint` on a Woodpecker WAL relies on (the CLI's runs: tests/cli/replay/test_woodpecker_from_checkpoint.py)."""

from __future__ import annotations


def test_the_entry_after_a_position_is_the_next_one_or_the_next_segments_first():
    from mqctl.replay.reader.woodpecker import continues

    span = 10**10
    assert continues(3 * span + 5, 3 * span + 5) and continues(3 * span + 5, 3 * span + 2)
    assert continues(3 * span + 5, 4 * span)  # 3/4 was the last entry of segment 3, truncated with it
    assert not continues(3 * span + 5, 3 * span + 6) and not continues(3 * span + 5, 4 * span + 1)
    assert not continues(3 * span + 5, 5 * span)
