"""`mqctl channels list/show/peek --kafka` end to end (the in-process CLI) on a real Kafka broker holding the
RocksMQ fixture's real Milvus 2.3.5 messages: the same answers as the fixture read through --rocksmq, in the JSON
shapes the other MQs use, and one clear line for every fault."""

from __future__ import annotations

import time

import pytest

from tests.helpers.kafka import FIXTURE_26_PREFIX
from tests.helpers.paths import FIXTURES
from tests.helpers.servers import free_port

pytestmark = pytest.mark.kafka
ROCKSMQ = str(FIXTURES / "rocksmq" / "rdb_data")
DML0 = "by-dev-rootcoord-dml_0"


def test_list_gives_the_rocksmq_fixture_counts_ids_and_times_in_the_same_shape(cli, kafka_bootstrap, kafka_fixture):
    kafka = cli("channels", "list", "--kafka", kafka_bootstrap, "--json")
    rocks = cli("channels", "list", "--rocksmq", ROCKSMQ, "--json")
    assert kafka.code == 0 and rocks.code == 0, kafka.stderr
    got, want = kafka.json(), rocks.json()
    assert got["source"] == f"kafka://{kafka_bootstrap}"
    assert set(got) == set(want) and set(got["channels"][0]) == set(want["channels"][0])
    listed = {c["name"]: c for c in got["channels"]}
    for channel in want["channels"]:
        row = listed[channel["name"]]
        for key in ("messages", "first_time", "last_time"):
            assert row[key] == channel[key], (channel["name"], key)
        assert (row["first_id"], row["last_id"], row["consumers"]) == (0, channel["messages"] - 1, 0)
        assert row["bytes"] is None  # not known without reading: `show` counts them
    assert got["totals"]["bytes"] is None


def test_list_as_a_table_names_the_topics(cli, kafka_bootstrap, kafka_fixture):
    result = cli("channels", "list", "--kafka", kafka_bootstrap)
    assert result.code == 0, result.stderr
    assert f"channels of kafka://{kafka_bootstrap}" in result.stdout and DML0 in result.stdout


def test_show_counts_the_same_types_and_collections_as_rocksmq_and_the_topic(cli, kafka_bootstrap, kafka_fixture):
    kafka = cli("channels", "show", DML0, "--kafka", kafka_bootstrap, "--json")
    rocks = cli("channels", "show", DML0, "--rocksmq", ROCKSMQ, "--json")
    assert kafka.code == 0, kafka.stderr
    got, want = kafka.json(), rocks.json()
    assert (got["types"], got["collections"], got["undecodable"]) == (
        want["types"],
        want["collections"],
        want["undecodable"],
    )
    assert got["channel"]["bytes"] == want["channel"]["bytes"]  # the payloads, no headers on 2.3 messages
    assert got["topic"]["partitions"] == [{"partition": 0, "low": 0, "high": kafka_fixture[DML0], "leader": 1}]
    assert {"retention.ms", "retention.bytes", "cleanup.policy"} <= set(got["topic"]["configs"])
    table = cli("channels", "show", DML0, "--kafka", kafka_bootstrap)
    assert "Kafka partitions (Milvus uses 0)" in table.stdout and "retention.ms" in table.stdout


def test_peek_decodes_the_same_messages_as_rocksmq(cli, kafka_bootstrap, kafka_fixture):
    args = ("channels", "peek", DML0, "--type", "insert,delete", "--limit", "50", "--json")
    kafka = cli(*args, "--kafka", kafka_bootstrap).json()["messages"]
    rocks = cli(*args, "--rocksmq", ROCKSMQ).json()["messages"]
    assert kafka and len(kafka) == len(rocks)
    assert [{**m, "id": None} for m in kafka] == [{**m, "id": None} for m in rocks]
    start = kafka[1]["id"]
    again = cli("channels", "peek", DML0, "--from", str(start), "--limit", "1", "--json", "--kafka", kafka_bootstrap)
    assert again.json()["messages"][0]["id"] == start


