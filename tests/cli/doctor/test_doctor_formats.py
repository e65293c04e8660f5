"""`mqctl doctor --format prometheus` and `--format nagios` end to end on the real RocksMQ and natsmq fixtures, a
real etcd and a 2.6 Woodpecker state: the numbers are the ones `channels list` and `channels checkpoints` print for
the same data, and the Nagios states and exit codes are the plugin's."""

from __future__ import annotations

import datetime as dt
import re
import shutil
import time

import pytest

from tests.helpers.metrics import sample_config, value
from tests.helpers.milvus_meta import collection_info, position, put
from tests.helpers.natsmq import max_age_keeping, purge_below
from tests.helpers.paths import FIXTURES

ROCKSMQ = str(FIXTURES / "rocksmq" / "rdb_data")


NATS_STORE = FIXTURES / "natsmq" / "store"


NOW = "2026-12-01T00:00:00Z"  # MQCTL_NOW: ages do not depend on the day the tests run


CONTRACT = (
    "mqctl_source_up",
    "mqctl_channel_messages",
    "mqctl_channel_bytes",
    "mqctl_channel_oldest_age_seconds",
    "mqctl_checkpoint_lag_seconds",
    "mqctl_retention_headroom_seconds",
    "mqctl_wal_disk_free_bytes",
    "mqctl_writes_denied",
    "mqctl_doctor_findings",
    "mqctl_scrape_duration_seconds",
)


def test_prometheus_textfile_holds_the_contract_families_with_the_channels_numbers(tmp_path, cli):
    config = sample_config(tmp_path)
    args = ("doctor", "--config", str(config), "--rocksmq", ROCKSMQ, "--milvus-version", "2.3.5")
    result = cli(*args, "--format", "prometheus", env={"MQCTL_NOW": NOW})
    assert result.code == 0, result.stderr
    text = result.stdout
    for name in CONTRACT:
        assert f"# TYPE {name} gauge" in text, name
    listed = cli("channels", "list", "--rocksmq", ROCKSMQ, "--json").json()["channels"]
    now = dt.datetime.fromisoformat(NOW.replace("Z", "+00:00"))
    for channel in listed:
        labels = {"mq": "rocksmq", "channel": channel["name"]}
        assert value(text, "mqctl_channel_messages", **labels) == channel["messages"]
        assert value(text, "mqctl_channel_bytes", **labels) == channel["bytes"]
        first = dt.datetime.fromisoformat(channel["first_time"].replace("Z", "+00:00"))
        assert value(text, "mqctl_channel_oldest_age_seconds", **labels) == pytest.approx((now - first).total_seconds())
    assert value(text, "mqctl_source_up", source="mq") == 1
    assert value(text, "mqctl_source_up", source="etcd") == 0  # the sample's etcd does not answer
    assert value(text, "mqctl_writes_denied", source="config") == 0
    free = value(text, "mqctl_wal_disk_free_bytes", mq="rocksmq", path=ROCKSMQ)
    assert free == pytest.approx(shutil.disk_usage(ROCKSMQ).free, rel=0.05)
    report = cli(*args, "--json").json()
    for check in report["checks"]:  # one sample per code and severity, counting the checks of the JSON
        same = [c for c in report["checks"] if (c["code"], c["severity"]) == (check["code"], check["severity"])]
        assert value(text, "mqctl_doctor_findings", code=check["code"], severity=check["severity"]) == len(same)


