"""The four Milvus 3.0 hazards, each on a fixture the reference writer made with upstream's code
(tests/fixtures/upstream/*-{lac-short,missing-footer-sealed,wal-switched,stale-dropped}; where upstream's embedded
Woodpecker cannot reach the state, the manifest's `edits` says which change was made, with upstream's generated
types), named with its code and fix by the command that shows it and by the doctor:

- CP119, a sealed segment without footer or whose footer LAC is below etcd's LastEntryId (milvus #52341,
  zilliztech/woodpecker #242/#243): `channels woodpecker --etcd`, `channels checkpoints --woodpecker`, `doctor`;
- CP110, a WAL checkpoint on another WAL than the pinned mq.type after a switch (birdwatcher #522, milvus #52013):
  `channels checkpoints --etcd`, `doctor`;
- CP120, a dropped collection's state left behind the WAL's truncation point (milvus #47802): `channels checkpoints
  --etcd`, `doctor`;
- target-not-empty, switching back to a WAL whose old data is still there: `migrate plan`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import upstream_writer as upstream
from tests.helpers.cli import run_cli
from tests.helpers.files import write_yaml
from tests.helpers.streaming_meta import put

pytestmark = pytest.mark.etcd

HAZARDS = upstream.hazard_folders()
if not HAZARDS:
    pytest.skip(
        "no hazard fixtures in tests/fixtures/upstream (python -m tests.helpers.upstream_writer)",
        allow_module_level=True,
    )


def load(etcd_url: str, folder: Path) -> None:
    """The folder's etcd.json as the only state of the etcd."""
    import httpx

    httpx.post(f"{etcd_url}/v3/kv/deleterange", json={"key": "AA==", "range_end": "AA=="}).raise_for_status()
    for key, value in upstream.etcd_items(folder):
        put(etcd_url, key.decode(), value)


def deployment(tmp_path: Path, folder: Path, mq: str = "woodpecker") -> Path:
    """A milvus.yaml whose Woodpecker folder (`<localStorage.path>/wp`) is a copy of the fixture's wal/."""
    shutil.copytree(upstream.wal_path(folder), tmp_path / "data" / "wp")
    return write_yaml(
        tmp_path,
        f"etcd:\n  rootPath: by-dev\nmq:\n  type: {mq}\nlocalStorage:\n  path: {tmp_path / 'data'}\n"
        f"woodpecker:\n  storage:\n    type: local\nrocksmq:\n  path: {tmp_path / 'rdb_data'}\n",
    )


def codes(findings: list[dict]) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for finding in findings:
        found.setdefault(finding["code"], []).append(finding)
    return found


def doctor(config: Path, etcd_url: str) -> dict:
    result = run_cli("doctor", "--config", str(config), "--etcd", etcd_url, "--json")
    assert result.code == 1, result.stderr
    return codes(result.json()["checks"])


@pytest.mark.parametrize(
    ("hazard", "segment", "said"),
    [
        ("lac-short", 0, "as sealed with last entry 7 but its footer's LAC is 5: entries 6..7 are not readable"),
        ("sealed-no-footer", 1, "as sealed (last entry 6) but its files have no footer"),
    ],
)
def test_a_sealed_segment_short_of_etcd_is_cp119(hazard, segment, said, etcd_url, tmp_path):
    folder = HAZARDS[hazard]
    manifest = upstream.manifest(folder)
    assert manifest["woodpecker"] == "v0.1.37" and manifest["edits"]  # the edit is recorded with what it changed
    assert "missing-footer" in folder.name if hazard == "sealed-no-footer" else "lac-short" in folder.name
    load(etcd_url, folder)
    wal = str(upstream.wal_path(folder))

    result = run_cli("channels", "woodpecker", wal, "--etcd", etcd_url, "--json")
    assert result.code == 1, result.stderr
    row = next(s for s in result.json()["segments"] if s["segment"] == segment)
    assert any(said in p and p.count("CP119") == 1 for p in map(str, row["problems"])), row["problems"]
    written = [e for e in manifest["logs"][0]["entries"] if e["segment_id"] == segment]
    assert row["entries"] == len(written)  # every entry upstream wrote is read: only etcd says more

    result = run_cli("channels", "checkpoints", "--etcd", etcd_url, "--woodpecker", wal, "--json")
    assert result.code == 1, result.stderr
    (finding,) = codes(result.json()["findings"])["CP119"]
    assert finding["severity"] == "error" and said in finding["message"]
    assert "v0.1.37" in finding["hint"] and "#243" in finding["hint"]

    checks = doctor(deployment(tmp_path, folder), etcd_url)
    (check,) = checks["CP119"]
    assert check["severity"] == "error" and said in check["message"] and "#52019" in check["fix"]


