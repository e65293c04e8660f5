"""`mqctl migrate` refusals that need no Milvus: exit 3, one clear line, nothing changed."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.paths import SAMPLES
from tests.helpers.servers import free_port

COMMANDS = ("--stop-cmd", "true", "--start-cmd", "true", "--log-file", "milvus.log")


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "milvus.yaml"
    shutil.copy(SAMPLES / "milvus-2.3-standalone-rocksmq.yaml", path)
    return path


def test_refuses_natsmq_on_milvus_2_6(config, cli):
    before = config.read_text()
    result = cli(
        "migrate",
        "--config",
        str(config),
        "--to",
        "natsmq",
        "--milvus",
        "http://127.0.0.1:1",
        "--milvus-version",
        "2.6.0",
        *COMMANDS,
        "--yes",
    )
    assert result.code == 3
    assert "natsmq was removed in Milvus 2.6" in result.stderr and "Traceback" not in result.stderr
    assert config.read_text() == before


def test_refuses_unreachable_milvus(config, cli):
    result = cli(
        "migrate", "--config", str(config), "--to", "natsmq", "--milvus", "http://127.0.0.1:1", *COMMANDS, "--yes"
    )
    assert result.code == 3
    assert "step preflight failed" in result.stderr and "not reachable" in result.stderr
    assert "nothing was changed" in result.stderr
    status = cli("migrate", "status", "--config", str(config), "--json")
    assert status.code == 0 and status.json()["steps"][0]["status"] == "failed"


def test_plan_lists_every_step_and_the_refusal(config, cli):
    result = cli(
        "migrate",
        "plan",
        "--config",
        str(config),
        "--to",
        "natsmq",
        "--milvus",
        "http://127.0.0.1:1",
        "--milvus-version",
        "2.2.0",  # natsmq came with 2.3 (2.6+ plans the online WAL switch instead)
        "--json",
    )
    assert result.code == 3
    plan = result.json()
    assert [s["name"] for s in plan["steps"]] == [
        "preflight",
        "stop-writes",
        "flush",
        "stop",
        "switch",
        "start",
        "verify",
        "resume-writes",
        "backup",
    ]
    assert [f["code"] for f in plan["findings"] if f["level"] == "error"] == ["target-unsupported"]
    assert plan["source_mq"] == "rocksmq" and plan["milvus_version"] == "2.2.0"


def test_json_run_needs_yes_and_status_needs_a_journal(config, cli):
    result = cli("migrate", "--config", str(config), "--to", "natsmq", "--milvus", "http://127.0.0.1:1", "--json")
    assert result.code == 2 and "--yes" in result.stderr
    result = cli("migrate", "status", "--config", str(config))
    assert result.code == 3 and "no migration journal" in result.stderr


def _failed_journal(config, cli) -> Path:
    """A real journal: a migration that stopped in preflight (Milvus unreachable), next to `config`."""
    result = cli(
        "migrate", "--config", str(config), "--to", "natsmq", "--milvus", "http://127.0.0.1:1", *COMMANDS, "--yes"
    )
    assert result.code == 3, result.stderr
    return config.parent / ".mqctl-migrate.json"


def test_resume_refuses_a_journal_of_another_config(tmp_path, cli):
    a, b = tmp_path / "A", tmp_path / "B"
    a.mkdir(), b.mkdir()
    for folder, name in ((a, "x.yaml"), (b, "other.yaml")):
        shutil.copy(SAMPLES / "milvus-2.3-standalone-rocksmq.yaml", folder / name)
    theirs = _failed_journal(b / "other.yaml", cli)
    shutil.copy(theirs, a / ".mqctl-migrate.json")
    before = theirs.read_text()
    result = cli("migrate", "resume", "--config", str(a / "x.yaml"))
    assert result.code == 2, result.stderr
    assert "belongs to" in result.stderr and str(b / "other.yaml") in result.stderr
    assert theirs.read_text() == before and (a / ".mqctl-migrate.json").read_text() == before
    moved = tmp_path / "state"
    moved.mkdir()
    shutil.copy(theirs, moved / ".mqctl-migrate.json")  # a journal copied away from where it was written
    result = cli("migrate", "resume", "--state-dir", str(moved))
    assert result.code == 2 and "was written as" in result.stderr, result.stderr
    result = cli("migrate", "rollback", "--config", str(a / "x.yaml"), "--yes")
    assert result.code == 2 and "belongs to" in result.stderr


def test_preflight_dry_runs_the_switch_edit(config, cli):
    before = config.read_text()
    result = cli(
        "migrate",
        "--config",
        str(config),
        "--to",
        "natsmq",
        "--milvus",
        "http://127.0.0.1:1",
        "--nats-port",
        "70000",
        *COMMANDS,
        "--yes",
    )
    assert result.code == 3
    assert "step preflight failed" in result.stderr and "natsmq.server.port must be a port" in result.stderr
    assert "nothing was changed" in result.stderr and config.read_text() == before


def test_a_failure_after_the_stop_says_that_milvus_is_down(config, cli):
    """Writes stopped, Milvus flushed and stopped, then the switch cannot edit the config."""
    import json

    path = _failed_journal(config, cli)
    journal = json.loads(path.read_text())
    for step in journal["steps"][:4]:  # preflight, stop-writes, flush, stop
        step["status"], step["error"] = "done", None
    journal["steps"][1]["evidence"] = {"old": {"file": None}, "mechanism": "file"}
    path.write_text(json.dumps(journal))
    config.write_text("mq: [unclosed\n")
    result = cli("migrate", "resume", "--config", str(config))
    assert result.code == 3
    assert "step switch failed" in result.stderr
    assert "Milvus is stopped" in result.stderr and "writes stay denied" in result.stderr
    assert "mqctl migrate resume" in result.stderr and "mqctl migrate rollback" in result.stderr


@pytest.mark.parametrize("text", ["[]", "{}", '{"steps": 5}', "null"])
def test_json_that_is_not_a_journal_is_bad_input(tmp_path, cli, text):
    (tmp_path / ".mqctl-migrate.json").write_text(text)
    for command in ("status", "resume"):
        result = cli("migrate", command, "--state-dir", str(tmp_path))
        assert result.code == 2, (command, result.stderr)
        assert "unreadable migration journal" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("damage", ["no options", "options of the wrong type", "no steps", "a timeout as text"])
def test_a_damaged_journal_is_bad_input(config, cli, damage):
    import json

    path = _failed_journal(config, cli)
    journal = json.loads(path.read_text())
    if damage == "no options":
        del journal["options"]["configs"]
    elif damage == "options of the wrong type":
        journal["options"] = ["x"]
    elif damage == "no steps":
        journal["steps"] = []
    else:
        journal["options"]["flush_timeout"] = "soon"
    path.write_text(json.dumps(journal))
    for command in ("status", "resume"):
        result = cli("migrate", command, "--config", str(config))
        assert result.code == 2, (damage, command, result.stderr)
        assert "unreadable migration journal" in result.stderr and "Traceback" not in result.stderr


WRONG_STEP_FIELDS: dict[str, tuple[int | None, dict[str, Any]]] = {
    "counts as text": (0, {"evidence": {"counts": "x"}}),
    "rows as text": (0, {"evidence": {"source_mq": "rocksmq", "counts": {"default/c": {"rows": "many"}}}}),
    "seconds as text": (0, {"seconds": "abc"}),
    "started as a number": (0, {"started": 5}),
    "a backup path as a number": (4, {"evidence": {"backup": 7}}),
    "a command without its exit code": (3, {"evidence": {"command": {"command": "true"}}}),
    "a checkpoint row without its vchannel": (2, {"evidence": {"checkpoints": [{"ts_after": 5}]}}),
    "a cleared etcd key without its old value": (4, {"evidence": {"etcd_cleared": {"key": "mq/type"}}}),
    "a rollback step mqctl does not know": (None, {"rollback": [{"name": "bogus", "status": "pending"}]}),
    "a rollback step only a migration takes": (None, {"rollback": [{"name": "preflight", "status": "pending"}]}),
}


@pytest.mark.parametrize("damage", WRONG_STEP_FIELDS)
def test_a_step_field_of_the_wrong_type_is_bad_input(config, cli, damage):
    """Each of these once ended in `internal error` when status or rollback showed the step."""
    import json

    path = _failed_journal(config, cli)
    journal = json.loads(path.read_text())
    index, change = WRONG_STEP_FIELDS[damage]
    if index is None:
        journal.update(change)
    else:
        journal["steps"][index].update({"status": "done", **change})
    path.write_text(json.dumps(journal))
    for command in (("status",), ("rollback", "--yes", "--milvus", "http://127.0.0.1:1")):
        result = cli("migrate", *command, "--config", str(config))
        assert result.code == 2, (damage, command, result.stderr)
        assert "unreadable migration journal" in result.stderr and "internal error" not in result.stderr


def test_status_shows_no_backup_for_a_switch_that_has_not_run(config, cli):
    _failed_journal(config, cli)
    result = cli("migrate", "status", "--config", str(config), "--wide")
    assert result.code == 0 and "switch" in result.stdout
    assert "backed up to" not in result.stdout and "None" not in result.stdout


def test_plan_of_a_config_whose_mq_is_unknown_says_unknown(tmp_path, cli):
    config = tmp_path / "milvus.yaml"
    config.write_text("etcd:\n  endpoints: localhost:2379\n")  # no mq.type and no Milvus version to default from
    result = cli("migrate", "plan", "--config", str(config), "--to", "natsmq", "--milvus", "http://127.0.0.1:1")
    assert "migration plan: unknown -> natsmq" in result.stdout and "None" not in result.stdout


def test_state_dir_that_is_a_file_or_missing(tmp_path, config, cli):
    afile = tmp_path / "afile"
    afile.write_text("x")
    result = cli(
        "migrate",
        "--config",
        str(config),
        "--to",
        "natsmq",
        "--milvus",
        "http://127.0.0.1:1",
        *COMMANDS,
        "--state-dir",
        str(afile),
        "--yes",
    )
    assert result.code == 2 and "not a folder" in result.stderr, result.stderr
    for command in ("status", "resume"):
        result = cli("migrate", command, "--state-dir", str(tmp_path / "new" / "dir"))
        assert result.code == 2 and "does not exist" in result.stderr, (command, result.stderr)
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize(
    "option,value",
    [("--flush-timeout", "-1"), ("--flush-timeout", "inf"), ("--start-timeout", "0"), ("--confirm-timeout", "nan")],
)
def test_timeouts_must_be_positive_and_finite(config, cli, option, value):
    result = cli(
        "migrate",
        "--config",
        str(config),
        "--to",
        "natsmq",
        "--milvus",
        "http://127.0.0.1:1",
        *COMMANDS,
        option,
        value,
        "--yes",
    )
    assert result.code == 2 and "positive, finite number of seconds" in result.stderr, result.stderr
    assert not (config.parent / ".mqctl-migrate.json").exists()
    result = cli("migrate", "resume", "--config", str(config), option, value)
    assert result.code == 2 and "positive, finite number of seconds" in result.stderr, result.stderr


def test_a_missing_config_creates_nothing(tmp_path, cli):
    missing = tmp_path / "MISSING" / "m.yaml"
    result = cli(
        "migrate", "--config", str(missing), "--to", "natsmq", "--milvus", "http://127.0.0.1:1", *COMMANDS, "--yes"
    )
    assert result.code == 2 and "m.yaml" in result.stderr and "does not exist" in result.stderr, result.stderr
    assert not (tmp_path / "MISSING").exists()


def test_etcd_root_defaults_to_the_configs_root_path(config, cli):
    """forceDeny must go under the root this Milvus watches, not under by-dev."""
    import json

    config.write_text(
        config.read_text().replace(
            "rootPath: by-dev # The root path where data is stored in etcd", "rootPath: prod-milvus"
        )
    )
    journal = json.loads(_failed_journal(config, cli).read_text())
    assert journal["options"]["etcd_root"] == "prod-milvus"
    result = cli(
        "migrate",
        "--config",
        str(config),
        "--to",
        "natsmq",
        "--milvus",
        "http://127.0.0.1:1",
        *COMMANDS,
        "--etcd-root",
        "other",
        "--yes",
    )
    assert result.code == 3
    assert json.loads((config.parent / ".mqctl-migrate.json").read_text())["options"]["etcd_root"] == "other"


def test_journal_schema_version_newer_is_refused_and_older_journals_still_load(config, cli):
    import json

    path = _failed_journal(config, cli)
    journal = json.loads(path.read_text())
    assert journal["schema_version"] == 1
    del journal["schema_version"]  # a journal of an mqctl before the field
    path.write_text(json.dumps(journal))
    status = cli("migrate", "status", "--config", str(config), "--json")
    assert status.code == 0, status.stderr
    assert status.json()["steps"][0]["status"] == "failed" and status.json()["schema_version"] == 1
    journal["schema_version"] = 2
    path.write_text(json.dumps(journal))
    for command in ("status", "resume", "rollback"):
        result = cli("migrate", command, "--config", str(config), "--yes" if command == "rollback" else "--json")
        assert result.code == 2, (command, result.stderr)
        assert "journal schema_version 2 is newer than this mqctl reads (1)" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


@pytest.mark.parametrize("sub", ["plan", "status", "resume", "rollback"])
def test_options_given_to_the_group_are_refused_not_dropped(config, cli, sub):
    """`mqctl migrate --to natsmq plan`: --to belongs to `migrate` itself; silently dropping it would plan
    (or resume) something else than asked."""
    result = cli("migrate", "--config", str(config), "--to", "natsmq", sub)
    assert result.code == 2, result.stderr
    assert f"--config, --to given before `{sub}`" in result.stderr
    assert f"mqctl migrate {sub} --config --to" in result.stderr and "Traceback" not in result.stderr
    assert not (config.parent / ".mqctl-migrate.json").exists()


def test_migrate_and_plan_share_the_option_bundle():
    """One bundle: `migrate` and `plan` declare the same options in the same order (plan: no journal folder,
    no timeouts), none with a default of its own: MigrateOptions holds the defaults."""
    import typer.main

    from mqctl.cli.migrate.commands import app
    from mqctl.cli.migrate.options import MIGRATION_OPTIONS, RUN_ONLY

    group = typer.main.get_command(app)
    plan = group.commands["plan"]  # type: ignore[attr-defined]
    migrate_options = [p for p in group.params if p.name in MIGRATION_OPTIONS]
    plan_options = [p for p in plan.params if p.name in MIGRATION_OPTIONS]
    assert [p.name for p in migrate_options] == list(MIGRATION_OPTIONS)
    assert [p.name for p in plan_options] == [name for name in MIGRATION_OPTIONS if name not in RUN_ONLY]
    assert [p.name for p in group.params[len(MIGRATION_OPTIONS) :]][:2] == [
        "yes",
        "measure",
    ]  # --json, --wide: the root's
    for param in (*migrate_options, *plan_options):
        assert param.default in (None, "", False), param.name


def _one_clean_line(result) -> None:
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1


def test_malformed_milvus_and_etcd_urls_are_bad_input(cli, config):
    milvus = cli("migrate", "plan", "--config", str(config), "--to", "natsmq", "--milvus", "http://[::1")
    assert milvus.code == 2
    _one_clean_line(milvus)
    assert "--milvus 'http://[::1' is not a valid URL" in milvus.stderr
    etcd = cli("config", "explain", str(config), "--etcd", "http://[::1")
    assert etcd.code == 2
    _one_clean_line(etcd)
    assert "--etcd" in etcd.stderr


def test_password_in_milvus_uri_is_never_printed_nor_journaled(cli, config):
    uri = f"http://root:Sup3rS3cret@127.0.0.1:{free_port()}"
    plan = cli("migrate", "plan", "--config", str(config), "--to", "natsmq", "--milvus", uri, "--json")
    assert plan.code == 3
    assert plan.json()["findings"][0]["code"] == "milvus-unreachable"
    assert "Sup3rS3cret" not in plan.stdout + plan.stderr
    run = cli(
        "migrate",
        "--config",
        str(config),
        "--to",
        "natsmq",
        "--milvus",
        uri,
        "--stop-cmd",
        "true",
        "--start-cmd",
        "true",
        "--log-file",
        "milvus.log",
        "--yes",
    )
    assert run.code == 3 and "not reachable" in run.stderr
    journal = config.parent / ".mqctl-migrate.json"
    assert journal.is_file() and "Sup3rS3cret" not in journal.read_text()
    status = cli("migrate", "status", "--config", str(config), "--json")
    milvus = status.json()["options"]["milvus"]
    assert milvus["uri"].startswith("http://127.0.0.1:") and milvus["user"] == "root" and milvus["password_set"]


def test_misspelled_migration_target_is_bad_input(cli, config):
    result = cli("migrate", "plan", "--config", str(config), "--to", "natmq", "--milvus", "http://127.0.0.1:1")
    assert result.code == 2
    _one_clean_line(result)
    assert "unknown MQ 'natmq'" in result.stderr and "did you mean 'natsmq'?" in result.stderr


def test_rollback_says_there_is_no_journal_before_asking(cli, config):
    missing = cli("migrate", "rollback", "--config", str(config))
    assert missing.code == 3
    _one_clean_line(missing)
    assert "no migration journal" in missing.stderr
    failed = cli(
        "migrate",
        "--config",
        str(config),
        "--to",
        "natsmq",
        "--milvus",
        f"http://127.0.0.1:{free_port()}",
        "--stop-cmd",
        "true",
        "--start-cmd",
        "true",
        "--log-file",
        "milvus.log",
        "--yes",
    )
    assert failed.code == 3 and (config.parent / ".mqctl-migrate.json").is_file()
    unconfirmed = cli("migrate", "rollback", "--config", str(config))
    assert unconfirmed.code == 3 and "needs confirmation" in unconfirmed.stderr


def test_measure_needs_writes_open_and_a_reachable_milvus_before_anything_starts(config, cli):
    """--measure times inserts before the migration: with --writes-stopped it is refused, and an unreachable
    Milvus fails it before a journal exists (the migration never began)."""
    target = ("migrate", "--config", str(config), "--to", "natsmq", "--milvus", "http://127.0.0.1:1", *COMMANDS)
    result = cli(*target, "--measure", "--writes-stopped", "--yes")
    assert result.code == 2 and "--measure" in result.stderr and "--writes-stopped" in result.stderr
    result = cli(*target, "--measure", "--yes")
    assert result.code == 3 and "not reachable" in result.stderr and "Traceback" not in result.stderr
    assert not (config.parent / ".mqctl-migrate.json").exists()
