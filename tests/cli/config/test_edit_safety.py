"""Edits that must never damage a config: keys next to empty values, concurrent edits, owner and mode,
read-only folders, keys and values `config get`/`validate` reject, natsmq retention, Helm user.yaml mappings.

Every test drives real files, and the CLI tests real `mqctl` processes."""

from __future__ import annotations

import fcntl
import os
import shlex
import shutil
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.files import backups, safe_load
from tests.helpers.natsmq import max_age_keeping
from tests.helpers.paths import FIXTURES, SAMPLES

STOCK_23 = SAMPLES / "milvus-2.3-standalone-natsmq.yaml"


def test_unset_next_to_an_empty_value_keeps_the_next_section(tmp_path, cli):
    path = tmp_path / "milvus.yaml"
    shutil.copy(STOCK_23, path)
    before = safe_load(path.read_text())
    assert before["natsmq"]["server"]["retention"]["maxMsgs"] is None  # the stock file's empty value
    result = cli("config", "unset", str(path), "natsmq.server.retention.maxMsgs", "--yes")
    assert result.code == 0, result.stderr
    after = safe_load(path.read_text())
    assert "rootCoord:" in path.read_text() and after["rootCoord"] == before["rootCoord"]
    del before["natsmq"]["server"]["retention"]["maxMsgs"]
    assert after == before


def test_set_under_and_next_to_empty_values_lands_in_its_own_mapping(tmp_path, cli):
    text = (
        "rocksmq:\n  path: /var/lib/milvus/rdb_data\n  retentionSizeInMB: # empty, Milvus default\n\n\n"
        "# the next section\nrootCoord:\n  dmlChannelNum: 16\ncustom:\n  empty:\n\n# comment\nlast: 1\n"
    )
    path = tmp_path / "milvus.yaml"
    for key, value, expect in [
        ("rocksmq.retentionTimeInMinutes", "60", lambda d: d["rocksmq"]["retentionTimeInMinutes"]),
        ("custom.empty.inner", "5", lambda d: d["custom"]["empty"]["inner"]),
    ]:
        path.write_text(text)
        result = cli("config", "set", str(path), key, value, "--yes")
        assert result.code == 0, result.stderr
        after = safe_load(path.read_text())
        assert str(expect(after)) == value
        assert after["rootCoord"] == {"dmlChannelNum": 16} and after["last"] == 1


def test_switch_fills_keys_inside_a_section_ending_with_an_empty_value(tmp_path, cli):
    path = tmp_path / "milvus.yaml"
    path.write_text("mq:\n  type: natsmq\nrocksmq:\n  retentionSizeInMB:\n\n# next\nrootCoord:\n  dmlChannelNum: 16\n")
    result = cli("config", "switch", str(path), "--to", "rocksmq", "--milvus-version", "2.3.5", "--yes")
    assert result.code == 0, result.stderr
    after = safe_load(path.read_text())
    assert after["rootCoord"] == {"dmlChannelNum": 16}
    assert after["rocksmq"]["path"] == "/var/lib/milvus/rdb_data" and after["rocksmq"]["retentionSizeInMB"] == 8192


def test_an_edit_that_would_change_another_key_is_refused(tmp_path, cli):
    path = tmp_path / "milvus.yaml"
    path.write_text("rocksmq:\n  path: &data /var/lib/milvus/rdb_data\nlocalStorage:\n  path: *data\n")
    before = path.read_bytes()
    result = cli("config", "set", str(path), "rocksmq.path", "/srv/rdb", "--yes")
    assert result.code == 3
    assert "would change localStorage.path" in result.stderr and "nothing was written" in result.stderr
    assert "Wrote" not in result.stdout and "Traceback" not in result.stderr
    assert path.read_bytes() == before and not backups(tmp_path)


def test_unset_of_an_alias_removes_its_own_line(tmp_path, cli):
    path = tmp_path / "milvus.yaml"
    path.write_text("rocksmq:\n  path: &data /var/lib/milvus/rdb_data\nlocalStorage:\n  path: *data\n  size:\n")
    result = cli("config", "unset", str(path), "localStorage.path", "--yes")
    assert result.code == 0 and "Wrote" in result.stdout, result.stderr
    assert path.read_text() == "rocksmq:\n  path: &data /var/lib/milvus/rdb_data\nlocalStorage:\n  size:\n"


