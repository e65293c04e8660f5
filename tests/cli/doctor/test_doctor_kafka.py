"""`mqctl doctor --config` on a Kafka-backed Milvus: a real Kafka broker (its topics as Milvus's producer writes
them) and a real etcd with the channel checkpoints; the doctor reaches the brokers through the config's kafka.*
and judges the topics and the checkpoints as `retention show --kafka` and `channels checkpoints --kafka` do."""

from __future__ import annotations

import datetime as dt

import pytest

from mqctl.mq.decode.messages import datetime_to_tso
from tests.helpers.kafka import produce
from tests.helpers.milvus_meta import collection_info, position, put
from tests.helpers.woodpecker_wal import fixture_topics

pytestmark = [pytest.mark.kafka, pytest.mark.etcd]


def _topic(bootstrap: str, name: str, configs: dict[str, str], messages: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, 1, 1, config=configs)]).values():
        future.result()
    if messages:
        produce(bootstrap, name, [(p, {}) for p in fixture_topics()["by-dev-rootcoord-dml_0"][:messages]])


def test_a_compacted_topic_and_a_retention_shorter_than_a_checkpoint_are_errors(
    tmp_path, cli, kafka_bootstrap, etcd_url
):
    _topic(kafka_bootstrap, "dk-rootcoord-dml_0", {"retention.ms": str(3600 * 1000)}, 10)
    _topic(kafka_bootstrap, "dk-rootcoord-dml_1", {"cleanup.policy": "compact"}, 0)
    vchannel = "dk-rootcoord-dml_0_42v0"
    two_hours_ago = datetime_to_tso(dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=2))
    put(
        etcd_url,
        "dk/meta/root-coord/database/collection-info/1/42",
        collection_info(42, "c", {vchannel: "dk-rootcoord-dml_0"}),
    )
    put(etcd_url, f"dk/meta/datacoord-meta/channel-cp/{vchannel}", position(vchannel, 3, two_hours_ago))
    config = tmp_path / "milvus.yaml"
    config.write_text(
        f"mq:\n  type: kafka\nkafka:\n  brokerList: {kafka_bootstrap}\n"
        f"etcd:\n  endpoints: {etcd_url.removeprefix('http://')}\n  rootPath: dk\n"
        "msgChannel:\n  chanNamePrefix:\n    cluster: dk\n"
    )
    result = cli("doctor", "--config", str(config), "--milvus-version", "2.3.5", "--json")
    assert result.code == 1, result.stdout + result.stderr
    checks: dict[str, list[dict]] = {}
    for check in result.json()["checks"]:
        checks.setdefault(check["code"], []).append(check)
    assert "DR300" not in checks  # the MQ was read
    (compacted,) = checks["RET110"]
    assert "dk-rootcoord-dml_1" in compacted["message"] and compacted["severity"] == "error"
    (short,) = checks["CP104"]
    assert short["area"] == "checkpoints" and "topic dk-rootcoord-dml_0: retention.ms 3600000" in short["message"]
    assert checks["DR400"][0]["severity"] == "ok"  # the checkpoint's messages are all still stored
