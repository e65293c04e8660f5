"""A real Milvus 2.3.5 on Kafka (`sandbox up --mq kafka`: the sandbox's own KRaft broker), shared by the module:
the seeded collection replayed from its topics into Spark equals a query of it; the sandbox migrated to natsmq
and back to Kafka, then to RocksMQ and back, with every row kept; and
`channels checkpoints --kafka` on its real channel checkpoints before and after FlushAll, with a retention that
really fired in between (the tests share the sandbox, in order; the checkpoints test comes last: a FlushAll that
finds nothing to flush was seen to take about a minute on Milvus 2.3.5 before it reported done)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli_subprocess
from tests.helpers.sandbox import client, counts, journal
from tests.helpers.sandbox import migrate as run_migrate

pytestmark = [pytest.mark.milvus, pytest.mark.kafka]
SEEDED = {"demo_docs": 2700, "demo_events": 1080}


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    from mqctl.sandbox.kafka import libs_dir

    if shutil.which("java") is None:
        pytest.skip("no Java runtime for the sandbox's Kafka broker")
    if not (libs_dir().parent / "complete").exists() and shutil.which("mvn") is None:
        pytest.skip("no Maven to fetch the Kafka broker's jars once (apt-get install maven; .ci/run does)")
    folder = tmp_path_factory.mktemp("sandbox") / "milvus"
    result = run_cli_subprocess("sandbox", "up", "--dir", str(folder), "--mq", "kafka", "--seed", "--json", timeout=300)
    assert result.code == 0, result.stderr
    yield result.json()
    down = run_cli_subprocess("sandbox", "down", "--dir", str(folder), "--json")
    assert down.code == 0 and down.json()["kafka_pid"] is None, down.stderr  # the broker stopped with Milvus
    shutil.rmtree(folder, ignore_errors=True)


def _topics(bootstrap: str) -> dict[str, tuple[int, int]]:
    """Every topic on the broker with partition 0's low and high offsets."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient

    names = [n for n in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics if "__" not in n]
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "mqctl-test-probe"})
    try:
        return {name: consumer.get_watermark_offsets(TopicPartition(name, 0), timeout=10) for name in names}
    finally:
        consumer.close()


def _alter(bootstrap: str, topic: str, configs: dict[str, str | None]) -> None:
    """Set (or with None, remove) topic configs, as `kafka-configs.sh --alter` does."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    entries = [
        ConfigEntry(k, v or "", incremental_operation=AlterConfigOpType.SET if v else AlterConfigOpType.DELETE)
        for k, v in configs.items()
    ]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.incremental_alter_configs(
        [ConfigResource("topic", topic, incremental_configs=entries)]
    ).values():
        future.result()


def migrate(info, *args):
    """`migrate --sandbox --yes ARGS`; prints each step's seconds (shown with `pytest -s`)."""
    result = run_migrate(info, *args)
    if result.code == 0 and "--json" in args:
        print(args, {s["name"]: s["seconds"] for s in result.json()["steps"]})
    return result


def _checkpoints(info) -> tuple[int, dict]:
    result = run_cli_subprocess("channels", "checkpoints", "--kafka", info["kafka"], "--etcd", info["etcd"], "--json")
    return result.code, result.json()


def test_sandbox_runs_milvus_on_its_own_kafka_broker(box):
    assert box["mq"] == "kafka" and box["running"] is True and box["seeded"] == SEEDED
    assert box["kafka"].startswith("127.0.0.1:") and box["kafka_pid"] and "--keep-kafka" in box["stop_cmd"]
    assert "mqType=kafka" in Path(box["log"]).read_text()  # Milvus's own `try to init mq` line
    config = Path(box["config"]).read_text()
    assert "\n  type: kafka\n" in config and f"brokerList: {box['kafka']}" in config
    topics = _topics(box["kafka"])
    # the seeded collections' shards: Milvus's producer wrote inserts, deletes and time ticks to them
    assert {"by-dev-rootcoord-dml_0", "by-dev-rootcoord-dml_1"} <= set(topics)
    assert all(topics[name][1] > 0 for name in ("by-dev-rootcoord-dml_0", "by-dev-rootcoord-dml_1"))
    status = run_cli_subprocess("sandbox", "status", "--dir", box["dir"], "--json").json()
    assert (status["kafka"], status["kafka_pid"], status["mq"]) == (box["kafka"], box["kafka_pid"], "kafka")