def test_an_edit_waits_for_the_lock_a_bounded_time(tmp_path):
    path = tmp_path / "milvus.yaml"
    shutil.copy(STOCK_23, path)
    before = path.read_bytes()
    lock = tmp_path / ".milvus.yaml.mqctl.lock"
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # an edit in progress
        result = run_cli(
            "config", "set", str(path), "natsmq.server.port", "4333", "--yes", env={"MQCTL_LOCK_WAIT": "0.5"}
        )
        dry = run_cli("config", "set", str(path), "natsmq.server.port", "4333", "--dry-run")
    assert result.code == 3 and "held its lock" in result.stderr and "Wrote" not in result.stdout
    assert path.read_bytes() == before and not backups(tmp_path)
    assert dry.code == 0  # a dry run writes nothing and needs no lock
    after = run_cli("config", "set", str(path), "natsmq.server.port", "4333", "--yes")
    assert after.code == 0 and "port: 4333" in path.read_text()


@pytest.mark.skipif(os.geteuid() != 0, reason="changing a file's owner needs root")
@pytest.mark.parametrize(
    "command",
    [
        ("set", "natsmq.server.port", "4333"),
        ("unset", "natsmq.server.port"),
        ("switch", "--to", "rocksmq", "--milvus-version", "2.3.5"),
    ],
)
def test_edits_as_root_keep_owner_group_and_mode(tmp_path, command):
    path = tmp_path / "milvus.yaml"
    shutil.copy(STOCK_23, path)
    os.chown(path, 1234, 1234)  # milvus:milvus
    os.chmod(path, 0o600)
    result = run_cli("config", command[0], str(path), *command[1:], "--yes", "--json")
    assert result.code == 0, result.stderr
    backup = Path(result.json()["backup"])
    for written in (path, backup):
        info = written.stat()
        assert (info.st_uid, info.st_gid, info.st_mode & 0o7777) == (1234, 1234, 0o600), written


@pytest.mark.parametrize("key", ["mq.tpye", "natsmq.server.retention.maxMsg", "natsmq.server.port.x"])
def test_set_rejects_keys_milvus_does_not_have_like_get(tmp_path, cli, key):
    path = tmp_path / "milvus.yaml"
    shutil.copy(STOCK_23, path)
    result = cli("config", "set", str(path), key, "1", "--yes")
    got = cli("config", "get", str(path), key)
    assert result.code == got.code == 2, result.stderr
    assert result.stdout == "" and path.read_bytes() == STOCK_23.read_bytes()
    if key == "mq.tpye":
        assert "did you mean mq.type" in result.stderr


@pytest.mark.parametrize("key", ["mq.a: b", "mq.*ref", "mq.my key", "mq.two\nlines", "mq.#x", "natsmq.&a"])
@pytest.mark.parametrize("dry_run", [True, False])
def test_keys_that_are_not_plain_yaml_are_rejected_before_any_output(tmp_path, cli, key, dry_run):
    path = tmp_path / "milvus.yaml"
    shutil.copy(STOCK_23, path)
    result = cli("config", "set", str(path), key, "1", "--dry-run" if dry_run else "--yes")
    assert result.code == 2 and result.stdout == ""
    assert result.stderr.startswith("error: invalid key") and result.stderr.count("\n") == 1
    assert path.read_bytes() == STOCK_23.read_bytes() and not backups(tmp_path)


def test_set_refuses_what_validate_reports_as_an_error_with_its_code(tmp_path, cli):
    path = tmp_path / "milvus.yaml"
    shutil.copy(STOCK_23, path)
    result = cli("config", "set", str(path), "natsmq.server.maxPayload", "3GB", "--yes")
    assert result.code == 2 and "MQ114" in result.stderr and "--force" in result.stderr
    assert path.read_bytes() == STOCK_23.read_bytes()
    forced = cli("config", "set", str(path), "natsmq.server.maxPayload", "3GB", "--yes", "--force")
    assert forced.code == 0, forced.stderr
    validated = cli("config", "validate", str(path), "--json")
    assert validated.code == 1 and "MQ114" in {f["code"] for f in validated.json()["findings"]}


def natsmq_config(tmp_path: Path, store: Path, port: int | str = 4222) -> Path:
    path = tmp_path / "milvus.yaml"
    path.write_text(
        f"mq:\n  type: natsmq\nnatsmq:\n  server:\n    port: {port}\n    storeDir: {store}\n"
        "    retention:\n      maxAge: 4320\n"
    )
    return path


