"""`mqctl doctor` end to end through the CLI, on the real RocksMQ and natsmq fixtures and a real etcd."""

from __future__ import annotations

import base64
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.milvus_meta import collection_info, position, put
from tests.helpers.natsmq import purge_below
from tests.helpers.paths import FIXTURES, SAMPLES
from tests.helpers.servers import free_port

ROCKSMQ = str(FIXTURES / "rocksmq" / "rdb_data")


NATS_STORE = FIXTURES / "natsmq" / "store"


def config_copy(
    tmp_path: Path, sample: str = "milvus-2.3-standalone-rocksmq.yaml", extra: str = "", etcd: str = ""
) -> Path:
    """A sample config in its own folder (the migration journal sits beside it), its etcd where none answers
    unless `etcd` is given."""
    folder = tmp_path / "configs"
    folder.mkdir(exist_ok=True)
    endpoint = etcd.removeprefix("http://") if etcd else f"127.0.0.1:{free_port()}"
    text = (SAMPLES / sample).read_text().replace("localhost:2379", endpoint)
    path = folder / "milvus.yaml"
    path.write_text(text + extra)
    return path


def checks_by_code(result) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for check in result["checks"]:
        found.setdefault(check["code"], []).append(check)
    return found


def test_healthy_rocksmq_fixture_is_ok_and_lists_every_check_that_ran(tmp_path, cli):
    config = config_copy(tmp_path)
    # the natsmq folder is this host's default in the sample: one in the test's folder keeps what another program
    # left in /var/lib/milvus/nats out of the verdict (mq.type rocksmq, so a natsmq storeDir is no finding)
    text = config.read_text().replace("/var/lib/milvus/nats", str(tmp_path / "nats-absent"))
    config.write_text(text.replace("\n  type: default\n", "\n  type: rocksmq\n"))
    result = cli("doctor", "--config", str(config), "--rocksmq", ROCKSMQ, "--milvus-version", "2.3.5", "--json")
    assert result.code == 0, result.stderr
    report = result.json()
    assert report["verdict"] == "ok"
    assert report["target"]["configs"] == [str(config)] and report["target"]["next_mq"] == "rocksmq"
    codes = checks_by_code(report)
    for ran in ("DR100", "DR111", "DR200", "DR210", "DR301", "DR310", "DR401", "DR500", "DR501", "DR600", "DR601"):
        assert ran in codes, ran
    assert codes["DR301"][0]["severity"] == "ok" and "352 message(s)" in codes["DR301"][0]["message"]
    assert {"area", "code", "severity", "message", "fix"} <= set(report["checks"][0])

    screen = cli("doctor", "--config", str(config), "--rocksmq", ROCKSMQ, "--milvus-version", "2.3.5")
    assert screen.code == 0 and screen.stdout.startswith("verdict: ok")
    assert "passed: DR100" in screen.stdout


def test_mq_type_edited_to_natsmq_with_rocksmq_data_left_is_named_with_the_migration(tmp_path, cli):
    config = config_copy(tmp_path)
    config.write_text(config.read_text().replace("type: default", "type: natsmq"))
    report = cli("doctor", "--config", str(config), "--rocksmq", ROCKSMQ, "--milvus-version", "2.3.5", "--json").json()
    drift = checks_by_code(report)["DR111"][0]
    assert drift["severity"] == "warning" and "rocksmq given holds 352 message(s)" in drift["message"]
    assert f"mqctl config set {config} mq.type rocksmq --yes" in drift["fix"]
    assert f"mqctl migrate --config {config} --to natsmq" in drift["fix"]
    gone = checks_by_code(report)["DR500"][0]  # natsmq is gone in 2.6: said on 2.3.5, where it still runs fine
    assert gone["severity"] == "info" and "removed in 2.6" in gone["message"] and "--to rocksmq" in gone["fix"]
    args = ("doctor", "--config", str(config), "--rocksmq", ROCKSMQ, "--milvus-version", "2.3.5")
    assert cli(*args).code == 0 and cli(*args, "--strict").code == 1  # warnings fail only with --strict