def test_nagios_ok_critical_and_unknown_with_the_plugin_exit_codes(tmp_path, cli):
    config = sample_config(tmp_path / "ok")
    args = ("--rocksmq", ROCKSMQ, "--milvus-version", "2.3.5", "--format", "nagios")
    ok = cli("doctor", "--config", str(config), *args)
    assert ok.code == 0 and ok.stdout.startswith("MQCTL OK - ") and ok.stdout.count("\n") == 1
    assert "| errors=0;;1 warnings=0;1" in ok.stdout

    denied = sample_config(tmp_path / "denied")
    denied.write_text(denied.read_text() + "\nquotaAndLimits:\n  enabled: true\n  limitWriting:\n    forceDeny: true\n")
    critical = cli("doctor", "--config", str(denied), *args)
    assert critical.code == 2 and critical.stdout.startswith("MQCTL CRITICAL - 1 error(s)"), critical.stdout
    assert "DR200" in critical.stdout and "errors=1;;1" in critical.stdout
    text = cli("doctor", "--config", str(denied), "--rocksmq", ROCKSMQ, "--format", "prometheus").stdout
    assert value(text, "mqctl_writes_denied", source="config") == 1
    assert value(text, "mqctl_doctor_findings", code="DR200", severity="error") == 1

    natsmq = sample_config(tmp_path / "warning")  # natsmq data under a rocksmq config: DR111 is a warning
    natsmq.write_text(natsmq.read_text().replace("type: rocksmq", "type: natsmq"))
    warning = cli("doctor", "--config", str(natsmq), *args)
    assert warning.code == 1 and warning.stdout.startswith("MQCTL WARNING - 0 error(s), 1 warning(s): DR111")

    unknown = cli("doctor", "--pid", "999999999", "--format", "nagios")
    assert unknown.code == 3 and unknown.stdout.startswith("MQCTL UNKNOWN - ") and "no such process" in unknown.stdout
    both = cli("doctor", "--pid", "999999999", "--sandbox", str(tmp_path), "--format", "nagios")
    assert both.code == 3 and "choose --pid or --sandbox" in both.stdout  # bad usage is UNKNOWN to a plugin
    assert cli("doctor", "--json", "--format", "nagios").code == 2


@pytest.mark.etcd
def test_checkpoint_lag_and_headroom_are_the_ones_channels_checkpoints_reports(tmp_path, cli, etcd_url):
    """The natsmq fixture with a checkpoint just before its first insert: lag in messages and seconds as `channels
    checkpoints` says, and a headroom of the stream's MaxAge less the age of the first unflushed message."""
    store = tmp_path / "store"
    shutil.copytree(NATS_STORE, store)
    channel = "by-dev-rootcoord-dml_0"
    insert = cli("channels", "peek", channel, "--nats-store", str(store), "--type", "insert", "--json").json()
    insert = insert["messages"][0]
    vchannel, cid = insert["shard"], insert["collection_id"]
    put(etcd_url, f"formats/meta/root-coord/database/collection-info/1/{cid}",
        collection_info(cid, insert["collection"], {vchannel: channel}))  # fmt: skip
    put(
        etcd_url,
        f"formats/meta/datacoord-meta/channel-cp/{vchannel}",
        position(vchannel, insert["id"] - 1, insert["tso"] - 1),
    )
    config = sample_config(tmp_path / "cfg", "milvus-2.3-standalone-natsmq.yaml", etcd=etcd_url)
    keep_all = max_age_keeping(store)  # the streams get an age limit that keeps every message of the fixture
    text = re.sub(r"maxAge: \d+", f"maxAge: {keep_all}", config.read_text())
    config.write_text(text.replace("rootPath: by-dev", "rootPath: formats"))
    applied = cli("retention", "apply", "--config", str(config), "--nats-store", str(store), "--yes")
    assert applied.code == 0, applied.stderr
    env = {"MQCTL_NOW": NOW}
    text = cli("doctor", "--config", str(config), "--nats-store", str(store), "--format", "prometheus", env=env).stdout
    listed = cli(
        "channels", "checkpoints", "--nats-store", str(store), "--etcd", etcd_url, "--etcd-root", "formats", "--json",
        env=env,
    ).json()  # fmt: skip
    row = next(r for r in listed["checkpoints"] if r["vchannel"] == vchannel)
    labels = {"mq": "natsmq", "vchannel": vchannel, "pchannel": channel}
    assert row["lag_messages"] > 0 and row["retention_seconds"] == int(keep_all) * 60
    assert value(text, "mqctl_checkpoint_lag_messages", **labels) == row["lag_messages"]
    assert value(text, "mqctl_checkpoint_lag_seconds", **labels) == pytest.approx(row["lag_seconds"])
    now = dt.datetime.fromisoformat(NOW.replace("Z", "+00:00"))
    since = dt.datetime.fromisoformat(row["unflushed_since"].replace("Z", "+00:00"))
    expected = row["retention_seconds"] - (now - since).total_seconds()
    assert value(text, "mqctl_retention_headroom_seconds", **labels) == pytest.approx(expected, abs=0.01)
    assert value(text, "mqctl_source_up", source="etcd") == 1

    # retention passes the checkpoint: the stream drops the insert, the checkpoint expires, headroom is negative
    purge_below(store, channel, insert["id"] + 2)
    text = cli("doctor", "--config", str(config), "--nats-store", str(store), "--format", "prometheus", env=env).stdout
    assert value(text, "mqctl_retention_headroom_seconds", **labels) <= -1
    assert value(text, "mqctl_doctor_findings", code="CP100", severity="error") == 1


