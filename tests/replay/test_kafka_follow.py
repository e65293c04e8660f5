"""`replay --follow` and `--from checkpoint` from Kafka, on a real broker and a real local Spark (the session the
Spark tests share): the RocksMQ fixture's real Milvus 2.3.5 messages are copied under a prefix of each test's own,
grown with real-format inserts and time ticks, and their retention made to fire with DeleteRecords (what the
broker's retention does to a partition: its first offset moves). Every output is read back with Spark and compared
with a batch read of the same topics."""

from __future__ import annotations

import pytest

from mqctl.mq.sources import SourceOptions
from tests.helpers.kafka import produce
from tests.helpers.milvus_meta import collection_info, position, put
from tests.helpers.replay_follow import DML_0, batch_keys, follow, grown, output_keys
from tests.helpers.woodpecker_wal import fixture_topics

pytestmark = [pytest.mark.kafka, pytest.mark.spark]
DML_1 = "by-dev-rootcoord-dml_1"


def _copy_fixture(bootstrap: str, prefix: str) -> str:
    """The fixture's topics under `prefix`; the name of its items DML topic."""
    for topic, payloads in fixture_topics().items():
        produce(bootstrap, prefix + topic, [(payload, {}) for payload in payloads])
    return prefix + DML_0


def _kafka(bootstrap: str, prefix: str):
    from mqctl.mq.kafka.connect import KafkaAccess
    from mqctl.mq.kafka.source import KafkaSource

    return KafkaSource(KafkaAccess(bootstrap), topic_prefix=prefix)


