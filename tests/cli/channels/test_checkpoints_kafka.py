"""`mqctl channels checkpoints --kafka` on a real Kafka broker and a real etcd: Milvus 2.3–2.5's channel checkpoint
(datacoord-meta/channel-cp, its msgID the Kafka offset in 8 bytes little-endian, kafka_id.go) against what the
topic still holds after its retention really fired (retention.ms and segment.ms lowered on the topic, the broker
deleting the closed segment), and clear again once the checkpoint moves past the gap, as FlushAll moves it."""

from __future__ import annotations

import time

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.kafka import produce
from tests.helpers.milvus_meta import collection_info, position, put
from tests.helpers.paths import FIXTURES
from tests.helpers.woodpecker_wal import fixture_topics

pytestmark = [pytest.mark.kafka, pytest.mark.etcd]
ROCKS = str(FIXTURES / "rocksmq" / "rdb_data")
FIXTURE_CHANNEL = "by-dev-rootcoord-dml_0"


def _alter(bootstrap: str, topic: str, configs: dict[str, str]) -> None:
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.incremental_alter_configs(
        [ConfigResource("topic", topic, incremental_configs=entries)]
    ).values():
        future.result()


def _low(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[0]
    finally:
        consumer.close()


def _checkpoints(etcd_url: str, bootstrap: str, root: str) -> tuple[int, dict]:
    result = run_cli("channels", "checkpoints", "--kafka", bootstrap, "--etcd", etcd_url, "--etcd-root", root, "--json")
    return result.code, result.json()


def test_a_retention_that_passed_the_checkpoint_names_the_lost_messages_and_clears_after_the_checkpoint_moves(
    etcd_url, kafka_bootstrap
):
    topic = "cpk-rootcoord-dml_0"  # this test's own topic: the fixture channel's real messages
    payloads = fixture_topics()[FIXTURE_CHANNEL]
    produce(kafka_bootstrap, topic, [(p, {}) for p in payloads])
    ten_years_ms = 10 * 365 * 24 * 3600 * 1000  # the fixture was written days ago: a week would put it at risk
    _alter(kafka_bootstrap, topic, {"retention.ms": str(ten_years_ms)})
    peeked = run_cli("channels", "peek", FIXTURE_CHANNEL, "--rocksmq", ROCKS, "--limit", "100000", "--json")
    messages = peeked.json()["messages"]  # in offset order: offset i holds the fixture's i-th message
    create = next(i for i, m in enumerate(messages) if m["type"] == "CreateCollection")
    insert = next(m for m in messages if m["type"] == "Insert")
    vchannel, cid = insert["shard"], insert["collection_id"]
    put(
        etcd_url,
        f"kcp/meta/root-coord/database/collection-info/1/{cid}",
        collection_info(cid, "items", {vchannel: topic}),
    )
    put(etcd_url, f"kcp/meta/datacoord-meta/channel-cp/{vchannel}", position(vchannel, create, messages[create]["tso"]))

    code, report = _checkpoints(etcd_url, kafka_bootstrap, "kcp")
    row = next(r for r in report["checkpoints"] if r["vchannel"] == vchannel)
    assert code == 0 and row["status"] == "ok", row
    assert (row["position"], row["first_retained"], row["last"]) == (create, 0, len(payloads) - 1)
    unflushed = [m for m in messages[create + 1 :] if m["shard"] == vchannel]
    assert row["lag_messages"] == len(unflushed) >= 1
    assert row["lag_rows"] == sum(m["rows"] for m in unflushed if m["type"] == "Insert")
    assert row["retention_seconds"] == ten_years_ms / 1000  # the topic's retention.ms

    # retention fires: every closed segment expires; one more record rolls the segment holding the fixture
    _alter(kafka_bootstrap, topic, {"segment.ms": "100", "retention.ms": "1000"})
    time.sleep(1.2)
    produce(kafka_bootstrap, topic, [(payloads[-1], {})])
    deadline = time.monotonic() + 60
    while _low(kafka_bootstrap, topic) == 0 and time.monotonic() < deadline:
        time.sleep(0.5)
    first_retained = _low(kafka_bootstrap, topic)
    assert first_retained > create + 1, "the broker's retention did not delete the segment"

    code, report = _checkpoints(etcd_url, kafka_bootstrap, "kcp")
    row = next(r for r in report["checkpoints"] if r["vchannel"] == vchannel)
    assert code == 1 and row["status"] == "expired"
    assert row["first_retained"] == first_retained and row["lost_messages"] == first_retained - (create + 1)
    assert f"messages {create + 1}..{first_retained - 1} after the checkpoint are gone" in row["reason"]
    assert any(f["code"] == "CP100" for f in report["findings"])
    human = run_cli("channels", "checkpoints", "--kafka", kafka_bootstrap, "--etcd", etcd_url, "--etcd-root", "kcp")
    assert human.code == 1 and "expired" in human.stdout and "FlushAll" in human.stdout + human.stderr

    # FlushAll persists the vchannel and datacoord moves its checkpoint to the newest message: nothing lost any more
    newest = first_retained  # the last record, the only one left
    put(etcd_url, f"kcp/meta/datacoord-meta/channel-cp/{vchannel}", position(vchannel, newest, messages[-1]["tso"]))
    code, report = _checkpoints(etcd_url, kafka_bootstrap, "kcp")
    row = next(r for r in report["checkpoints"] if r["vchannel"] == vchannel)
    assert code == 0 and row["status"] == "ok" and row["lag_messages"] == 0