def test_replay_from_kafka_gives_the_rows_a_query_of_the_collection_gives(box, tmp_path):
    """The seeded collection replayed from Milvus's own Kafka topics (inserts and deletes, unflushed) into
    Parquet on a local Spark: the ids inserted and not deleted are the ids a query of the collection returns."""
    import pyarrow.parquet as pq

    out = tmp_path / "rows"
    result = run_cli_subprocess(
        "replay", "--to-spark", "--kafka", box["kafka"], "--milvus", box["uri"], "--collection", "demo_events",
        "--shape", "rows", "--output", str(out), "--format", "parquet", "--master", "local[2]", "--json",
        timeout=600,
    )  # fmt: skip
    assert result.code == 0, result.stderr
    table = pq.read_table(out).to_pydict()
    inserted = {i for i, op in zip(table["id"], table["_op"]) if op == "insert"}
    deleted = {i for i, op in zip(table["id"], table["_op"]) if op == "delete"}
    assert result.json()["rows"] == len(table["id"]) == len(inserted) + len(deleted)
    queried = {
        row["id"] for row in client(box).query("demo_events", filter="id >= 0", output_fields=["id"], limit=16384)
    }
    assert len(queried) == SEEDED["demo_events"] and deleted and deleted <= inserted
    assert inserted - deleted == queried


def test_kafka_to_natsmq_and_back_keeps_every_row(box):
    before = counts(box)
    assert before["demo_docs"] == SEEDED["demo_docs"]

    to_nats = migrate(box, "--to", "natsmq", "--json")
    assert to_nats.code == 0, to_nats.stderr
    steps = {s["name"]: s for s in to_nats.json()["steps"]}
    assert steps["preflight"]["evidence"]["source_mq"] == "kafka"
    assert "mqType=natsmq" in steps["verify"]["evidence"]["init_mq_line"]
    assert counts(box) == before
    status = run_cli_subprocess("sandbox", "status", "--dir", box["dir"], "--json").json()
    assert status["mq"] == "natsmq" and status["kafka_pid"] == box["kafka_pid"]  # the broker kept running
    c = client(box)
    try:  # writes given back, on natsmq
        c.insert("demo_docs", [{"id": 700_000 + i, "tag": 1, "vector": [0.5] * 8} for i in range(5)])
    finally:
        c.close()
    before = {**before, "demo_docs": before["demo_docs"] + 5}
    assert counts(box) == before

    plan = run_cli_subprocess("migrate", "plan", "--sandbox", box["dir"], "--to", "kafka", "--json")
    assert plan.code == 0, plan.stderr  # the sandbox's broker is filled in for --kafka
    findings = {f["code"]: f for f in plan.json()["findings"]}
    assert findings["kafka-auto-create"]["level"] == "info" and "kafka-message-size" not in findings
    assert findings["stale-kafka-topics"]["level"] == "warning"  # the records of the first run on Kafka

    back = migrate(box, "--to", "kafka", "--kafka", box["kafka"], "--json")
    assert back.code == 0, back.stderr
    verify = {s["name"]: s for s in back.json()["steps"]}["verify"]["evidence"]
    assert "mqType=kafka" in verify["init_mq_line"]
    assert {"by-dev-rootcoord-dml_0", "by-dev-rootcoord-dml_1"} <= set(verify["kafka_topics"])
    assert journal(box)["state"] == "completed" and journal(box)["target_mq"] == "kafka"
    assert counts(box) == before
    c = client(box)
    try:  # deleted rows stay deleted, and writes are given back on Kafka
        assert c.query("demo_docs", filter="id in [0, 10, 20]", output_fields=["id"], consistency_level="Strong") == []
        c.insert("demo_docs", [{"id": 800_000 + i, "tag": 2, "vector": [0.75] * 8} for i in range(5)])
    finally:
        c.close()
    assert counts(box)["demo_docs"] == before["demo_docs"] + 5