def _delete_before(bootstrap: str, topic: str, offset: int) -> None:
    """Retention firing: the partition's records before `offset` go (DeleteRecords)."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 0, offset)]).values():
        future.result()


def test_follow_reads_what_the_topics_had_then_their_growth_exactly_once(spark, kafka_bootstrap, tmp_path):
    prefix = "kfg-"
    topic = _copy_fixture(kafka_bootstrap, prefix)
    source = SourceOptions(kafka=kafka_bootstrap, topic_prefix=prefix)
    batch = {"kafka": kafka_bootstrap, "topic_prefix": prefix}
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    first, _ = follow(spark, source, out, ckpt)
    assert first.batches == 1 and first.rows == 39  # the fixture's items rows, as on RocksMQ
    assert output_keys(spark, out) == batch_keys(spark, batch)

    with _kafka(kafka_bootstrap, prefix) as mq:
        insert, tick, pks = grown(mq, topic, 5000)
        before = mq.id_range(topic)
    assert before is not None
    produce(kafka_bootstrap, topic, [(insert, {})])
    held, _ = follow(spark, source, out, ckpt)
    assert held.batches == 0 and held.rows == 0  # no time tick after the insert yet: not visible

    produce(kafka_bootstrap, topic, [(tick, {})])
    grew, batches = follow(spark, source, out, ckpt)
    assert grew.batches == 1 and grew.rows == len(pks) and grew.messages == 2
    assert grew.positions[topic] == before[1] + 3 and batches[0].behind == 0
    written = output_keys(spark, out)
    assert [key for key in written if key[1] >= 5000] == [("insert", pk, topic, before[1] + 1) for pk in pks]
    assert written == batch_keys(spark, batch)


def test_retention_firing_past_the_query_is_data_lost_unless_allowed(spark, kafka_bootstrap, tmp_path):
    from mqctl.errors import PreconditionError

    prefix = "kfl-"
    topic = _copy_fixture(kafka_bootstrap, prefix)
    source = SourceOptions(kafka=kafka_bootstrap, topic_prefix=prefix)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    first, _ = follow(spark, source, out, ckpt)
    with _kafka(kafka_bootstrap, prefix) as mq:
        lost_insert, lost_tick, lost_pks = grown(mq, topic, 8000)
        kept_insert, kept_tick, kept_pks = grown(mq, topic, 8100)
        last = mq.id_range(topic)
    assert last is not None
    produce(kafka_bootstrap, topic, [(lost_insert, {}), (lost_tick, {}), (kept_insert, {}), (kept_tick, {})])
    _delete_before(kafka_bootstrap, topic, last[1] + 3)  # the first two new records go before the query read them

    with pytest.raises(PreconditionError) as failed:
        follow(spark, source, out, ckpt)
    position_now = first.positions[topic]
    lost = last[1] + 3 - position_now
    assert f"channel {topic}: {lost} message(s) lost" in failed.value.message
    assert f"positions {position_now} to {last[1] + 2}" in failed.value.message
    assert not [key for key in output_keys(spark, out) if key[1] >= 8000]

    allowed, _ = follow(spark, source, out, ckpt, allow_data_loss=True)
    assert allowed.rows == len(kept_pks)
    new = sorted(key[1] for key in output_keys(spark, out) if key[1] >= 8000)
    assert new == kept_pks and not set(lost_pks) & set(new)


def test_a_topic_deleted_under_the_query_is_data_lost_and_so_is_one_created_again(spark, kafka_bootstrap, tmp_path):
    """As Spark's Kafka source: a topic gone, or back with offsets from 0 (Milvus's producers auto-create topics),
    is data loss; records never silently skip, and `--allow-data-loss` goes on."""
    import time

    from confluent_kafka.admin import AdminClient

    from mqctl.errors import PreconditionError

    prefix = "kfd-"
    topic = _copy_fixture(kafka_bootstrap, prefix)
    source = SourceOptions(kafka=kafka_bootstrap, topic_prefix=prefix)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    first, _ = follow(spark, source, out, ckpt)
    position = first.positions[topic]
    with _kafka(kafka_bootstrap, prefix) as mq:
        assert mq.id_range(topic) == (0, position - 1)  # read to its end (the fixture's channel ends on a tick)
    _delete_before(kafka_bootstrap, topic, position)  # every record expires: an empty topic, not a new one
    emptied, _ = follow(spark, source, out, ckpt)
    assert emptied.batches == 0 and emptied.rows == 0

    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    for future in admin.delete_topics([topic]).values():
        future.result()
    deadline = time.monotonic() + 30
    while topic in admin.list_topics(timeout=10).topics and time.monotonic() < deadline:
        time.sleep(0.2)

    with pytest.raises(PreconditionError) as gone:
        follow(spark, source, out, ckpt)
    assert f"data loss: topic {topic} no longer exists (deleted after the query read it up to offset {position})" in (
        gone.value.message
    )

    produce(kafka_bootstrap, topic, [(p, {}) for p in fixture_topics()[DML_0][:5]])  # auto-created again
    with pytest.raises(PreconditionError) as again:
        follow(spark, source, out, ckpt)
    assert f"topic {topic} ends at offset 5, before the query's position {position}" in again.value.message
    allowed, _ = follow(spark, source, out, ckpt, allow_data_loss=True)
    assert allowed.rows == 0  # the new topic's first records are before the position: nothing to add


def _checkpoints_at(etcd_url: str, root: str, prefix: str, offsets: dict[str, int]) -> None:
    """datacoord's channel checkpoints of the items vchannels at these offsets of the fixture topics (under
    `prefix`, their pchannels), with items' collection info."""
    from mqctl.mq.decode.messages import decode

    vchannels, cid = {}, None
    for channel, offset in offsets.items():
        payloads = fixture_topics()[channel]
        insert = next(m for p in payloads if (m := decode(p, {})).type_code == 400 and m.collection == "items")
        assert insert.shard and insert.collection_id
        vchannels[insert.shard], cid = prefix + channel, insert.collection_id
        ts = decode(payloads[offset], {}).tso or 1
        put(etcd_url, f"{root}/meta/datacoord-meta/channel-cp/{insert.shard}", position(insert.shard, offset, ts))
    assert cid is not None
    put(etcd_url, f"{root}/meta/root-coord/database/collection-info/1/{cid}", collection_info(cid, "items", vchannels))


