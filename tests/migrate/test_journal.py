"""The migration journal: round trips, evidence kept as read, no password, and the step names it owns."""

from __future__ import annotations

import json

import pytest

from mqctl.errors import PreconditionError
from mqctl.migrate.record.evidence import WritesEvidence
from mqctl.migrate.record.journal import COMPLETED, DONE, Journal, archive_finished


def test_journal_round_trip_and_refusal_of_unfinished(tmp_path):
    path = tmp_path / ".mqctl-migrate.json"
    journal = Journal.new(path, "rocksmq", "natsmq", {"configs": ["x"], "to": "natsmq", "milvus": {"uri": "http://m"}})
    journal.step("preflight").status = DONE
    journal.step("stop-writes").status = DONE
    journal.save()
    loaded = Journal.load(path)
    assert loaded.step("stop-writes").status == DONE and loaded.target_mq == "natsmq"
    with pytest.raises(PreconditionError, match="unfinished migration"):
        archive_finished(path)
    loaded.state = COMPLETED
    loaded.save()
    moved = archive_finished(path)
    assert moved is not None and moved.exists() and not path.exists()


def test_journal_evidence_is_written_back_exactly_as_read(tmp_path):
    """Typed evidence: a journal reads and writes the same JSON, keys it does not know and nulls inside kept,
    keys a step never saw left out."""
    path = tmp_path / ".mqctl-migrate.json"
    journal = Journal.new(path, "rocksmq", "natsmq", {"configs": ["x"], "to": "natsmq", "milvus": {"uri": "http://m"}})
    journal.save()
    data = json.loads(path.read_text())
    data["steps"][1]["status"] = "failed"
    data["steps"][1]["evidence"] = {"old": {"file": None}, "mechanism": "file", "needs_event": False, "later": [1]}
    data["steps"][2]["evidence"] = {
        "checkpoints": [{"vchannel": "v0", "ts_before": None}],
        "checkpoint_wait_seconds": 0,
    }
    path.write_text(json.dumps(data))
    loaded = Journal.load(path)
    assert loaded.evidence("stop-writes", WritesEvidence).old == {"file": None}
    assert loaded.step("stop-writes").status == "failed" and f"{loaded.step('stop-writes').status}" == "failed"
    loaded.save()
    again = json.loads(path.read_text())
    assert [s["evidence"] for s in again["steps"]] == [s["evidence"] for s in data["steps"]]
    assert again["steps"][0]["evidence"] == {} and again["schema_version"] == 1


def test_the_journal_holds_no_password_of_milvus_or_etcd():
    from mqctl.migrate.options import MigrateOptions
    from mqctl.milvus.client import MilvusTarget

    options = MigrateOptions(
        configs=["/etc/milvus.yaml"],
        to="natsmq",
        milvus=MilvusTarget("http://127.0.0.1:19530", user="root", password="Milvus-S3cret"),
        etcd="http://etcduser:Etcd-S3cret@127.0.0.1:2379",
    )
    journaled = json.dumps(options.journaled())
    assert "S3cret" not in journaled
    assert options.journaled()["etcd"] == "http://etcduser@127.0.0.1:2379"
    assert options.journaled()["milvus"]["user"] == "root" and options.journaled()["milvus"]["password_set"] is True


def test_the_registry_runs_exactly_the_steps_the_journal_names():
    """The journal owns the step names (it validates journals without importing the executor)."""
    from mqctl.migrate.executor import REGISTRY
    from mqctl.migrate.record.journal import MIGRATION_STEPS, ROLLBACK_STEPS

    assert {name for name, step in REGISTRY.items() if step.forward} == set(MIGRATION_STEPS)
    assert {name for name, step in REGISTRY.items() if step.back} == set(ROLLBACK_STEPS)
