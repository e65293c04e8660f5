"""Pure logic of the migration: journal, log matching, backup archives, rollback planning."""

from __future__ import annotations

import datetime as dt

import pytest

from mqctl.errors import PreconditionError
from mqctl.migrate.backup import archive_dirs, restore_archive, verify_archive
from mqctl.migrate.hooks import MilvusLog, log_time, run_command
from mqctl.migrate.journal import COMPLETED, DONE, Journal, archive_finished
from mqctl.migrate.run import rollback_steps
from mqctl.migrate.steps import INIT_MQ, update_event

EVENT = ('[2026/11/22 05:07:12.265 +00:00] [INFO] [config/manager.go:315] ["receive update event"] '
         '[event="{\\"EventSource\\":\\"FileSource\\",\\"EventType\\":\\"UPDATE\\",\\"Key\\":'
         '\\"quotaandlimits.limitwriting.forcedeny\\",\\"Value\\":\\"true\\",\\"HasUpdated\\":false}"]')
INIT = '[2026/11/22 05:03:46.032 +00:00] [INFO] [dependency/factory.go:84] ["try to init mq"] [standalone=true] [mqType=natsmq]'


def test_update_event_matches_the_value_milvus_logged():
    assert update_event("true")(EVENT)
    assert not update_event("false")(EVENT)
    assert not update_event("true")(EVENT.replace("forcedeny", "forcedenyreading"))


def test_init_mq_line_and_log_time():
    assert INIT_MQ.search(INIT).group(1) == "natsmq"
    assert log_time(INIT) == dt.datetime(2026, 11, 22, 5, 3, 46, 32000, tzinfo=dt.timezone.utc)
    assert log_time("no time here") is None


def test_log_reads_only_after_offset_and_time(tmp_path):
    log = tmp_path / "milvus.log"
    log.write_text(INIT.replace("natsmq", "rocksmq") + "\n")
    reader = MilvusLog(file=str(log))
    offset = reader.mark()
    with log.open("a") as handle:
        handle.write(INIT + "\n")
    since = dt.datetime(2026, 11, 22, 5, 0, tzinfo=dt.timezone.utc)
    assert reader.lines_since(offset, since) == [INIT]
    assert reader.lines_since(0, since + dt.timedelta(hours=1)) == []
    by_command = MilvusLog(command=f"cat {log}")
    assert by_command.wait_for(lambda line: "mqType=natsmq" in line, offset=0, since=since, timeout=1) == INIT


def test_commands_run_without_a_shell_unless_asked():
    assert run_command("echo 'a b' $HOME").output_tail == "a b $HOME\n"
    assert run_command("echo $((1+2))", shell=True).output_tail == "3\n"
    missing = run_command("no-such-program-here")
    assert missing.returncode is None and "not found" in missing.output_tail


def test_backup_round_trip_and_tamper_detection(tmp_path):
    data = tmp_path / "rdb_data"
    (data / "sub").mkdir(parents=True)
    (data / "000005.log").write_bytes(b"wal" * 1000)
    (data / "sub" / "CURRENT").write_text("MANIFEST-000004\n")
    made = archive_dirs([data], tmp_path / "backup", "rocksmq-test")
    assert made["files"] == 2 and made["bytes"] == 3000 + 16
    verify_archive(tmp_path / "backup" / "mq-rocksmq-test.tar.gz", made["manifest"])
    tampered = {k: {**v, "sha256": "0" * 64} for k, v in made["manifest"].items()}
    with pytest.raises(PreconditionError, match="does not match"):
        verify_archive(tmp_path / "backup" / "mq-rocksmq-test.tar.gz", tampered)
    with pytest.raises(PreconditionError, match="not empty"):
        restore_archive(tmp_path / "backup" / "mq-rocksmq-test.tar.gz", made["manifest"], made["dirs"])
    import shutil

    shutil.rmtree(data)
    restore_archive(tmp_path / "backup" / "mq-rocksmq-test.tar.gz", made["manifest"], made["dirs"])
    assert (data / "000005.log").read_bytes() == b"wal" * 1000


def test_journal_round_trip_and_refusal_of_unfinished(tmp_path):
    path = tmp_path / ".mqctl-migrate.json"
    journal = Journal.new(path, "rocksmq", "natsmq", {"configs": ["x"]})
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
    assert moved.exists() and not path.exists()


@pytest.mark.parametrize("done, cleaned, expected", [
    (["preflight", "stop-writes"], False, ["resume-writes"]),
    (["preflight", "stop-writes", "flush", "stop"], False, ["flush", "stop", "start", "verify", "resume-writes"]),
    (["preflight", "stop-writes", "flush", "stop", "switch", "start", "verify", "resume-writes", "backup"], True,
     ["stop-writes", "flush", "stop", "restore-config", "restore-data", "start", "verify", "resume-writes"]),
])
def test_rollback_undoes_what_was_done(tmp_path, done, cleaned, expected):
    journal = Journal.new(tmp_path / "j.json", "rocksmq", "natsmq", {})
    for name in done:
        journal.step(name).status = DONE
    if cleaned:
        journal.step("backup").evidence["deleted"] = ["/x"]
    assert rollback_steps(journal) == expected