def test_kafka_to_rocksmq_and_back_keeps_every_row(box):
    before = counts(box)
    to_rocks = migrate(box, "--to", "rocksmq", "--json")
    assert to_rocks.code == 0, to_rocks.stderr
    steps = {s["name"]: s for s in to_rocks.json()["steps"]}
    assert steps["preflight"]["evidence"]["source_mq"] == "kafka"
    assert "mqType=rocksmq" in steps["verify"]["evidence"]["init_mq_line"]
    assert counts(box) == before
    back = migrate(box, "--to", "kafka", "--json")  # --kafka: the sandbox's own broker, filled in
    assert back.code == 0, back.stderr
    steps = {s["name"]: s for s in back.json()["steps"]}
    assert steps["preflight"]["evidence"]["source_mq"] == "rocksmq"
    assert steps["preflight"]["evidence"]["target_endpoint"] == box["kafka"]
    assert "mqType=kafka" in steps["verify"]["evidence"]["init_mq_line"]
    assert counts(box) == before


def test_checkpoints_catch_a_retention_past_them_and_clear_after_flush_all(box):
    c = client(box)
    try:
        c.insert("demo_events", [{"id": 500_000 + i, "tag": 3, "vector": [0.25] * 8} for i in range(40)])
    finally:
        c.close()
    code, report = _checkpoints(box)
    rows = {row["collection"]: row for row in report["checkpoints"]}
    before = rows["demo_events"]
    assert code == 0 and before["status"] == "ok", before
    assert before["lag_rows"] >= 40  # the rows just inserted are after the checkpoint: not flushed yet
    topic = before["pchannel"]
    # Retention fires on Milvus's topic: Milvus's time ticks keep rolling 100 ms segments, the broker deletes them;
    # once it deleted past the checkpoint the topic gets the broker's defaults back (nothing more is deleted)
    _alter(box["kafka"], topic, {"segment.ms": "100", "retention.ms": "1000"})
    try:
        deadline = time.monotonic() + 90
        while _topics(box["kafka"])[topic][0] <= before["position"] + 1 and time.monotonic() < deadline:
            time.sleep(1)
    finally:
        _alter(box["kafka"], topic, {"segment.ms": None, "retention.ms": None})
    code, report = _checkpoints(box)
    row = next(r for r in report["checkpoints"] if r["vchannel"] == before["vchannel"])
    assert code == 1 and row["status"] == "expired", row
    assert row["lost_messages"] == row["first_retained"] - before["position"] - 1 >= 1
    assert (
        f"messages {before['position'] + 1}..{row['first_retained'] - 1} after the checkpoint are gone" in row["reason"]
    )
    assert any(f["code"] == "CP100" for f in report["findings"])
    c = client(box)
    try:  # FlushAll: the datanode persists what it consumed, datacoord moves the checkpoint past the gap
        c.flush("demo_events")
        c.flush("demo_docs")
    finally:
        c.close()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        code, report = _checkpoints(box)
        row = next(r for r in report["checkpoints"] if r["vchannel"] == before["vchannel"])
        if row["status"] == "ok":
            break
        time.sleep(1)
    assert code == 0 and row["status"] == "ok" and row["position"] >= row["first_retained"] - 1, row
    assert counts(box)["demo_events"] == SEEDED["demo_events"] + 40  # Kafka deleted records, Milvus lost no row
