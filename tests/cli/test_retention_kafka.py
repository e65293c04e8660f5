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


# ---------------------------------------------------------------------------- retention apply --kafka
def _configs(bootstrap: str, topic: str) -> dict[str, str]:
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": bootstrap})
    (future,) = admin.describe_configs([ConfigResource("topic", topic)]).values()
    return {key: entry.value for key, entry in future.result().items()}


def _apply_with_checkpoints(bootstrap: str, topic: str, etcd_url: str, root: str) -> tuple[str, ...]:
    return ("retention", "apply", "--kafka", bootstrap, "--topic", topic, "--etcd", etcd_url, "--etcd-root", root)


def test_apply_shows_the_plan_asks_applies_and_reads_back(cli, kafka_bootstrap):
    topic = "rap-rootcoord-dml_0"
    _topic(kafka_bootstrap, topic, {"retention.bytes": "1048576"})
    apply = ("retention", "apply", "--kafka", kafka_bootstrap, "--topic-prefix", "rap-")
    wanted = ("--retention-ms", "86400000", "--retention-bytes", "-1", "--cleanup-policy", "delete")

    dry = cli(*apply, *wanted, "--dry-run")
    assert dry.code == 0, dry.stderr
    assert f"--- topic {topic} (now)" in dry.stdout and "-retention.bytes=1048576" in dry.stdout
    assert "-retention.ms=604800000 (broker default)" in dry.stdout and "+retention.ms=86400000" in dry.stdout
    assert "dry run: 2 config(s) on 1 topic(s) would change" in dry.stdout
    assert "channel checkpoints not checked (no --etcd)" in dry.stderr
    assert _configs(kafka_bootstrap, topic)["retention.bytes"] == "1048576"

    unasked = cli(*apply, *wanted)  # no terminal to answer, no --yes
    assert unasked.code == 3 and "needs confirmation but there is no terminal" in unasked.stderr
    assert _configs(kafka_bootstrap, topic)["retention.bytes"] == "1048576"

    done = cli(*apply, *wanted, "--yes", "--json")
    assert done.code == 0, done.stderr
    outcome = done.json()
    assert outcome["verified"] is True and outcome["applied"] == [topic]
    assert {(c["key"], c["before"], c["after"], c["override"]) for c in outcome["changes"]} == {
        ("retention.ms", "604800000", "86400000", False),  # cleanup.policy is delete already: unchanged
        ("retention.bytes", "1048576", "-1", True),
    }
    held = _configs(kafka_bootstrap, topic)
    assert (held["retention.ms"], held["retention.bytes"], held["cleanup.policy"]) == ("86400000", "-1", "delete")

    again = cli(*apply, *wanted, "--yes")
    assert again.code == 0 and "every topic already holds these configs" in again.stdout


def test_apply_refuses_a_retention_that_deletes_after_a_channel_checkpoint(cli, kafka_bootstrap, etcd_url):
    """2.3–2.5: datacoord's channel checkpoint at offset 2 of a topic holding 10 records: a retention.ms of 1 ms
    (every record is older) or a retention.bytes smaller than what follows the checkpoint would delete offsets
    Milvus needs; --force applies it anyway."""
    import datetime as dt

    topic = "rcf-rootcoord-dml_0"
    _topic(kafka_bootstrap, topic, {"retention.ms": "-1"})
    vchannel = f"{topic}_43v0"
    now = datetime_to_tso(dt.datetime.now(dt.timezone.utc))
    put(etcd_url, "rcf/meta/root-coord/database/collection-info/1/43", collection_info(43, "c", {vchannel: topic}))
    put(etcd_url, f"rcf/meta/datacoord-meta/channel-cp/{vchannel}", position(vchannel, 2, now))
    apply = _apply_with_checkpoints(kafka_bootstrap, topic, etcd_url, "rcf")

    refused = cli(*apply, "--retention-ms", "1", "--yes")
    assert refused.code == 3, refused.stderr
    assert (
        f"default.c ({vchannel}): the new retention.ms 1 of topic {topic} deletes offsets 3..9, after its "
        "checkpoint 2" in refused.stderr
    )
    assert "nothing changed" in refused.stderr and "FlushAll" in refused.stderr
    assert _configs(kafka_bootstrap, topic)["retention.ms"] == "-1"

    by_size = cli(*apply, "--retention-bytes", "100", "--yes")
    assert by_size.code == 3 and "more than the new retention.bytes 100" in by_size.stderr
    assert cli(*apply, "--retention-ms", "604800000", "--yes").code == 0  # keeps everything: applied

    dry = cli(*apply, "--retention-ms", "1", "--dry-run")  # a dry run shows the loss and changes nothing
    assert dry.code == 0 and "deletes offsets 3..9" in dry.stderr and "up to 10 record(s) at once" in dry.stderr
    assert "+retention.ms=1" in dry.stdout

    forced = cli(*apply, "--retention-ms", "1", "--yes", "--force", "--json")
    assert forced.code == 0 and forced.json()["verified"] is True
    assert _configs(kafka_bootstrap, topic)["retention.ms"] == "1"