def test_retention_edit_names_the_reconcile_command_for_a_store_on_this_host(tmp_path, cli):
    store = tmp_path / "nats"
    shutil.copytree(FIXTURES / "natsmq" / "store", store)
    path = natsmq_config(tmp_path, store)
    keep_all = max_age_keeping(store)  # JetStream drops what is older than max_age: keep the fixture whole
    result = cli("config", "set", str(path), "natsmq.server.retention.maxAge", keep_all, "--yes", "--json")
    assert result.code == 0, result.stderr
    command = result.json()["reconcile"]
    assert command == f"mqctl retention apply --config {path} --nats-store {store}"
    assert "10058" in result.stderr and command in result.stderr
    drift = cli("retention", "show", "--nats-store", str(store), "--config", str(path), "--json")
    assert drift.code == 1  # the streams do not match until the command runs
    applied = cli(*shlex.split(command)[1:], "--yes")  # the printed command works as printed
    assert applied.code == 0, applied.stderr
    assert cli("retention", "show", "--nats-store", str(store), "--config", str(path)).code == 0
    same = cli("config", "set", str(path), "natsmq.server.retention.maxAge", keep_all, "--yes", "--json")
    assert same.json()["reconcile"] is None  # nothing changed: nothing to reconcile


def test_retention_edit_names_the_live_server_and_is_quiet_without_streams(tmp_path, cli):
    from tests.helpers.servers import start_nats

    proc, url = start_nats(tmp_path)
    try:
        path = natsmq_config(tmp_path, tmp_path / "absent", port=int(url.rsplit(":", 1)[1]))
        result = cli("config", "unset", str(path), "natsmq.server.retention.maxAge", "--dry-run", "--json")
        assert result.json()["reconcile"] is None  # 4320 is also Milvus's default: the streams keep matching
        result = cli("config", "set", str(path), "natsmq.server.retention.maxMsgs", "1000", "--dry-run", "--json")
        assert result.code == 0 and result.json()["reconcile"] == f"mqctl retention apply --config {path} --nats {url}"
    finally:
        proc.terminate()
        proc.wait()
    result = cli("config", "set", str(path), "natsmq.server.retention.maxMsgs", "1000", "--dry-run", "--json")
    assert result.json()["reconcile"] is None and "10058" not in result.stderr  # no store, no server


HELM_MAPPING = """\
cluster:
  enabled: false
standalone:
  messageQueue: natsmq
extraConfigFiles:
  user.yaml:
    mq:
      type: natsmq
    natsmq:
      server:
        port: 4333
        retention:
          maxAge: # Milvus default
    # end of user.yaml
image:
  all:
    tag: v2.4.5
"""


def test_helm_user_yaml_mapping_is_read_and_edited_in_place(tmp_path, cli):
    path = tmp_path / "values.yaml"
    path.write_text(HELM_MAPPING)
    explained = cli("config", "explain", str(path), "--json")
    assert explained.code == 0, explained.stderr
    assert f"mq.type = natsmq ({path}:8)." in explained.json()["explanation"]  # read from the mapping
    got = cli("config", "get", str(path), "natsmq.server.port", "--json").json()
    assert (got["value"], got["line"]) == ("4333", 11)
    for args in (
        ("set", "natsmq.server.port", "4444"),
        ("set", "natsmq.server.retention.maxBytes", "1000"),
        ("unset", "natsmq.server.retention.maxAge"),
    ):
        result = cli("config", args[0], str(path), *args[1:], "--yes")
        assert result.code == 0, result.stderr
    user = safe_load(path.read_text())["extraConfigFiles"]["user.yaml"]
    assert user == {"mq": {"type": "natsmq"}, "natsmq": {"server": {"port": 4444, "retention": {"maxBytes": 1000}}}}
    assert (
        path.read_text()
        .replace("4444", "4333")
        .replace("          maxBytes: 1000\n", "          maxAge: # Milvus default\n")
        == HELM_MAPPING
    )


def test_retention_edit_with_a_non_ascii_digit_port_is_no_internal_error(tmp_path, cli):
    # "²".isdigit() is True but int("²") fails; Milvus's strconv takes ASCII digits only
    path = natsmq_config(tmp_path, tmp_path / "absent", port='"²"')
    result = cli("config", "set", str(path), "natsmq.server.retention.maxAge", "60", "--dry-run", "--json")
    assert "internal error" not in result.stderr.lower() and "Traceback" not in result.stderr
    assert result.code == 0, result.stderr
    assert result.json()["reconcile"] is None
