"""An edit's backup never writes through a link planted at its name (the refusals through the CLI:
tests/cli/config/test_edit_targets.py)."""

from __future__ import annotations

import pytest

from mqctl.errors import PreconditionError
from tests.helpers.files import write_yaml


def test_a_backup_never_writes_through_a_link_at_its_name(tmp_path, monkeypatch):
    """The backup is created new (O_EXCL|O_NOFOLLOW): a link already at its name fails the edit, untouched."""
    from mqctl import files

    config = write_yaml(tmp_path, "mq:\n  type: rocksmq\n")
    victim = tmp_path / "victim"
    victim.write_text("keep me")

    monkeypatch.setattr(files, "backup_stamp", lambda: "20300101T000000000000Z")
    (tmp_path / "milvus.yaml.20300101T000000000000Z.bak").symlink_to(victim)
    with pytest.raises(PreconditionError):
        files.backup_copy(config)
    assert victim.read_text() == "keep me"
