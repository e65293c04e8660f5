"""A support bundle whose write fails midway leaves no partial file (the bundle through the CLI, secrets planted
everywhere mqctl reads: tests/cli/bundle/test_bundle.py)."""

from __future__ import annotations

import pytest


def test_a_write_that_fails_midway_removes_its_partial_file(tmp_path, monkeypatch):
    """A full disk: the archive's write fails after the temporary file exists; one error, nothing left."""
    import os

    from mqctl.doctor import bundle
    from mqctl.errors import PreconditionError

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    manifest = bundle.Manifest("now", "0", "ok", {}, [bundle.Part("a.txt", "a")])
    with pytest.raises(PreconditionError, match="No space left on device"):
        bundle.write_archive(tmp_path / "b.tar.gz", {"a.txt": b"a"}, manifest, lambda m: {"parts": 1})
    assert list(tmp_path.iterdir()) == []
