"""Kafka as a migration's target: the preflight checks against a real broker (the tests' KRaft broker, Kafka's
default `message.max.bytes`, topics holding the RocksMQ fixture's real Milvus messages under Milvus's names)."""

from __future__ import annotations

import shutil
import time

import pytest

from mqctl.errors import InputError
from mqctl.migrate import kafka_target
from mqctl.migrate.context import resolution
from mqctl.migrate.options import MigrateOptions
from mqctl.milvus.client import MilvusTarget
from tests.helpers.paths import SAMPLES

pytestmark = pytest.mark.kafka


def _findings(tmp_path, bootstrap: str, max_message_size: int = 5242880) -> tuple[str | None, dict]:
    """The Kafka findings of a migration to `bootstrap`, by code, on the 2.3 sample config with
    `pulsar.maxMessageSize` set (Milvus's default 5242880)."""
    config = tmp_path / "milvus.yaml"
    shutil.copy(SAMPLES / "milvus-2.3-standalone-rocksmq.yaml", config)
    text = config.read_text()
    assert "  maxMessageSize: 5242880 " in text
    config.write_text(text.replace("  maxMessageSize: 5242880 ", f"  maxMessageSize: {max_message_size} "))
    options = MigrateOptions(
        configs=[str(config)], to="kafka", milvus=MilvusTarget("http://127.0.0.1:1"), kafka=bootstrap
    )
    endpoint, found = kafka_target.kafka_findings(options, resolution(options))
    return endpoint, {f.code: f for f in reversed(found)}  # the first of a code


def test_a_default_broker_is_too_small_for_milvus_inserts_and_old_topics_are_named(
    tmp_path, kafka_bootstrap, kafka_fixture
):
    endpoint, found = _findings(tmp_path, kafka_bootstrap)
    assert endpoint == kafka_bootstrap
    assert found["kafka-auto-create"].severity == "info"  # Kafka's default auto.create.topics.enable=true
    size = found["kafka-message-size"]
    assert size.severity == "error"
    assert "the brokers' message.max.bytes is 1048588 bytes" in size.message and "5242880" in size.message
    stale = found["stale-kafka-topics"]
    records = kafka_fixture["by-dev-rootcoord-dml_0"]
    assert stale.severity == "warning" and f"by-dev-rootcoord-dml_0 ({records} records)" in stale.message


def test_inserts_cut_larger_than_milvus_producer_allows_are_refused(tmp_path, kafka_bootstrap):
    _, found = _findings(tmp_path, kafka_bootstrap, 20971520)
    size = found["kafka-message-size"]  # the first of the two: the producer's limit, then the broker's
    assert (
        "pulsar.maxMessageSize 20971520" in size.message and "10485760 bytes its Kafka producer allows" in size.message
    )


def test_inserts_cut_below_the_broker_limit_pass(tmp_path, kafka_bootstrap):
    _, found = _findings(tmp_path, kafka_bootstrap, 1000000)
    assert "kafka-message-size" not in found and "target-unreachable" not in found


def test_a_silent_broker_is_an_error_after_a_bounded_wait(tmp_path, monkeypatch):
    from mqctl.host.ports import free_ports

    monkeypatch.setattr(kafka_target, "REACH_SECONDS", 1.0)
    silent = f"127.0.0.1:{free_ports(1)[0]}"
    started = time.monotonic()
    _, found = _findings(tmp_path, silent)
    assert time.monotonic() - started < 15
    assert list(found) == ["target-unreachable"] and found["target-unreachable"].severity == "error"
    assert f"Kafka at {silent} does not answer within 1 s" in found["target-unreachable"].message


def test_kafka_names_only_a_migration_to_kafka(tmp_path):
    with pytest.raises(InputError, match="--kafka names the broker of a migration to kafka, not to natsmq"):
        MigrateOptions(configs=["x"], to="natsmq", milvus=MilvusTarget("http://127.0.0.1:1"), kafka="127.0.0.1:9092")
    with pytest.raises(InputError, match="is not a broker address"):
        MigrateOptions(configs=["x"], to="kafka", milvus=MilvusTarget("http://127.0.0.1:1"), kafka="nowhere")
