"""The production topology: Milvus 2.3.5 on its own etcd server (`sandbox up --external-etcd`), where
Milvus's etcd config source is active and `mqctl migrate` stops writes through etcd.

One sandbox shared by the module, in order: the sandbox reports the etcd Milvus uses; a wrong --etcd-root
is refused; a stop-writes failure gives writes back; RocksMQ -> natsmq with crashes after stop-writes and
after the switch; back to RocksMQ. An unindexed (unloadable) collection is present throughout.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli_subprocess
from tests.helpers.sandbox import KILLED, client, counts, journal, migrate

pytestmark = [pytest.mark.milvus, pytest.mark.etcd]

FORCE_DENY = "quotaAndLimits/limitWriting/forceDeny"
RAW = "raw_unindexed"  # a collection without an index: it cannot be loaded, so count(*) cannot count it
RAW_ROWS = 300


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sandbox") / "milvus"
    result = run_cli_subprocess(
        "sandbox", "up", "--dir", str(folder), "--external-etcd", "--seed", "--json", timeout=300
    )
    assert result.code == 0, result.stderr
    info = result.json()
    from pymilvus import DataType, MilvusClient

    c = MilvusClient(uri=info["uri"])
    schema = c.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=4)
    c.create_collection(RAW, schema=schema)
    c.insert(RAW, [{"id": i, "vector": [0.5] * 4} for i in range(RAW_ROWS)])
    c.close()
    yield info
    run_cli_subprocess("sandbox", "down", "--dir", str(folder))
    shutil.rmtree(folder, ignore_errors=True)


def etcd(info, root="by-dev"):
    from mqctl.config.resolve.sources import EtcdConfig

    return EtcdConfig(info["etcd"], root=root)


def force_deny(info, root="by-dev") -> str | None:
    found = etcd(info, root).read().get("quotaandlimitslimitwritingforcedeny")
    return found.value if found else None


def insert(info, collection: str, first_id: int, rows: int = 5) -> None:
    c = client(info)
    try:
        dim = 4 if collection == RAW else 8
        extra = {} if collection == RAW else {"tag": 3}
        c.insert(collection, [{"id": first_id + i, "vector": [0.25] * dim, **extra} for i in range(rows)])
    finally:
        c.close()


def steps(result_or_journal: dict) -> dict[str, dict]:
    return {s["name"]: s for s in result_or_journal["steps"]}


def test_sandbox_reports_the_etcd_milvus_uses(box, cli):
    from mqctl.config.edit.set_unset import get_key

    assert box["etcd_mode"] == "external"
    endpoint = get_key(box["config"], "etcd.endpoints")[0]
    assert box["etcd"] == f"http://{endpoint}" and get_key(box["config"], "etcd.use.embed")[0] in (False, "false")
    assert "--keep-etcd" in box["stop_cmd"]  # stopping Milvus leaves etcd up, as in production
    from mqctl.sandbox.server import Sandbox

    assert Sandbox(box["dir"]).etcd_pid() is not None
    down = cli("sandbox", "down", "--dir", box["dir"], "--json")  # down stops etcd too, up brings both back
    assert down.code == 0 and down.json()["running"] is False and Sandbox(box["dir"]).etcd_pid() is None
    up = cli("sandbox", "up", "--dir", box["dir"], "--json", timeout=300)
    assert up.code == 0, up.stderr
    assert Sandbox(box["dir"]).etcd_pid() is not None and up.json()["running"] is True
    status = cli("sandbox", "status", "--dir", box["dir"], "--json").json()
    assert status["etcd"] == box["etcd"] and status["running"] is True
    c = client(box)  # Milvus came back on the same etcd: its collections are there
    try:
        assert {"demo_docs", "demo_events", RAW} <= set(c.list_collections())
    finally:
        c.close()
    plan = cli("migrate", "plan", "--sandbox", box["dir"], "--to", "natsmq", "--json").json()
    assert "in etcd" in steps(plan)["stop-writes"]["action"]  # the etcd path, not the file


def test_a_wrong_etcd_root_is_refused_before_anything_changes(box):
    result = migrate(box, "--to", "natsmq", "--etcd-root", "wrong-root")
    assert result.code == 3, result.stderr
    assert (
        "no Milvus session under wrong-root/meta/session/" in result.stderr and "nothing was changed" in result.stderr
    )
    assert force_deny(box, "wrong-root") is None and force_deny(box) is None


def test_a_stop_writes_failure_gives_writes_back(box, tmp_path):
    """Milvus applies the deny, but mqctl reads a log Milvus does not write and never sees the event (and the
    write probe that would see the effect is off): after --confirm-timeout it deletes the key again, and
    Milvus reopens writes."""
    from pymilvus.exceptions import MilvusException

    from mqctl.host.hooks import wait_until
    from mqctl.migrate.writes import update_event

    blind = tmp_path / "not-milvus.log"
    blind.write_text("")
    offset = Path(box["log"]).stat().st_size
    result = migrate(box, "--to", "natsmq", "--log-file", str(blind), "--confirm-timeout", "8", "--no-write-probe")
    assert result.code == 3, result.stderr
    assert "step stop-writes failed" in result.stderr and "forceDeny was removed again" in result.stderr
    assert force_deny(box) is None
    recorded = steps(journal(box))
    assert (recorded["stop-writes"]["status"], recorded["flush"]["status"]) == ("pending", "pending")

    def logged(wanted) -> bool:
        with open(box["log"], errors="replace") as log:
            log.seek(offset)
            return any(wanted(line) for line in log)

    assert logged(update_event("true"))  # the deny was real: Milvus applied it
    assert wait_until(lambda: logged(update_event(None)), 30)  # and applied its removal

    def insert_works() -> bool:
        try:
            insert(box, "demo_events", 80_000)
            return True
        except MilvusException:  # still denied until the quota center's next round
            return False

    before = counts(box)["demo_events"]
    assert wait_until(insert_works, 30, interval=1)
    assert counts(box)["demo_events"] == before + 5


def test_rocksmq_to_natsmq_through_etcd_survives_crashes(box):
    insert(box, RAW, RAW_ROWS, rows=20)  # unflushed rows of the unindexed collection must survive too
    before = counts(box)
    crashed = migrate(box, "--to", "natsmq", env={"MQCTL_CRASH_AFTER_STEP": "stop-writes"})
    assert crashed.code == KILLED, crashed.stderr
    assert force_deny(box) == "true"  # denied through etcd, and Milvus logged it
    confirmed = steps(journal(box))["stop-writes"]["evidence"]["confirmed"]
    assert "EtcdSource" in confirmed
    crashed = run_cli_subprocess(
        "migrate", "resume", "--sandbox", box["dir"], env={"MQCTL_CRASH_AFTER_STEP": "switch"}, timeout=600
    )
    assert crashed.code == KILLED, crashed.stderr
    assert [steps(journal(box))[n]["status"] for n in ("flush", "stop", "switch", "start")] == [
        "done",
        "done",
        "done",
        "pending",
    ]
    done = run_cli_subprocess("migrate", "resume", "--sandbox", box["dir"], "--json", timeout=600)
    assert done.code == 0, done.stderr
    result = steps(done.json())
    assert "mqType=natsmq" in result["verify"]["evidence"]["init_mq_line"]
    raw = result["verify"]["evidence"]["counts"][f"default/{RAW}"]
    assert raw == {"rows": RAW_ROWS + 20, "was_loaded": False, "method": "segment-stats"}
    assert result["flush"]["evidence"]["counts"][f"default/{RAW}"]["rows"] == RAW_ROWS + 20
    flushed = result["flush"]["evidence"]  # every vchannel's checkpoint reached the FlushAll ts before the stop
    assert {r["collection"] for r in flushed["checkpoints"]} >= {
        "default/demo_docs",
        "default/demo_events",
        f"default/{RAW}",
    }
    for row in flushed["checkpoints"]:
        assert row["reached"] and row["ts_after"] >= flushed["flush_all_ts"] and row["ts_before"] is not None, row
        assert row["position"] > 0 and row["pchannel"] in row["vchannel"], row
    moved = result["verify"]["evidence"]  # on natsmq now: checkpoints past the start, or a warning per vchannel
    assert {r["vchannel"] for r in moved["checkpoints"]} == {r["vchannel"] for r in flushed["checkpoints"]}
    assert sorted(w.split(":")[0] for w in moved["checkpoint_warnings"]) == sorted(
        r["vchannel"] for r in moved["checkpoints"] if not r["reached"]
    )
    print(
        "checkpoint waits (s): after FlushAll",
        flushed["checkpoint_wait_seconds"],
        "after the start",
        moved["checkpoint_wait_seconds"],
        "not advanced:",
        moved["checkpoint_warnings"],
    )
    resumed = result["resume-writes"]["evidence"]["confirmed"]
    assert "EtcdSource" in resumed and "DELETE" in resumed
    assert force_deny(box) is None  # it was absent before the migration
    assert counts(box) == before
    insert(box, "demo_docs", 90_000)
    assert counts(box)["demo_docs"] == before["demo_docs"] + 5


def test_natsmq_back_to_rocksmq_through_etcd(box, tmp_path):
    before = counts(box)
    done = migrate(box, "--to", "rocksmq", "--store-dir", str(tmp_path / "rdb_data"), "--json")
    assert done.code == 0, done.stderr
    result = steps(done.json())
    assert result["preflight"]["evidence"]["stop_writes"] == "etcd"
    assert "mqType=rocksmq" in result["verify"]["evidence"]["init_mq_line"]
    assert result["verify"]["evidence"]["counts"][f"default/{RAW}"]["rows"] == RAW_ROWS + 20
    assert counts(box) == before and force_deny(box) is None