def test_apply_keeps_what_a_26_wal_checkpoint_on_kafka_recovers_from(cli, kafka_bootstrap, etcd_url):
    """2.6: the streaming node's WAL checkpoint (a common.MessageID on the kafka WAL, the offset in base 36) is where
    recovery starts: that record itself must stay."""
    from tests.helpers.streaming_meta import base36, message_id, tso, wal_checkpoint
    from tests.helpers.streaming_meta import put as put_meta

    topic = "r26-rootcoord-dml_0"
    _topic(kafka_bootstrap, topic, {"retention.ms": "-1"})
    key = f"r26/meta/streamingnode-meta/wal/{topic}/consume-checkpoint"
    put_meta(etcd_url, key, wal_checkpoint(message_id(3, base36(4)), tso(1.7e9)))
    apply = _apply_with_checkpoints(kafka_bootstrap, topic, etcd_url, "r26")
    refused = cli(*apply, "--retention-ms", "1", "--yes")
    assert refused.code == 3
    assert (
        f"WAL of {topic}: the new retention.ms 1 of topic {topic} deletes offsets 4..9, after its WAL "
        "checkpoint 4" in refused.stderr
    )


def test_apply_bad_input_and_unreachable_brokers_are_one_line(cli, kafka_bootstrap):
    import time

    from mqctl.host.ports import free_ports

    def one_line(result, code: int, text: str) -> None:
        assert result.code == code, result.stdout + result.stderr
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and text in lines[0] and "Traceback" not in result.stderr, result.stderr

    base = ("retention", "apply", "--yes", "--retention-ms", "1000")
    one_line(cli(*base, "--kafka", kafka_bootstrap, "--topic", "no-such-topic"), 2, "no topic 'no-such-topic'")
    one_line(cli(*base, "--kafka", "not a broker"), 2, "is not a broker address")
    one_line(cli("retention", "apply", "--kafka", kafka_bootstrap, "--cleanup-policy", "compact"), 2, "RET110")
    one_line(cli("retention", "apply", "--kafka", kafka_bootstrap), 2, "nothing to apply")
    (port,) = free_ports(1)
    started = time.monotonic()
    one_line(cli(*base, "--kafka", f"127.0.0.1:{port}", "--timeout", "1"), 3, f"127.0.0.1:{port}")
    assert time.monotonic() - started < 15  # a bounded wait

    import socket

    with socket.socket() as silent:  # a "broker" that takes the connection and never answers: a slow one
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        one_line(cli(*base, "--kafka", address, "--timeout", "1"), 3, address)
        assert time.monotonic() - started < 15


def test_apply_reaches_the_brokers_and_topics_a_milvus_config_names(cli, kafka_bootstrap, tmp_path, etcd_url):
    """--config alone: kafka.brokerList, and the topics of msgChannel.chanNamePrefix.cluster; its etcd for the
    checkpoints."""
    _topic(kafka_bootstrap, "rcfg-rootcoord-dml_0", {"retention.ms": "-1"})
    config = tmp_path / "milvus.yaml"
    config.write_text(
        f"mq:\n  type: kafka\nkafka:\n  brokerList: {kafka_bootstrap}\nmsgChannel:\n  chanNamePrefix:\n"
        f"    cluster: rcfg\netcd:\n  endpoints: {etcd_url.removeprefix('http://')}\n  rootPath: rcfg\n"
    )
    result = cli("retention", "apply", "--config", str(config), "--retention-ms", "86400000", "--dry-run", "--json")
    assert result.code == 0, result.stderr
    outcome = result.json()
    assert outcome["source"] == f"kafka://{kafka_bootstrap} (topics rcfg-*)" and outcome["dry_run"] is True
    assert [(c["topic"], c["before"], c["after"]) for c in outcome["changes"]] == [
        ("rcfg-rootcoord-dml_0", "-1", "86400000")
    ]
    assert "checkpoints not checked" not in result.stderr  # the config's etcd was read (no checkpoint under rcfg)