def test_from_checkpoint_batch_and_follow_give_what_follows_the_channel_checkpoint(
    spark, kafka_bootstrap, etcd_url, tmp_path
):
    from mqctl.errors import PreconditionError
    from mqctl.replay.follow import FollowRequest, run_follow
    from mqctl.replay.job import run_replay
    from mqctl.replay.model import ReplayRequest

    prefix = "kfc-"
    topic = _copy_fixture(kafka_bootstrap, prefix)
    checkpoint = 20  # items' inserts are at offsets 1, 12, 23 and 34 of dml_0 and dml_1, its deletes at 35
    _checkpoints_at(etcd_url, "kfc", prefix, {DML_0: checkpoint, DML_1: 30})
    source = SourceOptions(kafka=kafka_bootstrap, topic_prefix=prefix)

    def request(out) -> ReplayRequest:
        return ReplayRequest(
            source,
            output=str(out),
            collection="items",
            partitions=2,
            start="checkpoint",
            etcd=etcd_url,
            etcd_root="kfc",
        )

    batch_out = tmp_path / "batch"
    result = run_replay(request(batch_out), spark=spark)
    assert result.written and [(c.name, c.first_id) for c in result.channels] == [
        (topic, checkpoint + 1),
        (prefix + DML_1, 31),
    ]
    batch_rows = output_keys(spark, batch_out)
    everything = batch_keys(spark, {"kafka": kafka_bootstrap, "topic_prefix": prefix})
    after = {topic: checkpoint, prefix + DML_1: 30}
    assert batch_rows == [key for key in everything if key[2] in after and key[3] > after[key[2]]]
    assert len(batch_rows) == (4 + 4 + 3) + (1 + 1) and len(everything) == 39

    follow_out, ckpt = tmp_path / "follow", tmp_path / "ckpt"
    followed = run_follow(FollowRequest(request(follow_out), str(ckpt), available_now=True), spark=spark)
    assert followed.started_from == "checkpoint" and output_keys(spark, follow_out) == batch_rows

    # the topic's retention passes the checkpoint: what Milvus had not persisted is gone, and the replay says so
    _delete_before(kafka_bootstrap, topic, checkpoint + 3)
    with pytest.raises(PreconditionError) as lost:
        run_replay(request(tmp_path / "late"), spark=spark)
    assert "data lost: vchannel" in lost.value.message
    assert f"offsets {checkpoint + 1}..{checkpoint + 2} that Milvus had not persisted are gone" in lost.value.message


# ---------------------------------------------------------------------------- the command, end to end
def test_cli_follow_from_kafka_writes_every_row_once_and_resumes_with_nothing_new(spark, kafka_bootstrap, tmp_path):
    from tests.helpers.cli import run_cli_subprocess

    prefix = "kfcli-"
    _copy_fixture(kafka_bootstrap, prefix)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    command = (
        "replay", "--to-spark", "--follow", "--kafka", kafka_bootstrap, "--topic-prefix", prefix,
        "--collection", "items", "--output", str(out), "--checkpoint-location", str(ckpt),
        "--master", "local[2]", "--available-now", "--json",
    )  # fmt: skip
    first = run_cli_subprocess(*command)
    assert first.code == 0, first.stderr
    result = first.json()
    assert result["source"] == f"kafka://{kafka_bootstrap}" and result["rows"] == 39 and result["batches"] == 1
    assert result["stopped"] == "caught up (available now)"
    assert output_keys(spark, out) == batch_keys(spark, {"kafka": kafka_bootstrap, "topic_prefix": prefix})


def test_ctrl_c_during_a_kafka_replay_is_one_line_exit_3(kafka_bootstrap, kafka_fixture, tmp_path):
    """As a terminal's Ctrl-C: the signal goes to the whole process group (mqctl, its JVM, the Python workers
    reading the topics) while the job runs; after Spark's banner only mqctl's one line is printed."""
    import signal

    from tests.helpers.cli import signal_during_spark

    code, after_start, stdout = signal_during_spark(
        "replay", "--to-spark", "--kafka", kafka_bootstrap, "--topic-prefix", "by-dev-", "--collection", "items",
        "--output", str(tmp_path / "out"), "--master", "local[2]",
        signum=signal.SIGINT,
    )  # fmt: skip
    assert code == 3, after_start
    assert after_start == ["planning the replay ...", "error: interrupted (Ctrl-C)"], after_start
    assert stdout == ""
