"""mqctl.mq.kafka against a real Kafka broker (tests/helpers/kafka.py) holding the RocksMQ fixture's real Milvus
2.3.5 messages, written as Milvus's Kafka producer writes them; the expected payloads come from the fixture by
rocksdict, never from mqctl's readers."""

from __future__ import annotations

import time

import pytest

from mqctl.errors import InputError, PreconditionError
from mqctl.mq.kafka.connect import KafkaAccess, access_from_config, check_bootstrap
from mqctl.mq.kafka.source import KafkaSource
from tests.helpers.kafka import FIXTURE_26_PREFIX, produce
from tests.helpers.paths import FIXTURES
from tests.helpers.servers import free_port
from tests.helpers.woodpecker_wal import fixture_topics

pytestmark = pytest.mark.kafka
DML0 = "by-dev-rootcoord-dml_0"


@pytest.fixture
def source(kafka_bootstrap, kafka_fixture):
    with KafkaSource(KafkaAccess(kafka_bootstrap)) as opened:
        yield opened


def test_every_fixture_message_reads_back_byte_for_byte_at_its_offset(source):
    for topic, payloads in fixture_topics().items():
        read = list(source.iter_messages(topic))
        assert [m.data for m in read] == payloads, topic
        assert [m.id for m in read] == list(range(len(payloads)))
        assert source.id_range(topic) == (0, len(payloads) - 1)


def test_a_range_of_offsets_is_read_inclusive(source):
    payloads = fixture_topics()[DML0]
    read = list(source.iter_messages(DML0, start_id=5, end_id=9))
    assert [m.id for m in read] == [5, 6, 7, 8, 9]
    assert [m.data for m in read] == payloads[5:10]


def test_list_matches_the_rocksmq_fixture_times_and_counts(source):
    from mqctl.mq.rocksmq.reader import RocksMQSource

    rocks = RocksMQSource(str(FIXTURES / "rocksmq" / "rdb_data"))
    try:
        expected = {c.name: c for c in rocks.list_channels()}
    finally:
        rocks.close()
    listed = {c.name: c for c in source.list_channels()}
    for name, channel in expected.items():
        got = listed[name]
        assert (got.messages, got.first_id, got.last_id) == (channel.messages, 0, channel.messages - 1)
        assert (got.first_time, got.last_time) == (channel.first_time, channel.last_time)
        assert got.bytes is None and got.consumers == 0


def test_the_26_properties_arrive_as_headers(source):
    read = next(m for m in source.iter_messages(FIXTURE_26_PREFIX + DML0) if m.headers.get("_t") == "2")
    assert read.headers["_v"] == "1" and read.headers["_vc"].startswith(DML0)


def test_a_group_that_commits_shows_its_lag(kafka_bootstrap):
    from confluent_kafka import Consumer, TopicPartition

    produce(kafka_bootstrap, "lag-topic", [(bytes([i]), {}) for i in range(7)])
    tool = Consumer({"bootstrap.servers": kafka_bootstrap, "group.id": "cdc-tool", "enable.auto.commit": False})
    tool.commit(offsets=[TopicPartition("lag-topic", 0, 3)], asynchronous=False)
    tool.close()
    with KafkaSource(KafkaAccess(kafka_bootstrap)) as opened:
        lags = opened.group_lags()["lag-topic"]
        extras = opened.channel_extras("lag-topic").topic
    assert [(g.group, g.partition, g.committed, g.lag) for g in lags] == [("cdc-tool", 0, 3, 4)]
    assert extras is not None and extras["partitions"][0]["high"] == 7
    assert extras["configs"]["cleanup.policy"] == "delete"


def test_records_deleted_under_a_read_are_data_lost_not_skipped(kafka_bootstrap):
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    produce(kafka_bootstrap, "lost-topic", [(bytes([i]), {}) for i in range(20)])
    with KafkaSource(KafkaAccess(kafka_bootstrap)) as opened:
        ends = opened.offsets(["lost-topic"])["lost-topic"][0]
        assert (ends.low, ends.high) == (0, 20)
        admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
        for future in admin.delete_records([TopicPartition("lost-topic", 0, 10)]).values():
            future.result()
        with pytest.raises(PreconditionError, match=r"data lost while reading offsets 0\.\.19"):
            list(opened._read("lost-topic", 0, 19))  # the offsets as they were when the read began
        assert [m.id for m in opened.iter_messages("lost-topic")] == list(range(10, 20))


def test_an_unknown_topic_names_the_known_ones(source):
    with pytest.raises(InputError, match="no topic 'nope'") as raised:
        list(source.iter_messages("nope"))
    assert "by-dev-rootcoord-dml_0" in (raised.value.hint or "")


def test_a_broker_that_is_down_is_one_error_within_the_timeout():
    started = time.monotonic()
    with pytest.raises(PreconditionError, match="no answer within 1 s"):
        KafkaSource(KafkaAccess(f"127.0.0.1:{free_port()}", timeout=1))
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("bootstrap", ["", "host", "host:port", "host:0", "host:99999", "a:1,b"])
def test_a_malformed_bootstrap_is_bad_input(bootstrap):
    with pytest.raises(InputError, match="is not a broker address"):
        check_bootstrap(bootstrap)


def test_the_config_derives_sasl_and_tls_as_milvus_does_and_hides_the_password(tmp_path):
    from mqctl.config.resolve.resolution import resolve

    config = tmp_path / "milvus.yaml"
    config.write_text(
        "mq:\n  type: kafka\nkafka:\n  brokerList: k1:9092,k2:9092\n  saslUsername: milvus\n"
        "  saslPassword: s3cret-pw\n  saslMechanisms: SCRAM-SHA-512\n  securityProtocol: SASL_SSL\n"
        "  ssl:\n    enabled: true\n    tlsCaCert: /etc/ca.pem\n    tlsCert: /etc/c.pem\n    tlsKey: /etc/k.pem\n"
    )
    access = access_from_config(resolve([config]))
    settings = access.client_config()
    assert settings["bootstrap.servers"] == "k1:9092,k2:9092"
    assert (settings["security.protocol"], settings["sasl.mechanisms"]) == ("sasl_ssl", "SCRAM-SHA-512")
    assert (settings["sasl.username"], settings["sasl.password"]) == ("milvus", "s3cret-pw")
    assert settings["ssl.ca.location"] == "/etc/ca.pem" and settings["ssl.key.location"] == "/etc/k.pem"
    assert "s3cret-pw" not in repr(access)


def test_a_sasl_user_without_a_password_is_refused_as_milvus_panics():
    with pytest.raises(InputError, match="SASL needs a user and a password together"):
        KafkaAccess("k:9092", sasl_username="milvus")
