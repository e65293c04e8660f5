"""Replay's resume state: written atomically, refused for another job, broken files named by line."""

from __future__ import annotations

import json

import pytest

from mqctl.errors import InputError
from mqctl.replay.resume import ResumeState


def test_checkpoint_is_written_atomically_and_resumes_after_the_last_id(tmp_path):
    path = tmp_path / "state" / "ckpt.json"
    fresh = ResumeState.load(path)
    assert fresh.runs == 0 and fresh.start_after("ch", 10) == 10
    fresh.advanced("rocksmq:/d", "/out", {"ch": 20}).save()
    loaded = ResumeState.load(path)
    assert (loaded.runs, loaded.positions, loaded.next_run) == (1, {"ch": 20}, 2)
    assert loaded.start_after("ch", 10) == 21 and loaded.start_after("other", 5) == 5
    assert [p.name for p in path.parent.iterdir()] == ["ckpt.json"]  # no temp file left behind
    with pytest.raises(InputError, match="belongs to a replay of rocksmq:/d"):
        loaded.check_belongs_to("nats://h:4222", "/out")


def test_checkpoint_refuses_another_collection_shape_or_type_selection(tmp_path):
    path = tmp_path / "ckpt.json"
    items = {"channels": "", "shape": "rows", "collection": "items", "types": ""}
    ResumeState.load(path).advanced("rocksmq:/d", "/out", {"ch": 20}, items).save()
    loaded = ResumeState.load(path)
    loaded.check_belongs_to("rocksmq:/d", "/out", dict(items))  # the same selection resumes
    with pytest.raises(InputError) as caught:
        loaded.check_belongs_to("rocksmq:/d", "/out", {**items, "collection": "skus", "types": "insert"})
    assert (
        "belongs to a replay of collection items, types (all), not of collection skus, types insert"
        in caught.value.one_line()
    )
    legacy = json.loads(path.read_text())
    del legacy["selection"]  # a checkpoint written before selections were recorded still resumes
    path.write_text(json.dumps(legacy))
    ResumeState.load(path).check_belongs_to("rocksmq:/d", "/out", {**items, "collection": "skus"})


def test_broken_checkpoint_names_file_and_line(tmp_path):
    path = tmp_path / "ckpt.json"
    path.write_text('{"format": "mqctl-replay-checkpoint/1",\n "positions": {')
    with pytest.raises(InputError) as err:
        ResumeState.load(path)
    assert (err.value.location or "").startswith(f"{path}:2:")
    path.write_text(json.dumps({"something": "else"}))
    with pytest.raises(InputError, match="not a replay checkpoint"):
        ResumeState.load(path)