def test_force_deny_left_true_is_an_error_with_the_command_that_reopens_writes(tmp_path, cli):
    extra = "\nquotaAndLimits:\n  enabled: true\n  limitWriting:\n    forceDeny: true\n"
    config = config_copy(tmp_path, extra=extra)
    result = cli("doctor", "--config", str(config), "--rocksmq", ROCKSMQ, "--milvus-version", "2.3.5", "--json")
    assert result.code == 1
    report = result.json()
    deny = checks_by_code(report)["DR200"][0]
    assert report["verdict"] == "error" and deny["severity"] == "error"
    assert f"{config}:" in deny["message"] and "refuses writes" in deny["message"]
    assert deny["fix"].startswith(f"mqctl config set {config} quotaAndLimits.limitWriting.forceDeny false --yes")
    screen = cli("doctor", "--config", str(config), "--rocksmq", ROCKSMQ, "--milvus-version", "2.3.5")
    assert screen.code == 1 and screen.stdout.startswith("verdict: error") and "fix: mqctl config set" in screen.stdout


def test_an_interrupted_migration_journal_says_where_it_stopped_and_how_to_go_on(tmp_path, cli):
    from mqctl.migrate.record.journal import DONE, FAILED, JOURNAL_NAME, Journal

    config = config_copy(tmp_path)
    journal = Journal.new(
        config.parent / JOURNAL_NAME,
        "rocksmq",
        "natsmq",
        {"configs": [str(config)], "to": "natsmq", "milvus": {"uri": "http://127.0.0.1:19530"}},
    )
    for name in ("preflight", "stop-writes", "flush", "stop"):
        journal.step(name).status = DONE
    journal.step("switch").status = FAILED
    journal.step("switch").error = "the config could not be written"
    journal.save()
    result = cli("doctor", "--config", str(config), "--rocksmq", ROCKSMQ, "--milvus-version", "2.3.5", "--json")
    assert result.code == 1
    found = checks_by_code(result.json())["DR210"][0]
    assert found["severity"] == "error" and "step switch is failed: the config could not be written" in found["message"]
    assert f"mqctl migrate resume --config {config}" in found["fix"]
    assert f"mqctl migrate rollback --config {config}" in found["fix"]
    assert "writes stay refused" in found["impact"]


def test_natsmq_store_whose_streams_differ_from_the_config_is_the_10058_abort(tmp_path, cli):
    store = tmp_path / "store"
    shutil.copytree(NATS_STORE, store)
    config = config_copy(tmp_path, "milvus-2.3-standalone-natsmq.yaml")
    result = cli(
        "doctor",
        "--config",
        str(config),
        "--nats-store",
        str(store),
        "--milvus-version",
        "2.3.5",
        "--json",
        timeout=120,
    )
    assert result.code == 1, result.stderr
    drift = checks_by_code(result.json())["RET100"][0]
    assert drift["area"] == "mq" and "10058" in drift["message"] and "retention apply" in drift["fix"]

    # the same store against a config that says what its streams were created with (no age limit): no drift
    config.write_text(re.sub(r"maxAge: \d+", "maxAge: 0", config.read_text()))
    same = cli(
        "doctor",
        "--config",
        str(config),
        "--nats-store",
        str(store),
        "--milvus-version",
        "2.3.5",
        "--json",
        timeout=120,
    ).json()
    assert "RET100" not in checks_by_code(same)


def _etcd_put(url: str, key: str, value: str) -> None:
    import httpx

    body = {"key": base64.b64encode(key.encode()).decode(), "value": base64.b64encode(value.encode()).decode()}
    httpx.post(f"{url}/v3/kv/put", json=body, timeout=5).raise_for_status()


@pytest.mark.etcd
def test_an_etcd_override_that_contradicts_the_file_and_a_deny_set_in_etcd(tmp_path, cli, etcd_url):
    config = config_copy(tmp_path, etcd=etcd_url)
    _etcd_put(etcd_url, "by-dev/config/mq/type", "natsmq")
    _etcd_put(etcd_url, "by-dev/config/quotaAndLimits/enabled", "true")
    _etcd_put(etcd_url, "by-dev/config/quotaAndLimits/limitWriting/forceDeny", "true")
    result = cli("doctor", "--config", str(config), "--rocksmq", ROCKSMQ, "--milvus-version", "2.3.5", "--json")
    assert result.code == 1
    report = result.json()
    codes = checks_by_code(report)
    assert report["target"]["next_mq"] == "natsmq"
    assert any("by-dev/config/mq/type" in c["message"] for c in codes["MQ150"])  # the override hides the yaml
    assert codes["DR111"][0]["severity"] == "warning"
    deny = codes["DR200"][0]
    assert deny["severity"] == "error" and "etcd by-dev/config/quotaAndLimits/limitWriting/forceDeny" in deny["message"]
    assert "etcdctl --endpoints" in deny["fix"]
    # the etcd answers: the checkpoints were read (the fixture's etcd meta is not in it: nothing to compare)
    assert "DR401" not in codes


