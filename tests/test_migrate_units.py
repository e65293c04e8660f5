"""Pure logic of the migration: journal, log matching, backup archives, rollback planning."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from mqctl.errors import PreconditionError
from mqctl.hooks import MilvusLog, log_time, run_command
from mqctl.migrate.backup import archive_dirs, restore_archive, verify_archive
from mqctl.migrate.evidence import BackupEvidence, WritesEvidence
from mqctl.migrate.journal import COMPLETED, DONE, Journal, archive_finished
from mqctl.migrate.run import rollback_steps
from mqctl.migrate.verify import INIT_MQ
from mqctl.migrate.writes import update_event

EVENT = (
    '[2026/11/22 05:07:12.265 +00:00] [INFO] [config/manager.go:315] ["receive update event"] '
    '[event="{\\"EventSource\\":\\"FileSource\\",\\"EventType\\":\\"UPDATE\\",\\"Key\\":'
    '\\"quotaandlimits.limitwriting.forcedeny\\",\\"Value\\":\\"true\\",\\"HasUpdated\\":false}"]'
)
# Seen on Milvus 2.3.5 with an external etcd: the etcd source logs the etcd path, then the normalised key.
ETCD_CREATE = (
    '[2026/11/23 13:08:55.900 +00:00] [INFO] [config/manager.go:315] ["receive update event"] '
    '[event="{\\"EventSource\\":\\"EtcdSource\\",\\"EventType\\":\\"CREATE\\",\\"Key\\":'
    '\\"quotaAndLimits/limitWriting/forceDeny\\",\\"Value\\":\\"true\\",\\"HasUpdated\\":false}"]'
)
ETCD_NORMALISED = (
    '[2026/11/23 13:08:55.900 +00:00] [INFO] [config/manager.go:315] ["receive update event"] '
    '[event="{\\"EventSource\\":\\"EtcdSource\\",\\"EventType\\":\\"UPDATE\\",\\"Key\\":'
    '\\"quotaandlimitslimitwritingforcedeny\\",\\"Value\\":\\"true\\",\\"HasUpdated\\":false}"]'
)
ETCD_DELETE = (
    '[2026/11/23 13:09:05.900 +00:00] [INFO] [config/manager.go:315] ["receive update event"] '
    '[event="{\\"EventSource\\":\\"EtcdSource\\",\\"EventType\\":\\"DELETE\\",\\"Key\\":'
    '\\"quotaAndLimits/limitWriting/forceDeny\\",\\"Value\\":\\"true\\",\\"HasUpdated\\":false}"]'
)
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


def test_the_journal_holds_no_password_of_milvus_or_etcd():
    from mqctl.migrate.options import MigrateOptions
    from mqctl.milvus_client import MilvusTarget

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


def test_milvus_environment_is_read_from_the_local_milvus_process(tmp_path):
    """A process named milvus listening on the --milvus port: its MQ_TYPE overrides the yaml."""
    import os
    import subprocess
    import sys

    from mqctl.migrate.context import resolution
    from mqctl.migrate.options import MigrateOptions
    from mqctl.migrate.preflight import milvus_environment
    from mqctl.milvus_client import MilvusTarget
    from tests.helpers.servers import free_port

    config = tmp_path / "milvus.yaml"
    config.write_text("mq:\n  type: natsmq\n")
    port = free_port()
    listener = (
        "import socket, sys, time\ns = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
        "print('ready', flush=True); time.sleep(60)\n"
    )
    options = MigrateOptions(configs=[str(config)], to="rocksmq", milvus=MilvusTarget(f"http://127.0.0.1:{port}"))
    assert milvus_environment(options)[0] is None  # nothing listens yet
    named = tmp_path / "milvus"
    named.symlink_to(sys.executable)  # the process name comes from the file name it was started by
    for program, found in ((sys.executable, False), (str(named), True)):
        proc = subprocess.Popen(
            [program, "-c", listener, str(port)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "MQ_TYPE": "rocksmq"},
        )
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


# --- channel checkpoints against the FlushAll timestamp (a real etcd with hand-encoded Milvus meta) ---------
FLUSH_TS = 463_000_000_000_000_000


def _row(vchannel: str, ts: int | None) -> dict:
    return {
        "vchannel": vchannel,
        "collection": "default/c",
        "pchannel": "by-dev-rootcoord-dml_0",
        "ts": ts,
        "time": None,
        "position": 7,
        "from": "channel-cp",
    }


def test_a_checkpoint_at_or_past_the_flush_ts_is_done_one_before_it_or_missing_is_not():
    from mqctl.migrate.checkpoints import checkpoint_evidence, checkpoints_before

    rows = [_row("at", FLUSH_TS), _row("past", FLUSH_TS + 1), _row("behind", FLUSH_TS - 1), _row("none", None)]
    assert checkpoints_before(rows, FLUSH_TS) == ["behind", "none"]
    evidence = checkpoint_evidence({"at": FLUSH_TS - 5}, rows, FLUSH_TS)
    assert [(e["vchannel"], e["ts_before"], e["ts_after"], e["reached"]) for e in evidence] == [
        ("at", FLUSH_TS - 5, FLUSH_TS, True),
        ("past", None, FLUSH_TS + 1, True),
        ("behind", None, FLUSH_TS - 1, False),
        ("none", None, None, False),
    ]
    assert all(e["position"] == 7 and e["pchannel"] == "by-dev-rootcoord-dml_0" for e in evidence)


def _milvus_meta(etcd_url: str, root: str, vchannels: dict[str, int]) -> None:
    """A collection `c` (id 9) with one vchannel per entry, each checkpoint at that timestamp."""
    from tests.helpers.milvus_meta import collection_info, position, put

    put(
        etcd_url,
        f"{root}/meta/root-coord/database/collection-info/1/9",
        collection_info(9, "c", {v: "by-dev-rootcoord-dml_0" for v in vchannels}),
    )
    for vchannel, ts in vchannels.items():
        put(etcd_url, f"{root}/meta/datacoord-meta/channel-cp/{vchannel}", position(vchannel, 40, ts))


def _options(etcd_url: str, root: str, tmp_path):
    from mqctl.migrate.options import MigrateOptions
    from mqctl.milvus_client import MilvusTarget

    config = tmp_path / "milvus.yaml"
    config.write_text("mq:\n  type: rocksmq\n")
    return MigrateOptions(
        configs=[str(config)], to="natsmq", milvus=MilvusTarget("http://127.0.0.1:1"), etcd=etcd_url, etcd_root=root
    )


@pytest.mark.etcd
def test_the_wait_ends_when_every_checkpoint_reaches_the_flush_ts(etcd_url, tmp_path):
    import threading

    from mqctl.migrate.checkpoints import checkpoints_before, wait_for_checkpoints
    from tests.helpers.milvus_meta import position, put

    _milvus_meta(etcd_url, "flushwait", {"v_0": FLUSH_TS, "v_1": FLUSH_TS - 100})
    options = _options(etcd_url, "flushwait", tmp_path)
    later = threading.Timer(
        1.5, put, (etcd_url, "flushwait/meta/datacoord-meta/channel-cp/v_1", position("v_1", 40, FLUSH_TS + 3))
    )
    later.start()
    rows, waited = wait_for_checkpoints(options, FLUSH_TS, 30, lambda s: None)
    later.join()
    assert checkpoints_before(rows, FLUSH_TS) == [] and 1.0 <= waited < 30
    assert {r["vchannel"]: (r["ts"], r["position"], r["collection"]) for r in rows} == {
        "v_0": (FLUSH_TS, 40, "default/c"),
        "v_1": (FLUSH_TS + 3, 40, "default/c"),
    }


@pytest.mark.etcd
def test_the_wait_is_bounded_and_names_the_vchannel_behind(etcd_url, tmp_path):
    from mqctl.migrate.checkpoints import checkpoints_before, wait_for_checkpoints

    _milvus_meta(etcd_url, "stuck", {"v_0": FLUSH_TS, "v_1": FLUSH_TS - 100})
    rows, waited = wait_for_checkpoints(_options(etcd_url, "stuck", tmp_path), FLUSH_TS, 2, lambda s: None)
    assert checkpoints_before(rows, FLUSH_TS) == ["v_1"] and 2 <= waited < 5


@pytest.mark.etcd
def test_migrate_plan_shows_the_checkpoints_and_an_unreadable_etcd_is_a_finding(etcd_url, tmp_path, cli):
    from tests.helpers.servers import free_port

    _milvus_meta(etcd_url, "plan", {"by-dev-rootcoord-dml_0_9v0": FLUSH_TS})
    config = tmp_path / "milvus.yaml"
    config.write_text("mq:\n  type: rocksmq\n")
    args = ["migrate", "plan", "--config", str(config), "--to", "natsmq", "--milvus", f"http://127.0.0.1:{free_port()}"]
    planned = cli(*args, "--etcd", etcd_url, "--etcd-root", "plan", "--json")
    assert planned.code == 3, planned.stderr  # refused (no Milvus answers), and still shows the checkpoints
    [row] = planned.json()["checkpoints"]
    assert (row["vchannel"], row["collection"], row["ts"], row["position"]) == (
        "by-dev-rootcoord-dml_0_9v0",
        "default/c",
        FLUSH_TS,
        40,
    )
    human = cli(*args, "--etcd", etcd_url, "--etcd-root", "plan", env={"COLUMNS": "200"})
    assert "channel checkpoints now" in human.stdout and "by-dev-rootcoord-dml_0_9v0" in human.stdout
    config.write_text(f"mq:\n  type: rocksmq\netcd:\n  endpoints: 127.0.0.1:{free_port()}\n")  # no etcd there
    unread = cli(*args, "--json")
    assert "Traceback" not in unread.stderr and unread.json()["checkpoints"] == []
    assert any(f["code"] == "checkpoints-unread" for f in unread.json()["findings"])


@pytest.mark.etcd
def test_clear_etcd_override_deletes_the_spelling_found_and_rollback_puts_it_back(etcd_url, tmp_path):
    """`mqtype` overrides mq.type as `mq/type` does; the switch once deleted `mq/type` whatever was found."""
    import dataclasses

    from mqctl.config.resolve.sources import EtcdConfig
    from mqctl.migrate.context import Context, resolution
    from mqctl.migrate.evidence import PreflightEvidence, SwitchEvidence
    from mqctl.migrate.journal import StepRecord
    from mqctl.migrate.preflight import PreflightResult, _override_findings
    from mqctl.migrate.steps import step_restore_config, step_switch
    from tests.helpers.milvus_meta import put

    put(etcd_url, "spell/config/mqtype", b"rocksmq")
    put(etcd_url, "spell/config/mq/typeface", b"kept")  # only starts like mq.type
    options = dataclasses.replace(_options(etcd_url, "spell", tmp_path), clear_etcd_override=True)
    journal = Journal.new(tmp_path / "j.json", "rocksmq", "natsmq", options.journaled())
    seen = journal.evidence("preflight", PreflightEvidence)
    _override_findings(options, resolution(options), PreflightResult(evidence=seen))
    assert (seen.etcd_mq_type, seen.etcd_mq_type_keys) == ("rocksmq", ["spell/config/mqtype"])

    ctx = Context(journal, options)
    step_switch(ctx, journal.step("switch"))
    etcd = EtcdConfig(etcd_url, root="spell")
    assert dict(etcd.get_prefix(etcd.prefix)) == {"spell/config/mq/typeface": b"kept"}
    assert resolution(options).origin("mq.type").source != "etcd"
    assert journal.evidence("switch", SwitchEvidence).etcd_cleared == {
        "key": "mqtype",
        "old": "rocksmq",
        "keys": [{"key": "mqtype", "old": "rocksmq"}],
    }
    step_restore_config(ctx, StepRecord("restore-config"))
    assert dict(etcd.get_prefix(etcd.prefix))["spell/config/mqtype"] == b"rocksmq"


def test_the_registry_runs_exactly_the_steps_the_journal_names():
    """The journal owns the step names (it validates journals without importing the executor)."""
    from mqctl.migrate.executor import REGISTRY
    from mqctl.migrate.journal import MIGRATION_STEPS, ROLLBACK_STEPS

    assert {name for name, step in REGISTRY.items() if step.forward} == set(MIGRATION_STEPS)
    assert {name for name, step in REGISTRY.items() if step.back} == set(ROLLBACK_STEPS)
