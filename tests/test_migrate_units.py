"""Pure logic of the migration: journal, log matching, backup archives, rollback planning."""

from __future__ import annotations

import datetime as dt
import json

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
# Seen on Milvus 2.3.5 with an external etcd: the etcd source logs the etcd path, then the normalised key.
ETCD_CREATE = ('[2026/11/23 13:08:55.900 +00:00] [INFO] [config/manager.go:315] ["receive update event"] '
               '[event="{\\"EventSource\\":\\"EtcdSource\\",\\"EventType\\":\\"CREATE\\",\\"Key\\":'
               '\\"quotaAndLimits/limitWriting/forceDeny\\",\\"Value\\":\\"true\\",\\"HasUpdated\\":false}"]')
ETCD_NORMALISED = ('[2026/11/23 13:08:55.900 +00:00] [INFO] [config/manager.go:315] ["receive update event"] '
                   '[event="{\\"EventSource\\":\\"EtcdSource\\",\\"EventType\\":\\"UPDATE\\",\\"Key\\":'
                   '\\"quotaandlimitslimitwritingforcedeny\\",\\"Value\\":\\"true\\",\\"HasUpdated\\":false}"]')
ETCD_DELETE = ('[2026/11/23 13:09:05.900 +00:00] [INFO] [config/manager.go:315] ["receive update event"] '
               '[event="{\\"EventSource\\":\\"EtcdSource\\",\\"EventType\\":\\"DELETE\\",\\"Key\\":'
               '\\"quotaAndLimits/limitWriting/forceDeny\\",\\"Value\\":\\"true\\",\\"HasUpdated\\":false}"]')
INIT = '[2026/11/22 05:03:46.032 +00:00] [INFO] [dependency/factory.go:84] ["try to init mq"] [standalone=true] [mqType=natsmq]'


def test_update_event_matches_the_value_milvus_logged():
    assert update_event("true")(EVENT)
    assert not update_event("false")(EVENT)
    assert not update_event("true")(EVENT.replace("forcedeny", "forcedenyreading"))
    removed = EVENT.replace("UPDATE", "DELETE")  # a removed key is logged with its old value
    assert update_event(None)(removed) and not update_event(None)(EVENT) and not update_event("false")(removed)


def test_update_event_matches_the_etcd_source_with_slashes():
    assert update_event("true")(ETCD_CREATE)
    assert not update_event("false")(ETCD_CREATE) and not update_event(None)(ETCD_CREATE)


def test_update_event_matches_the_normalised_key():
    assert update_event("true")(ETCD_NORMALISED)
    assert not update_event("true")(ETCD_NORMALISED.replace("forcedeny", "forcedenyreading"))
    assert not update_event("true")(ETCD_NORMALISED.replace("limitwriting", "limitreading"))


def test_update_event_matches_the_etcd_delete_and_never_takes_it_for_a_value():
    assert update_event(None)(ETCD_DELETE)
    assert not update_event("true")(ETCD_DELETE)  # a DELETE carries the old value: not a deny
    assert update_event(None)(ETCD_NORMALISED.replace("UPDATE", "DELETE"))


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


def test_the_journal_holds_no_password_of_milvus_or_etcd():
    from mqctl.migrate.milvus import MilvusTarget
    from mqctl.migrate.steps import MigrateOptions

    options = MigrateOptions(configs=["/etc/milvus.yaml"], to="natsmq",
                             milvus=MilvusTarget("http://127.0.0.1:19530", user="root", password="Milvus-S3cret"),
                             etcd="http://etcduser:Etcd-S3cret@127.0.0.1:2379")
    journaled = json.dumps(options.journaled())
    assert "S3cret" not in journaled
    assert options.journaled()["etcd"] == "http://etcduser@127.0.0.1:2379"
    assert options.journaled()["milvus"]["user"] == "root" and options.journaled()["milvus"]["password_set"] is True


def test_milvus_environment_is_read_from_the_local_milvus_process(tmp_path):
    """A process named milvus listening on the --milvus port: its MQ_TYPE overrides the yaml."""
    import os
    import subprocess
    import sys

    from make_fixtures import free_port
    from mqctl.migrate.milvus import MilvusTarget
    from mqctl.migrate.steps import MigrateOptions, milvus_environment, resolution

    config = tmp_path / "milvus.yaml"
    config.write_text("mq:\n  type: natsmq\n")
    port = free_port()
    listener = ("import socket, sys, time\ns = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
                "print('ready', flush=True); time.sleep(60)\n")
    options = MigrateOptions(configs=[str(config)], to="rocksmq", milvus=MilvusTarget(f"http://127.0.0.1:{port}"))
    assert milvus_environment(options)[0] is None  # nothing listens yet
    named = tmp_path / "milvus"
    named.symlink_to(sys.executable)  # the process name comes from the file name it was started by
    for program, found in ((sys.executable, False), (str(named), True)):
        proc = subprocess.Popen([program, "-c", listener, str(port)], stdout=subprocess.PIPE, text=True,
                                env={**os.environ, "MQ_TYPE": "rocksmq"})
        try:
            assert proc.stdout.readline().strip() == "ready"
            env, where = milvus_environment(options)
            assert (env is not None) == found, where
            if found:
                assert where == f"read from {proc.pid} (milvus)"
                origin = resolution(options, env=env).origin("mq.type")
                assert (origin.source, origin.value, origin.detail) == ("env", "rocksmq", "MQ_TYPE")
            else:
                assert "not by a milvus process" in where
        finally:
            proc.kill()
            proc.wait()
