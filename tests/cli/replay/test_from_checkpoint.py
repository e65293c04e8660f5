"""`mqctl replay --to-spark --from checkpoint`: only what each vchannel has not persisted yet, from channel
checkpoints in a real etcd over the real RocksMQ fixture (Milvus 2.3.5). Expected sets come from `channels peek`."""

from __future__ import annotations

import json

import pytest

from tests.helpers.cli import run_cli, run_cli_subprocess
from tests.helpers.milvus_meta import collection_info, position, put
from tests.helpers.paths import ROCKSMQ

ROCKS = str(ROCKSMQ)

ITEMS = 470633384395407379  # the fixture's `items` collection: shards on dml_0 and dml_1
V0, V1 = f"by-dev-rootcoord-dml_0_{ITEMS}v0", f"by-dev-rootcoord-dml_1_{ITEMS}v1"
GHOST = "by-dev-rootcoord-dml_0_999v0"  # another collection's vchannel on dml_0, with an earlier checkpoint


@pytest.fixture(scope="module")
def stored():
    """(channel, id) -> message, for every channel of the fixture."""
    found = {}
    for channel in ("by-dev-rootcoord-dml_0", "by-dev-rootcoord-dml_1"):
        result = run_cli("channels", "peek", channel, "--rocksmq", ROCKS, "--limit", "100000", "--json")
        assert result.code == 0, result.stderr
        found.update({(channel, m["id"]): m for m in result.json()["messages"]})
    return found


@pytest.fixture(scope="module")
def checkpoints(etcd_url, stored):
    """v0 checkpointed after its second insert, v1 at its collection's creation, the ghost before both."""
    v0_inserts = sorted(m["id"] for m in stored.values() if m["shard"] == V0 and m["type"] == "Insert")
    creates = {channel: m["id"] for (channel, _), m in stored.items() if m["type"] == "CreateCollection"}
    cps = {V0: v0_inserts[1], V1: creates["by-dev-rootcoord-dml_1"], GHOST: creates["by-dev-rootcoord-dml_0"]}
    root = "replay"
    put(
        etcd_url,
        f"{root}/meta/root-coord/database/collection-info/1/{ITEMS}",
        collection_info(ITEMS, "items", {V0: "by-dev-rootcoord-dml_0", V1: "by-dev-rootcoord-dml_1"}),
    )
    put(
        etcd_url,
        f"{root}/meta/root-coord/database/collection-info/1/999",
        collection_info(999, "ghost", {GHOST: "by-dev-rootcoord-dml_0"}),
    )
    for vchannel, cp in cps.items():
        put(etcd_url, f"{root}/meta/datacoord-meta/channel-cp/{vchannel}", position(vchannel, cp, 1))
    return root, cps


def _unpersisted(stored, cps) -> set[tuple[str, int]]:
    """Messages after the earliest checkpoint of their pchannel, less each vchannel's persisted ones."""
    earliest = {"by-dev-rootcoord-dml_0": min(cps[V0], cps[GHOST]), "by-dev-rootcoord-dml_1": cps[V1]}
    return {
        (channel, id_)
        for (channel, id_), m in stored.items()
        if id_ > earliest[channel] and not (m["shard"] in cps and id_ <= cps[m["shard"]])
    }


def _written(folder) -> list[dict]:
    return [json.loads(line) for part in folder.rglob("part-*.json") for line in part.read_text().splitlines()]


@pytest.mark.etcd
@pytest.mark.spark
def test_replays_only_what_milvus_has_not_persisted(etcd_url, checkpoints, stored, tmp_path):
    root, cps = checkpoints
    base = (
        "replay",
        "--to-spark",
        "--rocksmq",
        ROCKS,
        "--from",
        "checkpoint",
        "--etcd",
        etcd_url,
        "--etcd-root",
        root,
        "--format",
        "json",
        "--master",
        "local[2]",
        "--json",
    )
    messages = run_cli_subprocess(*base, "--shape", "messages", "--output", str(tmp_path / "messages"))
    assert messages.code == 0, messages.stderr
    assert {c["name"] for c in messages.json()["channels"]} == {"by-dev-rootcoord-dml_0", "by-dev-rootcoord-dml_1"}
    got = {(m["channel"], m["id"]) for m in _written(tmp_path / "messages")}
    assert got == _unpersisted(stored, cps)
    assert not any(m.get("shard") == V0 and m["id"] <= cps[V0] for m in _written(tmp_path / "messages"))

    rows = run_cli_subprocess(*base, "--collection", "items", "--output", str(tmp_path / "rows"))
    assert rows.code == 0, rows.stderr
    expected = sum(m["rows"] for key, m in stored.items() if key in _unpersisted(stored, cps) and m["shard"])
    assert rows.json()["rows"] == expected == len(_written(tmp_path / "rows"))


@pytest.mark.etcd
def test_etcd_without_from_checkpoint_is_bad_usage(etcd_url, tmp_path):
    result = run_cli_subprocess(
        "replay", "--to-spark", "--rocksmq", ROCKS, "--etcd", etcd_url, "--output", str(tmp_path / "o")
    )
    assert result.code == 2 and "--from checkpoint" in result.stderr