def test_nothing_to_examine_is_exit_3_one_line_and_one_json_error(cli):
    from mqctl.doctor.discovery import candidates

    if candidates():
        pytest.skip("a Milvus standalone runs on this host")
    result = cli("doctor")
    assert result.code == 3 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "--pid PID" in result.stderr
    as_json = cli("doctor", "--json")
    assert as_json.code == 3 and set(json.loads(as_json.stdout)) == {"error"}


def test_a_pid_of_no_process_is_exit_3_one_line_and_one_json_error(cli):
    result = cli("doctor", "--pid", "999999999")
    assert result.code == 3 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and "no such process" in result.stderr
    as_json = cli("doctor", "--pid", "999999999", "--json")
    error = as_json.json()["error"]
    assert as_json.code == 3 and list(as_json.json()) == ["error"] and "--sandbox" in error["hint"]


def test_bad_usage_is_exit_2(tmp_path, cli):
    both = cli("doctor", "--pid", "1", "--sandbox", str(tmp_path))
    assert both.code == 2 and "choose --pid or --sandbox" in both.stderr
    two = cli("doctor", "--rocksmq", ROCKSMQ, "--nats", "nats://127.0.0.1:1")
    assert two.code == 2 and "choose one MQ source" in two.stderr
    not_milvus = cli("doctor", "--pid", "1", "--json")
    assert not_milvus.code in (2, 3) and "error" in not_milvus.json()


def test_empty_mq_type_in_the_environment_makes_explain_predict_the_panic(cli):
    result = cli(
        "config", "explain", str(SAMPLES / "milvus-2.3-standalone-rocksmq.yaml"), "--env", "--json", env={"MQ_TYPE": ""}
    )
    assert result.json()["panic"] == "mq type  is invalid"


def _put_collection(etcd_url: str, root: str, insert: dict, pchannel: str, checkpoint: int, ts: int) -> None:
    """The collection (etcdpb.CollectionInfo) and its vchannel's channel checkpoint (msgpb.MsgPosition), written
    by hand from Milvus's field numbers."""
    vchannel, cid = insert["shard"], insert["collection_id"]
    put(etcd_url, f"{root}/meta/root-coord/database/collection-info/1/{cid}",
        collection_info(cid, insert["collection"], {vchannel: pchannel}))  # fmt: skip
    put(etcd_url, f"{root}/meta/datacoord-meta/channel-cp/{vchannel}", position(vchannel, checkpoint, ts))


@pytest.mark.etcd
def test_natsmq_retention_past_a_checkpoint_is_an_error_with_the_rows_at_risk(tmp_path, cli, etcd_url):
    store = tmp_path / "store"
    shutil.copytree(NATS_STORE, store)
    channel = "by-dev-rootcoord-dml_0"
    peeked = cli("channels", "peek", channel, "--nats-store", str(store), "--type", "insert", "--json")
    insert = peeked.json()["messages"][0]
    purge_below(store, channel, insert["id"] + 2)  # the insert and the message after it are gone
    _put_collection(etcd_url, "doctor", insert, channel, insert["id"] - 1, insert["tso"] - 1)
    config = config_copy(tmp_path, "milvus-2.3-standalone-natsmq.yaml", etcd=etcd_url)
    config.write_text(
        re.sub(r"maxAge: \d+", "maxAge: 0", config.read_text().replace("rootPath: by-dev", "rootPath: doctor"))
    )
    result = cli("doctor", "--config", str(config), "--nats-store", str(store), "--milvus-version", "2.3.5", "--json")
    assert result.code == 1, result.stderr
    expired = checks_by_code(result.json())["CP100"][0]
    assert expired["area"] == "checkpoints" and expired["severity"] == "error"
    assert insert["shard"] in expired["message"] and "FlushAll" in expired["fix"]
    assert expired["impact"] == "a restart loses the rows in 2 message(s) Milvus had not flushed, without an error"