def test_peek_of_26_messages_reads_their_properties_from_the_headers(cli, kafka_bootstrap, kafka_fixture):
    result = cli("channels", "peek", FIXTURE_26_PREFIX + DML0, "--type", "insert", "--json", "--kafka", kafka_bootstrap)
    assert result.code == 0, result.stderr
    inserts = result.json()["messages"]
    assert inserts and all(m["vchannel"].startswith(f"{DML0}_") for m in inserts)


def test_the_config_derives_the_bootstrap_from_kafka_broker_list(cli, kafka_bootstrap, kafka_fixture, tmp_path):
    config = tmp_path / "milvus.yaml"
    config.write_text(f"mq:\n  type: kafka\nkafka:\n  brokerList: {kafka_bootstrap}\n")
    result = cli("channels", "list", "--config", str(config), "--json")
    assert result.code == 0, result.stderr
    data = result.json()  # only this Milvus's topics: msgChannel.chanNamePrefix.cluster's default, by-dev
    assert data["source"] == f"kafka://{kafka_bootstrap} (topics by-dev-*)"
    assert {c["name"] for c in data["channels"]} >= {DML0} and all(
        c["name"].startswith("by-dev-") for c in data["channels"]
    )
    assert FIXTURE_26_PREFIX + DML0 in {
        c["name"] for c in cli("channels", "list", "--kafka", kafka_bootstrap, "--json").json()["channels"]
    }
    only = cli("channels", "list", "--kafka", kafka_bootstrap, "--topic-prefix", FIXTURE_26_PREFIX, "--json").json()
    assert {c["name"] for c in only["channels"]} == {n for n in kafka_fixture if n.startswith(FIXTURE_26_PREFIX)}


def test_a_sasl_failure_is_one_line_and_never_shows_the_password(cli, kafka_bootstrap, tmp_path):
    config = tmp_path / "milvus.yaml"
    config.write_text(
        f"mq:\n  type: kafka\nkafka:\n  brokerList: {kafka_bootstrap}\n  saslUsername: milvus\n"
        "  saslPassword: s3cret-pw\n  saslMechanisms: PLAIN\n  securityProtocol: SASL_PLAINTEXT\n"
    )
    result = cli("channels", "list", "--config", str(config), "--timeout", "2")
    assert result.code == 3
    assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) <= 2
    assert "s3cret-pw" not in result.stdout + result.stderr


def test_a_broker_that_is_down_is_exit_3_within_a_bounded_wait(cli):
    started = time.monotonic()
    result = cli("channels", "list", "--kafka", f"127.0.0.1:{free_port()}", "--timeout", "1", "--json")
    assert result.code == 3 and result.json()["error"]["kind"]
    assert "no answer within 1 s" in result.json()["error"]["message"]
    assert time.monotonic() - started < 15


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--kafka", "localhost"), "is not a broker address"),
        (("--kafka", "127.0.0.1:9092", "--rocksmq", ROCKSMQ), "choose one source"),
        (("--kafka", "127.0.0.1:9092", "--security-protocol", "tls"), "is not one Kafka knows"),
        (("--rocksmq", ROCKSMQ, "--topic-prefix", "by-dev-"), "--topic-prefix chooses Kafka topics"),
    ],
)
def test_bad_kafka_options_are_exit_2(cli, args, message):
    result = cli("channels", "list", *args)
    assert result.code == 2 and message in result.stderr


def test_an_unknown_topic_is_exit_2(cli, kafka_bootstrap, kafka_fixture):
    result = cli("channels", "peek", "by-dev-nope", "--kafka", kafka_bootstrap)
    assert result.code == 2 and "no channel 'by-dev-nope'" in result.stderr


def test_replay_from_checkpoint_with_an_unreachable_etcd_says_so_before_starting_spark(cli, kafka_bootstrap, tmp_path):
    args = (
        "replay",
        "--to-spark",
        "--kafka",
        kafka_bootstrap,
        "--collection",
        "items",
        "--output",
        str(tmp_path / "o"),
    )
    result = cli(*args, "--from", "checkpoint", "--etcd", "http://127.0.0.1:1")
    assert result.code == 3 and "etcd at http://127.0.0.1:1 is unreachable" in result.stderr
    assert not (tmp_path / "o").exists()
