"""Rollback planning: undo exactly what the journal says was done."""

from __future__ import annotations

import pytest

from mqctl.migrate.record.evidence import BackupEvidence
from mqctl.migrate.record.journal import DONE, Journal
from mqctl.migrate.run import rollback_steps


@pytest.mark.parametrize(
    "done, cleaned, expected",
    [
        (["preflight", "stop-writes"], False, ["resume-writes"]),
        (["preflight", "stop-writes", "flush", "stop"], False, ["flush", "stop", "start", "verify", "resume-writes"]),
        (
            ["preflight", "stop-writes", "flush", "stop", "switch", "start", "verify", "resume-writes", "backup"],
            True,
            ["stop-writes", "flush", "stop", "restore-config", "restore-data", "start", "verify", "resume-writes"],
        ),
    ],
)
def test_rollback_undoes_what_was_done(tmp_path, done, cleaned, expected):
    journal = Journal.new(tmp_path / "j.json", "rocksmq", "natsmq", {})
    for name in done:
        journal.step(name).status = DONE
    if cleaned:
        journal.evidence("backup", BackupEvidence).deleted = ["/x"]
    assert rollback_steps(journal) == expected