def test_a_natsmq_store_another_server_uses_is_an_error_and_is_not_opened(tmp_path, cli):
    import subprocess

    from mqctl.mq.nats.server import nats_server_binary

    store = tmp_path / "store"
    shutil.copytree(NATS_STORE, store)
    conf = tmp_path / "other.conf"
    conf.write_text(f"listen: 127.0.0.1:{free_port()}\njetstream {{ store_dir: {json.dumps(str(store))} }}\n")
    server = subprocess.Popen(
        [nats_server_binary(), "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        config = config_copy(tmp_path, "milvus-2.3-standalone-natsmq.yaml")
        result = cli(
            "doctor", "--config", str(config), "--nats-store", str(store), "--milvus-version", "2.3.5", "--json"
        )
        assert result.code == 1, result.stderr
        used = checks_by_code(result.json())["DR311"][0]
        assert used["severity"] == "error" and f"{server.pid} (nats-server)" in used["message"]
        assert "RET100" not in checks_by_code(result.json())  # the store was not opened
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_rocksmq_data_left_behind_by_a_switch_without_migration_and_by_a_finished_one(tmp_path, cli):
    """Milvus stopped, its config on natsmq: a non-empty rocksmq.path is a warning, unless the journal of a
    completed rocksmq -> natsmq migration explains it (the old folder stays, by design)."""
    from mqctl.migrate.record.journal import COMPLETED, JOURNAL_NAME, Journal

    rocks, store = tmp_path / "rdb_data", tmp_path / "store"
    shutil.copytree(ROCKSMQ, rocks)
    shutil.copytree(NATS_STORE, store)
    config = config_copy(tmp_path, "milvus-2.3-standalone-natsmq.yaml")
    text = (
        config.read_text().replace("/var/lib/milvus/rdb_data", str(rocks)).replace("/var/lib/milvus/nats", str(store))
    )
    config.write_text(re.sub(r"maxAge: \d+", "maxAge: 0", text))
    args = ("doctor", "--config", str(config), "--milvus-version", "2.3.5", "--json")
    report = cli(*args).json()
    assert report["target"]["paths"]["natsmq"] == str(store)  # the store the config names is the one read
    left = checks_by_code(report)["DR111"][0]
    assert left["severity"] == "warning" and f"the rocksmq folder {rocks} still holds" in left["message"]
    assert f"mqctl channels list --rocksmq {rocks}" in left["fix"]

    journal = Journal.new(
        config.parent / JOURNAL_NAME,
        "rocksmq",
        "natsmq",
        {"configs": [str(config)], "to": "natsmq", "milvus": {"uri": "http://127.0.0.1:19530"}},
    )
    journal.state = COMPLETED
    journal.save()
    explained = checks_by_code(cli(*args).json())["DR111"][0]
    assert explained["severity"] == "info" and f"completed migration {journal.id} left behind" in explained["message"]


@pytest.mark.etcd
def test_a_2_6_etcd_state_names_the_pinned_mq_a_wal_switch_under_way_and_natsmq_gone(tmp_path, cli, etcd_url):
    """etcd holding a Milvus 2.6 deployment's streaming state (written by hand from streaming.proto): the
    yaml's mq.type against the one pinned at first boot, an AlterWAL stage left set, and natsmq on 2.6."""
    import time

    from tests.helpers import streaming_meta as enc

    now = time.time()
    for root, pinned, wal_position, alter in (
        ("pinned26", "woodpecker", enc.wp_message_id(3, 7), None),
        ("midway26", "rocksmq", enc.rmq_message_id(99), (enc.WOODPECKER, enc.tso(now - 30), 1, {})),
    ):
        pchannel = f"{root}-rootcoord-dml_0"
        enc.put(etcd_url, f"{root}/config/mqtype", pinned)
        enc.put(etcd_url, f"{root}/meta/streamingcoord-meta/pchannel/{pchannel}",
                enc.pchannel_meta(pchannel, 1, 1, "10.0.0.9:22222"))  # fmt: skip
        enc.put(etcd_url, f"{root}/meta/streamingnode-meta/wal/{pchannel}/consume-checkpoint",
                enc.wal_checkpoint(wal_position, enc.tso(now - 10), alter=alter))  # fmt: skip

    def doctor(root: str, mq: str):
        config = tmp_path / f"{root}-{mq}" / "milvus.yaml"
        config.parent.mkdir()
        config.write_text(f"etcd:\n  rootPath: {root}\nmq:\n  type: {mq}\nrocksmq:\n  path: {tmp_path / 'rdb'}\n")
        args = ("doctor", "--config", str(config), "--etcd", etcd_url, "--milvus-version", "2.6.17", "--json")
        return config, cli(*args)

    config, result = doctor("pinned26", "rocksmq")
    report = result.json()
    codes = checks_by_code(report)
    assert report["target"]["next_mq"] == "woodpecker"  # the pinned value wins over the yaml
    (pin,) = codes["DR502"]
    assert pin["severity"] == "warning" and "1 pchannel(s) on woodpecker" in pin["message"]
    assert "mq.type pinned to woodpecker (pinned26/config/mqtype)" in pin["message"]
    assert f"the yaml says mq.type rocksmq ({config}:4), which changes nothing" in pin["message"]
    assert pin["fix"].startswith(f"mqctl config set {config} mq.type woodpecker --yes")
    assert "DR501" not in codes  # 2.6 already: nothing left to pin at an upgrade
    assert codes["DR500"][0]["severity"] == "ok"

    _, result = doctor("midway26", "rocksmq")
    (switch,) = checks_by_code(result.json())["DR502"]
    assert switch["severity"] == "warning"
    assert (
        "an online WAL switch to woodpecker is at stage flushing on 1 pchannel(s) (midway26-rootcoord-dml_0)"
        in (switch["message"])
    )

    _, result = doctor("fresh26", "natsmq")  # no 2.6 state yet: the version says 2.6
    gone = checks_by_code(result.json())["DR500"][0]
    assert result.code == 1 and gone["severity"] == "error" and "cannot start on it" in gone["message"]


@pytest.mark.etcd
def test_a_2_6_wal_state_is_judged_as_channels_checkpoints_judges_it(tmp_path, cli, etcd_url):
    """DR402: the doctor reports the WAL-state findings `mqctl channels checkpoints --etcd --woodpecker` makes on the
    same etcd and the Woodpecker folder the config names (a checkpoint on another WAL than the pinned one, a loopback
    quorum beside real ones, a dropped vchannel, a channel checkpoint before the first stored entry), each with the
    command that lists every row; a healthy state is one ok."""
    import time

    from tests.helpers import streaming_meta as enc
    from tests.helpers import woodpecker_segments as w

    now = time.time()
    service = ("10.0.0.21:18080", "10.0.0.22:18080", "10.0.0.23:18080")
    for root, healthy in (("docbad26", False), ("docok26", True)):
        p0 = f"{root}-rootcoord-dml_0"
        meta, logs = f"{root}/meta", f"{root}/woodpecker/logs"
        enc.put(etcd_url, f"{root}/config/mqtype", "woodpecker")
        enc.put(etcd_url, f"{meta}/streamingcoord-meta/pchannel/{p0}", enc.pchannel_meta(p0, 1, 1, "10.0.0.9:1"))
        position = enc.wp_message_id(2, 4) if healthy else enc.rmq_message_id(4242)
        enc.put(etcd_url, f"{meta}/streamingnode-meta/wal/{p0}/consume-checkpoint",
                enc.wal_checkpoint(position, enc.tso(now - 10)))  # fmt: skip
        v0, gone = f"{p0}_100v0", f"{p0}_200v0"
        enc.put(etcd_url, f"{meta}/datacoord-meta/channel-cp/{v0}",
                enc.msg_position(v0, enc.WOODPECKER, enc.wp_id_bytes(2, 1), enc.tso(now - 20)))  # fmt: skip
        enc.put(etcd_url, f"{meta}/datacoord-meta/channel-cp/{gone}",
                enc.msg_position(gone, enc.WOODPECKER, enc.wp_id_bytes(1, 1), enc.MAX_UINT64))  # fmt: skip
        enc.put(etcd_url, f"{logs}/{p0}", enc.log_meta(5, int(now - 3600), 1, 40))
        for seg in (2, 3):
            loopback = seg == 3 and not healthy
            enc.put(etcd_url, f"{logs}/{p0}/segments/{seg}", enc.segment_meta(
                seg, state=0 if seg == 3 else 3, created_ms=int((now - 600) * 1000),
                quorum_id=-1 if loopback else seg, nodes=("127.0.0.1:59456",) if loopback else service))  # fmt: skip
            if healthy or seg == 3:  # the unhealthy WAL lost segment 2, where its channel checkpoint points
                segment = tmp_path / root / "data" / "wp" / "5" / str(seg)
                w.local_segment(segment, [w.messages(3), w.messages(3, 3)], finalized=seg == 2)

    def judged(root: str) -> tuple[dict[str, list[dict[str, Any]]], set[str]]:
        config = tmp_path / root / "milvus.yaml"
        config.write_text(
            f"etcd:\n  rootPath: {root}\nmq:\n  type: woodpecker\nwoodpecker:\n  storage:\n    type: local\n"
            f"localStorage:\n  path: {tmp_path / root / 'data'}\n"
        )
        doctor = cli("doctor", "--config", str(config), "--etcd", etcd_url, "--milvus-version", "2.6.17", "--json")
        wal = str(tmp_path / root / "data" / "wp")
        listed = cli("channels", "checkpoints", "--etcd", etcd_url, "--etcd-root", root, "--woodpecker", wal, "--json")
        return checks_by_code(doctor.json()), {f["code"] for f in listed.json()["findings"]} - {"CP111", "CP103"}

    codes, expected = judged("docbad26")
    assert expected >= {"CP110", "CP112", "CP114", "CP116"}  # what this state was built to show
    (lost,) = codes["CP116"]
    assert lost["severity"] == "error" and "precedes the first stored Woodpecker entry 3/0" in lost["message"]
    assert f"--woodpecker {tmp_path / 'docbad26' / 'data' / 'wp'}" in lost["fix"]
    assert {code for code in codes if code.startswith("CP11")} == expected
    (mismatch,) = codes["CP110"]
    assert mismatch["severity"] == "error" and "docbad26-rootcoord-dml_0" in mismatch["message"]
    assert "mqctl channels checkpoints --etcd" in mismatch["fix"] and "--etcd-root docbad26" in mismatch["fix"]
    assert codes["CP112"][0]["severity"] == "warning" and "127.0.0.1" in codes["CP112"][0]["message"]
    assert codes["CP114"][0]["severity"] == "info" and "dropped" in codes["CP114"][0]["message"]
    assert "DR402" not in codes

    codes, expected = judged("docok26")
    assert expected == {"CP114"}
    (fine,) = codes["DR402"]
    assert fine["severity"] == "ok" and "1 pchannel(s) and 2 vchannel(s)" in fine["message"]
    assert "still in the 2 segment(s) at" in fine["message"]
    assert "CP110" not in codes and "CP112" not in codes


@pytest.mark.etcd
def test_a_woodpecker_segment_short_of_etcd_after_the_wal_checkpoint_is_cp118(tmp_path, cli, etcd_url):
    """DR402 with the files where the config puts them: etcd records segment 2 as completed with entries up to 9,
    the file holds 0..5 (finalized, so only etcd can tell); the WAL checkpoint is 2/1, so entries 2/6..2/9 after it
    are gone: CP118 (error) names them and the vchannel whose rows are at risk, CP117 says what disagrees."""
    import time

    from tests.helpers import streaming_meta as enc
    from tests.helpers import woodpecker_segments as w

    now, root = time.time(), "docshort26"
    p0, v0 = f"{root}-rootcoord-dml_0", f"{root}-rootcoord-dml_0_100v0"
    meta, logs = f"{root}/meta", f"{root}/woodpecker/logs"
    enc.put(etcd_url, f"{root}/config/mqtype", "woodpecker")
    enc.put(etcd_url, f"{meta}/streamingcoord-meta/pchannel/{p0}", enc.pchannel_meta(p0, 1, 1, "10.0.0.9:1"))
    enc.put(etcd_url, f"{meta}/streamingnode-meta/wal/{p0}/consume-checkpoint",
            enc.wal_checkpoint(enc.wp_message_id(2, 1), enc.tso(now - 10)))  # fmt: skip
    enc.put(etcd_url, f"{meta}/streamingnode-meta/wal/{p0}/vchannel/{v0}", enc.vchannel_meta(v0, 1, 100, enc.tso(now)))
    enc.put(etcd_url, f"{logs}/{p0}", enc.log_meta(5, int(now - 3600)))
    enc.put(etcd_url, f"{logs}/{p0}/segments/2",
            enc.segment_meta(2, state=2, created_ms=int((now - 600) * 1000), last_entry=9))  # fmt: skip
    w.local_segment(tmp_path / "data" / "wp" / "5" / "2", [w.messages(3), w.messages(3, 3)])
    config = tmp_path / "milvus.yaml"
    config.write_text(
        f"etcd:\n  rootPath: {root}\nmq:\n  type: woodpecker\nwoodpecker:\n  storage:\n    type: local\n"
        f"localStorage:\n  path: {tmp_path / 'data'}\n"
    )
    doctor = cli("doctor", "--config", str(config), "--etcd", etcd_url, "--milvus-version", "2.6.17", "--json")
    codes = checks_by_code(doctor.json())
    (lost,) = codes["CP118"]
    assert lost["severity"] == "error" and f"rows of {v0}" in lost["message"]
    assert "do not hold entries from 2/6 on, after the WAL checkpoint 2/1" in lost["message"]
    assert "entries 6..9 are missing" in codes["CP117"][0]["message"]