@pytest.mark.etcd
def test_woodpecker_truncation_lag_and_the_wal_checkpoint_lag_of_a_2_6_state(tmp_path, cli, etcd_url):
    """A 2.6 Woodpecker WAL whose checkpoint moved to segment 3 while segment 2, sealed two hours ago, is still
    there: two hours of truncation lag, its bytes and one segment; each vchannel's checkpoint lag on the WAL."""
    from tests.helpers import streaming_meta as enc
    from tests.helpers import woodpecker_segments as w

    now = time.time()
    root = "formats26"
    p0, meta, logs = f"{root}-rootcoord-dml_0", f"{root}/meta", f"{root}/woodpecker/logs"
    enc.put(etcd_url, f"{root}/config/mqtype", "woodpecker")
    enc.put(etcd_url, f"{meta}/streamingcoord-meta/pchannel/{p0}", enc.pchannel_meta(p0, 1, 1, "10.0.0.9:1"))
    enc.put(etcd_url, f"{meta}/streamingnode-meta/wal/{p0}/consume-checkpoint",
            enc.wal_checkpoint(enc.wp_message_id(3, 1), enc.tso(now - 10)))  # fmt: skip
    v0 = f"{p0}_100v0"
    enc.put(etcd_url, f"{meta}/datacoord-meta/channel-cp/{v0}",
            enc.msg_position(v0, enc.WOODPECKER, enc.wp_id_bytes(3, 1), enc.tso(now - 30)))  # fmt: skip
    enc.put(etcd_url, f"{logs}/{p0}", enc.log_meta(5, int(now - 86400)))
    service = ("10.0.0.21:18080", "10.0.0.22:18080", "10.0.0.23:18080")
    sealed = int((now - 7200) * 1000)
    enc.put(etcd_url, f"{logs}/{p0}/segments/2", enc.segment_meta(
        2, state=3, created_ms=sealed - 600_000, completed_ms=sealed, sealed_ms=sealed, last_entry=5, size=4096,
        quorum_id=2, nodes=service))  # fmt: skip
    enc.put(etcd_url, f"{logs}/{p0}/segments/3", enc.segment_meta(
        3, state=0, created_ms=sealed, quorum_id=3, nodes=service))  # fmt: skip
    for seg in (2, 3):
        w.local_segment(
            tmp_path / "data" / "wp" / "5" / str(seg), [w.messages(3), w.messages(3, 3)], finalized=seg == 2
        )
    config = tmp_path / "milvus.yaml"
    config.write_text(
        f"etcd:\n  rootPath: {root}\nmq:\n  type: woodpecker\nwoodpecker:\n  storage:\n    type: local\n"
        f"localStorage:\n  path: {tmp_path / 'data'}\n"
    )
    text = cli("doctor", "--config", str(config), "--etcd", etcd_url, "--milvus-version", "2.6.17", "--format",
               "prometheus").stdout  # fmt: skip
    assert value(text, "mqctl_woodpecker_truncation_lag_seconds", pchannel=p0) == pytest.approx(7200, abs=120)
    assert value(text, "mqctl_woodpecker_untruncated_bytes", pchannel=p0) == 4096
    assert value(text, "mqctl_woodpecker_untruncated_segments", pchannel=p0) == 1
    assert value(text, "mqctl_checkpoint_lag_seconds", vchannel=v0, mq="woodpecker") == pytest.approx(30, abs=60)
    assert value(text, "mqctl_source_up", source="woodpecker") == 1