def test_a_checkpoint_on_another_wal_than_the_pin_is_cp110(etcd_url, tmp_path):
    folder = HAZARDS["wal-switched"]
    load(etcd_url, folder)
    result = run_cli("channels", "checkpoints", "--etcd", etcd_url, "--json")
    assert result.code == 1, result.stderr
    report = result.json()
    found = codes(report["findings"])["CP110"]
    pchannel = upstream.manifest(folder)["logs"][0]["pchannel"]
    wal_cp = next(f for f in found if f["message"].startswith(f"{pchannel}:"))
    assert "is a woodpecker position but mq.type is pinned to rocksmq (by-dev/config/mqtype)" in wal_cp["message"]
    assert "birdwatcher #522" in wal_cp["hint"] and "reset checkpoint --target-wal" in wal_cp["hint"]
    assert {f["severity"] for f in found} == {"error"} and len(found) == 2  # the WAL and the channel checkpoint

    checks = doctor(deployment(tmp_path, folder, mq="rocksmq"), etcd_url)
    assert checks["CP110"][0]["severity"] == "error" and "birdwatcher #522" in checks["CP110"][0]["fix"]


def test_a_dropped_collections_state_behind_the_truncation_point_is_cp120(etcd_url, tmp_path):
    folder = HAZARDS["stale-dropped"]
    manifest = upstream.manifest(folder)
    dropped = next(e["vchannel"] for e in manifest["logs"][0]["entries"] if e["type"] == "DropCollection")
    load(etcd_url, folder)
    for extra in ([], ["--woodpecker", str(upstream.wal_path(folder))]):
        result = run_cli("channels", "checkpoints", "--etcd", etcd_url, "--json", *extra)
        assert result.code == 1, result.stderr
        report = result.json()
        found = codes(report["findings"])["CP120"]
        assert [f["message"].split(":")[0] for f in found] == [manifest["logs"][0]["pchannel"], dropped]
        assert "WAL checkpoint 0/5 is behind the Woodpecker log's truncation point 1/8" in found[0]["message"]
        assert f"by-dev/meta/datacoord-meta/channel-cp/{dropped}" in found[1]["message"]
        assert all(f["severity"] == "error" and "#47886" in f["hint"] for f in found)
        assert {v["vchannel"]: v["status"] for v in report["vchannels"]}[dropped] == "stale"

    checks = doctor(deployment(tmp_path, folder), etcd_url)
    assert checks["CP120"][0]["severity"] == "error" and "#47802" in checks["CP120"][0]["message"]


def test_migrate_plan_refuses_to_switch_back_onto_woodpeckers_old_data(etcd_url, tmp_path):
    folder = HAZARDS["wal-switched"]  # pinned to rocksmq, Woodpecker's logs and files still there
    load(etcd_url, folder)
    config = deployment(tmp_path, folder, mq="rocksmq")
    result = run_cli(
        "migrate", "plan", "--config", str(config), "--to", "woodpecker", "--milvus", "http://127.0.0.1:19530",
        "--milvus-version", "3.0.1", "--etcd", etcd_url, "--json",
    )  # fmt: skip
    plan = result.json()
    assert plan["refused"] is True and result.code != 0
    leftovers = codes(plan["findings"])["target-not-empty"]
    assert [f["level"] for f in leftovers] == ["error", "error"]
    assert "still in etcd under woodpecker/: 1 log(s) (by-dev-rootcoord-dml_0)" in leftovers[0]["message"]
    assert str(tmp_path / "data" / "wp") in leftovers[1]["message"] and "files/wp" in leftovers[1]["hint"]
