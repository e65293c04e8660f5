"""The structure around the CRCs (issue 29, class 1) where the replay source meets it: the strict source stops at a
structural problem, and the footer is written as cited (the damages through `channels woodpecker`:
tests/cli/channels/test_woodpecker_structure.py)."""

from __future__ import annotations

import struct

import pytest

from tests.helpers import woodpecker_segments as w


def test_the_strict_replay_source_stops_at_a_structural_problem(tmp_path):
    """The strict reader replay uses stops with one line at a gap in the blocks, where it used to read on."""
    from mqctl.errors import PreconditionError
    from mqctl.mq.woodpecker.source import WoodpeckerSource

    w.missing_middle_block(tmp_path)
    with WoodpeckerSource(tmp_path, strict=True) as source, pytest.raises(PreconditionError) as raised:
        list(source.iter_messages("7"))
    assert "corrupt Woodpecker segment: log 7 segment 0 block 1" in raised.value.message
    assert "1.blk is missing (2.blk follows)" in raised.value.message


def test_footer_struct_written_as_cited():
    """The footer the damages rewrite is the helper's own (so the cases above change only what they say)."""
    data = w.footer(2, 6, 0, 0, 10)
    assert struct.unpack_from("<i", data, 9)[0] == 2
