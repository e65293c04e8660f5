"""mqctl's view of the 2.6/3.0 etcd state beside upstream's own decode of it, field by field: the reference
writer (tests/reference/writer, `-decode`) unmarshals each key of a fixture's etcd.json with Milvus's and
Woodpecker's generated types (streamingpb.PChannelMeta, WALCheckpoint, VChannelMeta, msgpb.MsgPosition,
Woodpecker's LogMeta and SegmentMetadata; the Woodpecker ids inside positions by Woodpecker's own
DeserializeLogMessageId) and prints it as JSON; `channels checkpoints --etcd --json` and mqctl's Woodpecker meta
reader must say the same. This is the comparison birdwatcher would give (its `show` commands decode with the same
types), which cannot be built here: github.com/milvus-io/birdwatcher is not served by the Go module proxy
(docs/streaming.md)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from mqctl.config.resolve.sources import EtcdConfig
from mqctl.mq.woodpecker.meta import read_woodpecker_meta
from tests.helpers import upstream_writer as upstream
from tests.helpers.cli import run_cli
from tests.helpers.paths import IN_CI
from tests.helpers.streaming_meta import put

pytestmark = [pytest.mark.slow, pytest.mark.etcd]

if upstream.go_binary() is None:
    if IN_CI:
        pytest.fail("no `go` on PATH: CI=true on a machine that has Go (.ci/run) must build the reference writer")
    pytest.skip("no `go` on PATH: the reference writer cannot be built on this machine", allow_module_level=True)

FOLDERS = upstream.fixture_folders() + sorted(upstream.hazard_folders().values())
STATES = {"Active": "active", "Completed": "completed", "Sealed": "sealed", "Truncated": "truncated"}


@pytest.fixture(scope="module")
def writers(tmp_path_factory) -> dict[str, Path]:
    """The writer of each line, built once (modules and build cache under ~/.cache/mqctl-go)."""
    out = tmp_path_factory.mktemp("writers")
    return {line.name.removeprefix("woodpecker-"): upstream.build(line, out) for line in upstream.LINES}


def tso_ms(value: str | int) -> int:
    return int(value) >> 18


def iso_ms(text: str | None) -> int | None:
    if text is None:
        return None
    return round(dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def position(decoded: dict) -> str:
    return f"{decoded['woodpecker_id']['segment_id']}/{decoded['woodpecker_id']['entry_id']}"


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_mqctl_reads_the_etcd_state_as_upstreams_types_decode_it(folder, writers, etcd_url):
    import httpx

    manifest = upstream.manifest(folder)
    theirs = upstream.decode_with_upstream(writers[manifest["woodpecker"]], folder)
    assert not [k for k, v in theirs.items() if "error" in v]
    httpx.post(f"{etcd_url}/v3/kv/deleterange", json={"key": "AA==", "range_end": "AA=="}).raise_for_status()
    for raw_key, raw_value in upstream.etcd_items(folder):
        put(etcd_url, raw_key.decode(), raw_value)
    result = run_cli("channels", "checkpoints", "--etcd", etcd_url, "--json")
    assert result.code in (0, 1), result.stderr
    ours = result.json()
    assert not [f for f in ours["findings"] if f["code"] == "CP115"]  # every key decodes

    by_kind: dict[str, dict[str, dict]] = {}
    for key, value in theirs.items():
        by_kind.setdefault(value.get("type", "pin"), {})[key] = value

    pinned = [v["value"] for k, v in theirs.items() if k.endswith("/config/mqtype")]
    assert ours["pinned_mq"] == (pinned[0] if pinned else None)

    pchannels = {p["pchannel"]: p for p in ours["pchannels"]}
    for key, pmeta in by_kind["*streamingpb.PChannelMeta"].items():
        fields, row = pmeta["fields"], pchannels[key.rsplit("/", 1)[1]]
        assert row["term"] == int(fields["channel"]["term"])
        assert row["node"] == fields["node"]["address"]
        assert row["state"] == fields["state"].removeprefix("PCHANNEL_META_STATE_").lower()
    for key, cp in by_kind["*streamingpb.WALCheckpoint"].items():
        row = pchannels[key.split("/wal/", 1)[1].split("/", 1)[0]]
        assert row["wal"] == cp["fields"]["message_id"]["WAL_name"].lower()
        assert row["checkpoint"] == position(cp)
        assert iso_ms(row["checkpoint_time"]) == tso_ms(cp["fields"]["time_tick"])

    vchannels = {v["vchannel"]: v for v in ours["vchannels"]}
    for key, vmeta in by_kind["*streamingpb.VChannelMeta"].items():
        fields, row = vmeta["fields"], vchannels[vmeta["fields"]["vchannel"]]
        assert row["pchannel"] == key.split("/wal/", 1)[1].split("/", 1)[0]
        assert row["state"] == fields["state"].removeprefix("VCHANNEL_STATE_").lower()
        assert row["collection_id"] == int(fields["collection_info"]["collection_id"])
        assert iso_ms(row["meta_time"]) == tso_ms(fields["checkpoint_time_tick"])
    for cp in by_kind["*msgpb.MsgPosition"].values():
        row = vchannels[cp["fields"]["channel_name"]]
        assert row["wal"] == cp["fields"]["WAL_name"].lower()
        assert row["position"] == position(cp)
        assert iso_ms(row["checkpoint_time"]) == tso_ms(cp["fields"]["timestamp"])

    woodpecker = read_woodpecker_meta(EtcdConfig(etcd_url, root="by-dev"))
    logs = {log.key: log for log in woodpecker.logs.values()}
    assert sorted(logs) == sorted(by_kind["*proto.LogMeta"])
    for key, log_meta in by_kind["*proto.LogMeta"].items():
        fields, log, row = log_meta["fields"], logs[key], pchannels[logs[key].name]
        assert (log.id, row["log_id"]) == (int(fields["logId"]),) * 2
        truncated = (int(fields["truncated_segment_id"]), int(fields["truncated_entry_id"]))
        assert (log.truncated_segment, log.truncated_entry) == truncated
        assert row["truncated_to"] == ("none" if truncated[0] < 0 else f"{truncated[0]}/{truncated[1]}")
        assert int(log.created.timestamp()) == int(fields["creation_timestamp"])  # type: ignore[union-attr]
    segments = {(s.log, s.id): s for log in woodpecker.logs.values() for s in log.segments}
    assert len(segments) == len(by_kind["*proto.SegmentMetadata"])
    for key, seg_meta in by_kind["*proto.SegmentMetadata"].items():
        fields, name = seg_meta["fields"], key.split("/logs/", 1)[1].split("/segments/", 1)[0]
        ours_segment = segments[(name, int(fields["segNo"]))]
        assert ours_segment.state == STATES[fields["state"]]
        assert ours_segment.last_entry == int(fields["lastEntryId"])
        assert ours_segment.size == int(fields["size"])
        assert iso_ms(ours_segment.created.isoformat()) == int(fields["createTime"])  # type: ignore[union-attr]
        quorum = fields.get("quorum") or {}
        assert ours_segment.quorum_nodes == quorum.get("nodes", [])
        assert ours_segment.quorum_id == (int(quorum["id"]) if quorum else None)
