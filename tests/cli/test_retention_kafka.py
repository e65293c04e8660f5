"""`mqctl retention show|apply --kafka` on a real Kafka broker: the topic configs Milvus depends on
(cleanup.policy, retention.bytes, retention.ms against the channel checkpoints in a real etcd). Each test reads
only its own topics (--topic-prefix), since the broker is shared by the process's tests."""

from __future__ import annotations

import pytest

from mqctl.mq.decode.messages import datetime_to_tso
from tests.helpers.kafka import produce
from tests.helpers.milvus_meta import collection_info, position, put
from tests.helpers.woodpecker_wal import fixture_topics

pytestmark = pytest.mark.kafka
DML0 = "by-dev-rootcoord-dml_0"


def _topic(bootstrap: str, name: str, configs: dict[str, str]) -> None:
    """A topic with these configs, holding the fixture channel's real Milvus messages."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, 1, 1, config=configs)]).values():
        future.result()
    if "compact" not in configs.get("cleanup.policy", ""):  # a compacted topic refuses Milvus's keyless records
        produce(bootstrap, name, [(p, {}) for p in fixture_topics()[DML0][:10]])


def test_topics_as_milvus_needs_them_are_ok(cli, kafka_bootstrap):
    _topic(kafka_bootstrap, "rok-rootcoord-dml_0", {"retention.ms": "-1"})
    result = cli("retention", "show", "--kafka", kafka_bootstrap, "--topic-prefix", "rok-", "--json")
    assert result.code == 0, result.stdout + result.stderr
    (row,) = result.json()["channels"]
    assert row["actual"]["retention_ms"] == -1 and row["actual"]["cleanup_policy"] == "delete"
    assert row["actual"]["messages"] == 10 and row["findings"] == []
    table = cli("retention", "show", "--kafka", kafka_bootstrap, "--topic-prefix", "rok-")
    assert "rok-rootcoord-dml_0" in table.stdout and "unlimited" in table.stdout


def test_a_compacted_topic_and_a_size_limit_are_findings(cli, kafka_bootstrap):
    _topic(kafka_bootstrap, "rbad-rootcoord-dml_0", {"cleanup.policy": "compact"})
    _topic(kafka_bootstrap, "rbad-rootcoord-dml_1", {"retention.bytes": "1048576"})
    result = cli("retention", "show", "--kafka", kafka_bootstrap, "--topic-prefix", "rbad-", "--json")
    assert result.code == 1
    found = {(f["code"], f["key"]) for f in result.json()["findings"]}
    assert found == {("RET110", "rbad-rootcoord-dml_0"), ("RET111", "rbad-rootcoord-dml_1")}
    # and Milvus's producer, as the finding says, cannot write a keyless record to the compacted topic
    refused = _delivery_error(kafka_bootstrap, "rbad-rootcoord-dml_0")
    assert refused is not None and "INVALID_RECORD" in refused, refused


def _delivery_error(bootstrap: str, topic: str) -> str | None:
    """What the broker answers to one keyless record, as Milvus's producer sends them (None: stored)."""
    from confluent_kafka import Producer

    errors: list[object] = []
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 5000})
    producer.produce(topic, value=b"x", partition=0, on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(10)
    return str(errors[0]) if errors and errors[0] is not None else None


def test_a_retention_shorter_than_the_oldest_checkpoint_is_an_error(cli, kafka_bootstrap, etcd_url):
    import datetime as dt

    topic = "rcp-rootcoord-dml_0"
    _topic(kafka_bootstrap, topic, {"retention.ms": str(3600 * 1000)})
    vchannel = f"{topic}_42v0"
    two_hours_ago = datetime_to_tso(dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=2))
    put(etcd_url, "rcp/meta/root-coord/database/collection-info/1/42", collection_info(42, "c", {vchannel: topic}))
    put(etcd_url, f"rcp/meta/datacoord-meta/channel-cp/{vchannel}", position(vchannel, 3, two_hours_ago))
    args = ("retention", "show", "--kafka", kafka_bootstrap, "--topic-prefix", "rcp-")
    result = cli(*args, "--etcd", etcd_url, "--etcd-root", "rcp", "--json")
    assert result.code == 1
    (finding,) = [f for f in result.json()["findings"] if f["code"] == "CP104"]
    assert finding["key"] == topic and "retention.ms 3600000 (60.0 min)" in finding["message"]
    assert vchannel in finding["message"] and "FlushAll" in finding["hint"]
    assert cli(*args, "--json").code == 0  # without the checkpoints, the topic itself is as Milvus needs it


def test_retention_apply_on_kafka_says_it_is_not_supported_yet(cli, kafka_bootstrap, tmp_path):
    config = tmp_path / "milvus.yaml"
    config.write_text(f"mq:\n  type: kafka\nkafka:\n  brokerList: {kafka_bootstrap}\n")
    result = cli("retention", "apply", "--config", str(config), "--kafka", kafka_bootstrap, "--yes")
    assert result.code == 3 and "retention apply on Kafka is not supported yet" in result.stderr
