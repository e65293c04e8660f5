"""The one entrance to a Kafka cluster Milvus uses as its MQ: connects and validates the brokers once, then answers
every MQSource question in Kafka's terms (topics, offsets, topic configs, consumer groups).

What Milvus 2.3–2.5 writes there (pkg/mq/msgstream/mqwrapper/kafka/): one topic per physical channel, every
message on partition 0 (`mqwrapper.DefaultPartitionIdx`, kafka_producer.go), the msgpb payload as the record's
value and the message's properties as its headers; a message id is the record's offset (kafka_id.go, 8 bytes
little-endian in checkpoints). Milvus's consumers `Assign` partitions with `enable.auto.commit: false` and their
`Ack` does nothing (kafka_consumer.go: "Kafka retention mechanism only depends on retention configuration"), so a
Milvus position never shows as a committed group offset: it is the channel checkpoint in etcd. The consumer groups
listed here are those that commit offsets on Milvus's topics (CDC, backup or replay tools).

Reading never moves anything Milvus relies on: mqctl assigns partitions itself, never joins a group and never
commits. A read that falls behind the topic's start (retention or a deletion firing while it reads) stops with
the data named as lost, as Spark's `failOnDataLoss` does.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from mqctl.backends import BACKENDS
from mqctl.errors import InputError, PreconditionError
from mqctl.mq.kafka.connect import KafkaAccess
from mqctl.mq.kafka.librdkafka import admin_module, error_text
from mqctl.mq.model import ChannelBounds, ChannelExtras, ChannelInfo, RawMessage

if TYPE_CHECKING:
    from mqctl.mq.retention_model import ConfiguredRetention, RetentionReport

MILVUS_PARTITION = 0  # mqwrapper.DefaultPartitionIdx: Milvus writes and reads partition 0 only
READ_BATCH = 1000  # records per consume() call
# the topic configs Milvus's deployment docs ask about (retention and compaction), shown and checked
WATCHED_CONFIGS = ("retention.ms", "retention.bytes", "cleanup.policy", "segment.bytes", "max.message.bytes")


@dataclass
class PartitionOffsets:
    partition: int
    low: int  # the oldest offset still stored
    high: int  # the offset the next record will get (high - low records, fewer on a compacted topic)
    leader: int | None = None


@dataclass
class GroupLag:
    """A consumer group's committed offset on one topic's partition, and how far behind the end it is."""

    group: str
    partition: int
    committed: int
    lag: int


class KafkaSource:
    """An MQSource over a live Kafka cluster (confluent-kafka's admin client and an assign-only consumer)."""

    mq: ClassVar[str] = BACKENDS["kafka"].name
    supports_store_times: ClassVar[bool] = False
    # Milvus's producer writes neither transactions nor keys (kafka_producer.go), so on the delete-policy topics it
    # needs every offset holds one message: the gap between a checkpoint and the first retained offset is countable
    sequential_ids: ClassVar[bool] = True

    def __init__(self, access: KafkaAccess, *, topic_prefix: str | None = None) -> None:
        from confluent_kafka.admin import AdminClient

        self.access = access
        self.topic_prefix = topic_prefix or ""
        self.description = f"kafka://{access.bootstrap}" + (f" (topics {topic_prefix}*)" if topic_prefix else "")
        self._errors: list[str] = []
        config: dict[str, Any] = {**access.client_config(), "error_cb": self._remember}
        self._admin = AdminClient(config)
        self._consumer: Any = None
        self._groups: dict[str, list[GroupLag]] | None = None
        self.topics = self._metadata()  # reachable, authenticated and authorised, or one clear error now

    def _remember(self, err: Any) -> None:
        self._errors.append(err.str() if hasattr(err, "str") else str(err))

    def _unreachable(self, what: str, err: BaseException | None = None) -> PreconditionError:
        reasons = [*self._errors[-1:], *([error_text(err)] if err is not None else [])]
        reason = "; ".join(dict.fromkeys(reasons)) or "no answer"
        hint = "check --kafka HOST:PORT (the brokers' advertised listeners must be reachable from here)"
        lowered = reason.lower()
        if "sasl" in lowered or "authentic" in lowered:
            hint = "check the SASL mechanism, user and password (kafka.saslMechanisms/saslUsername/saslPassword)"
        elif "ssl" in lowered or "certificate" in lowered or "handshake" in lowered:
            hint = "check --security-protocol and the TLS files (kafka.ssl.*)"
        return PreconditionError(f"{self.description}: {what}: {reason}", hint=hint)

    def _metadata(self) -> dict[str, list[PartitionOffsets]]:
        """Every topic but Kafka's internal ones (`__consumer_offsets`...) that starts with the topic prefix, with its
        partitions' leaders."""
        from confluent_kafka import KafkaException

        try:
            metadata = self._admin.list_topics(timeout=self.access.timeout)
        except KafkaException as err:
            raise self._unreachable(f"no answer within {self.access.timeout:g} s", err) from None
        if not metadata.brokers:
            raise self._unreachable("no broker answered")
        topics = {}
        for name, topic in metadata.topics.items():
            if name.startswith("__") or topic.error is not None or not name.startswith(self.topic_prefix):
                continue
            topics[name] = [
                PartitionOffsets(number, 0, 0, part.leader) for number, part in sorted(topic.partitions.items())
            ]
        return topics

    def __enter__(self) -> KafkaSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._consumer is not None:
            consumer, self._consumer = self._consumer, None
            consumer.close()

    # offsets, configs, groups --------------------------------------------------------------------------------
    def _topic(self, name: str) -> list[PartitionOffsets]:
        if name not in self.topics:
            self.topics = self._metadata()  # created since the source opened
        if name not in self.topics:
            known = ", ".join(sorted(self.topics)) or "none"
            raise InputError(f"no topic {name!r} on {self.description}", hint=f"known topics: {known}")
        return self.topics[name]

    def offsets(self, names: Iterable[str]) -> dict[str, list[PartitionOffsets]]:
        """Low and high offsets of every partition of these topics: two ListOffsets requests in all."""
        from confluent_kafka import KafkaException, TopicPartition

        OffsetSpec = admin_module().OffsetSpec

        wanted = {name: self._topic(name) for name in names}
        partitions = [TopicPartition(name, p.partition) for name, parts in wanted.items() for p in parts]
        if not partitions:
            return {}
        ends: dict[str, dict[tuple[str, int], int]] = {}
        for end, spec in (("low", OffsetSpec.earliest()), ("high", OffsetSpec.latest())):
            try:
                futures = self._admin.list_offsets({tp: spec for tp in partitions}, request_timeout=self.access.timeout)
                ends[end] = {(tp.topic, tp.partition): future.result().offset for tp, future in futures.items()}
            except KafkaException as err:
                raise self._unreachable("cannot list offsets", err) from None
        found: dict[str, list[PartitionOffsets]] = {}
        for name, parts in wanted.items():
            found[name] = [
                PartitionOffsets(
                    p.partition, ends["low"][(name, p.partition)], ends["high"][(name, p.partition)], p.leader
                )
                for p in parts
            ]
        return found

    def topic_configs(self, names: Iterable[str]) -> dict[str, dict[str, str]]:
        """The watched configs of these topics, as the brokers apply them (topic override or broker default)."""
        return {
            topic: {key: value for key, (value, _) in configs.items() if value is not None}
            for topic, configs in self.topic_config_details(names).items()
        }

    def topic_config_details(self, names: Iterable[str]) -> dict[str, dict[str, tuple[str | None, bool]]]:
        """topic -> watched config -> (value as the brokers apply it, whether it is the topic's own override rather
        than a broker default): an override is put back by setting it again, a default by deleting the override."""
        from confluent_kafka import KafkaException

        admin = admin_module()
        ConfigResource, ResourceType = admin.ConfigResource, admin.ResourceType
        topic_override = admin.ConfigSource.DYNAMIC_TOPIC_CONFIG.value
        resources = [ConfigResource(ResourceType.TOPIC, name) for name in names]
        if not resources:
            return {}
        try:
            futures = self._admin.describe_configs(resources, request_timeout=self.access.timeout)
            return {
                resource.name: {
                    key: (entry.value, entry.source == topic_override)
                    for key, entry in future.result().items()
                    if key in WATCHED_CONFIGS
                }
                for resource, future in futures.items()
            }
        except KafkaException as err:
            raise self._unreachable("cannot describe topic configs", err) from None

    def group_lags(self) -> dict[str, list[GroupLag]]:
        """topic -> the consumer groups with a committed offset on it (see the module's docstring: Milvus's own
        consumers commit none), and their lag behind the partition's end."""
        if self._groups is not None:
            return self._groups
        from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException

        committed: dict[str, list[tuple[str, int, int]]] = {}
        try:
            listed = self._admin.list_consumer_groups(request_timeout=self.access.timeout).result()
            for group in sorted(g.group_id for g in listed.valid):
                futures = self._admin.list_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(group)], request_timeout=self.access.timeout
                )
                for future in futures.values():
                    for tp in future.result().topic_partitions or []:
                        if tp.offset >= 0 and tp.topic in self.topics:
                            committed.setdefault(tp.topic, []).append((group, tp.partition, tp.offset))
        except KafkaException as err:
            raise self._unreachable("cannot list consumer groups", err) from None
        highs = {(name, p.partition): p.high for name, parts in self.offsets(committed).items() for p in parts}
        self._groups = {
            topic: [
                GroupLag(g, part, offset, max(0, highs.get((topic, part), offset) - offset)) for g, part, offset in rows
            ]
            for topic, rows in committed.items()
        }
        return self._groups

    # reading -----------------------------------------------------------------------------------------------
    def _reader(self) -> Any:
        """The one assign-only consumer: never joins its group, never commits; an offset outside the log is an
        error (auto.offset.reset=error), never a silent jump."""
        if self._consumer is None:
            from confluent_kafka import Consumer

            self._consumer = Consumer(
                {
                    **self.access.client_config(),
                    "group.id": "mqctl-reader",  # required by librdkafka; unused: no subscribe, no commit
                    "enable.auto.commit": False,
                    "enable.auto.offset.store": False,
                    "enable.partition.eof": True,
                    "auto.offset.reset": "error",
                    "allow.auto.create.topics": False,
                    # a fetch at the end of a partition returns at once instead of waiting for more (default 500
                    # ms per read: list reads two records per topic)
                    "fetch.wait.max.ms": 10,
                    "error_cb": self._remember,
                }
            )
        return self._consumer

    def _read(self, channel: str, first: int, last: int) -> Generator[list[Any], None, None]:
        """Records of partition 0 from offset `first` to `last` (inclusive), in offset order, a batch at a time."""
        from confluent_kafka import KafkaError, TopicPartition

        consumer = self._reader()
        consumer.assign([TopicPartition(channel, MILVUS_PARTITION, first)])
        stalled_since = time.monotonic()
        next_offset = first
        try:
            while True:
                # consume() waits for its whole count: never ask for more than is left, so a short read returns
                # at once (a compacted gap or an aborted transaction only makes the last call wait its timeout)
                wanted = max(1, min(READ_BATCH, last - next_offset + 1))
                records = consumer.consume(wanted, timeout=min(1.0, self.access.timeout))
                if not records:
                    if time.monotonic() - stalled_since > self.access.timeout * 4:
                        raise self._unreachable(f"{channel}: no records within {self.access.timeout * 4:g} s")
                    continue
                stalled_since = time.monotonic()
                tail = records[-1].offset()
                # the common batch: no error record (end of partition, lost offsets) and nothing past `last`,
                # handed on whole without a per-record pass (a replay partition's hot loop)
                if 0 <= tail <= last and not any(record.error() is not None for record in records):
                    yield records
                    if tail == last:
                        return
                    next_offset = tail + 1
                    continue
                batch: list[Any] = []
                for record in records:
                    error = record.error()
                    if error is not None:
                        if error.code() == KafkaError._PARTITION_EOF:
                            yield batch
                            return
                        if error.code() in (
                            KafkaError.OFFSET_OUT_OF_RANGE,
                            KafkaError._AUTO_OFFSET_RESET,  # the offset asked for is no longer stored
                            KafkaError.UNKNOWN_TOPIC_OR_PART,
                            KafkaError._UNKNOWN_TOPIC,
                            KafkaError._UNKNOWN_PARTITION,
                        ):
                            raise PreconditionError(
                                f"{self.description}: {channel}: data lost while reading offsets {first}..{last}: "
                                f"{error.str()} (the topic's retention fired or the topic was deleted)",
                                hint="read again: `mqctl channels list` shows what is left; check the topic's "
                                "retention.ms and retention.bytes",
                            )
                        raise PreconditionError(f"{self.description}: {channel}: read failed: {error.str()}")
                    offset = record.offset()
                    if offset > last:
                        yield batch
                        return
                    batch.append(record)
                    next_offset = offset + 1
                    if offset == last:
                        yield batch
                        return
                yield batch
        finally:
            consumer.unassign()

    def iter_messages(
        self, channel: str, start_id: int | None = None, end_id: int | None = None
    ) -> Generator[RawMessage, None, None]:
        parts = self.offsets([channel])[channel]
        ends = next((p for p in parts if p.partition == MILVUS_PARTITION), None)
        if ends is None or ends.low >= ends.high:
            return
        first = max(start_id or 0, ends.low)
        last = ends.high - 1 if end_id is None else min(end_id, ends.high - 1)
        if first > last:
            return
        message = RawMessage
        for batch in self._read(channel, first, last):
            for record in batch:
                headers = record.headers()  # None without headers (2.3–2.5 messages): no dict to build
                yield message(
                    channel,
                    record.offset(),
                    record.value() or b"",
                    {key: (value or b"").decode("utf-8", "replace") for key, value in headers} if headers else {},
                )

    def _records_at(self, wanted: dict[str, int]) -> dict[str, Any]:
        """topic -> its first record at or after the offset asked, for many topics at once (one assignment: the
        consumer's per-topic start-up delay is paid once, not per topic). A topic whose record is gone (retention,
        compaction) or that reaches its end first has none."""
        from confluent_kafka import TopicPartition

        if not wanted:
            return {}
        consumer = self._reader()
        consumer.assign([TopicPartition(topic, MILVUS_PARTITION, offset) for topic, offset in wanted.items()])
        found: dict[str, Any] = {}
        done: set[str] = set()
        deadline = time.monotonic() + self.access.timeout * 4
        try:
            while len(done) < len(wanted) and time.monotonic() < deadline:
                for record in consumer.consume(len(wanted) - len(done), timeout=min(1.0, self.access.timeout)):
                    topic = record.topic()
                    if topic in done or topic not in wanted:
                        continue
                    if record.error() is None:
                        found[topic] = record
                    done.add(topic)
                    consumer.incremental_unassign([TopicPartition(topic, MILVUS_PARTITION)])
        finally:
            consumer.unassign()
        return found

    def _message_times(self, wanted: dict[str, int]) -> dict[str, dt.datetime | None]:
        """topic -> the Milvus time (the TSO in the msgpb header) of its record at or after the offset asked."""
        from google.protobuf.message import DecodeError

        from mqctl.milvus.protos import pb2
        from mqctl.mq.decode.messages import tso_to_datetime

        times: dict[str, dt.datetime | None] = {}
        for topic, record in self._records_at(wanted).items():
            header = pb2("common_pb2").MsgHeader()
            try:
                header.ParseFromString(record.value() or b"")
            except DecodeError:
                continue
            times[topic] = tso_to_datetime(header.base.timestamp) if header.base.timestamp else None
        return times

    def list_channels(self, *, message_times: bool = True) -> list[ChannelInfo]:
        """One row per topic: records (high - low over its partitions), partition 0's first and last offset, the
        Milvus times of its first and last record (two reads per topic) and the consumer groups with offsets on it.
        Bytes are not known: the admin API of the Python client has no DescribeLogDirs (`channels show` counts the
        bytes of the records it reads)."""
        from mqctl.sorting import natural_key

        offsets = self.offsets(self.topics)
        groups = self.group_lags()
        zeros = {
            name: zero
            for name, parts in offsets.items()
            for zero in parts
            if zero.partition == MILVUS_PARTITION and zero.low < zero.high
        }
        firsts = self._message_times({n: z.low for n, z in zeros.items()}) if message_times else {}
        lasts = self._message_times({n: z.high - 1 for n, z in zeros.items()}) if message_times else {}
        channels = []
        for name in sorted(offsets, key=natural_key):
            parts = offsets[name]
            zero = zeros.get(name)
            empty = zero is None
            first_time, last_time = firsts.get(name), lasts.get(name)
            channels.append(
                ChannelInfo(
                    name=name,
                    messages=sum(max(0, p.high - p.low) for p in parts),
                    bytes=None,
                    first_id=None if empty or zero is None else zero.low,
                    last_id=None if empty or zero is None else zero.high - 1,
                    first_time=first_time,
                    last_time=last_time,
                    consumers=len({g.group for g in groups.get(name, [])}),
                )
            )
        return channels

    def id_range(self, channel: str) -> tuple[int, int] | None:
        zero = next((p for p in self.offsets([channel])[channel] if p.partition == MILVUS_PARTITION), None)
        return None if zero is None or zero.low >= zero.high else (zero.low, zero.high - 1)

    def channel_bounds(self, names: set[str]) -> dict[str, ChannelBounds]:
        """Partition 0's offsets (an empty topic's first is the offset its next record gets) and retention.ms."""
        known = [name for name in names if name in self.topics]
        configs = self.topic_configs(known)
        bounds = {}
        for name, parts in self.offsets(known).items():
            zero = next((p for p in parts if p.partition == MILVUS_PARTITION), None)
            if zero is None:
                continue
            retention_ms = int(configs.get(name, {}).get("retention.ms") or -1)
            bounds[name] = ChannelBounds(
                zero.low,
                zero.high - 1 if zero.high > zero.low else None,
                retention_ms / 1000 if retention_ms > 0 else None,
            )
        return bounds

    def channel_extras(self, name: str) -> ChannelExtras:
        """The topic's partitions with their offsets and leaders, its watched configs, and the groups on it."""
        import dataclasses

        parts = self.offsets([name])[name]
        return ChannelExtras(
            topic={
                "partitions": [dataclasses.asdict(p) for p in parts],
                "configs": self.topic_configs([name]).get(name, {}),
                "groups": [dataclasses.asdict(g) for g in self.group_lags().get(name, [])],
            }
        )

    def store_identity(self) -> str | None:
        """None: the bootstrap names the cluster."""
        return None

    def data_warnings(self) -> list[tuple[str | None, str]]:
        """None for a live cluster: the brokers check their own logs."""
        return []

    def retention_report(self, configured: ConfiguredRetention, now: dt.datetime) -> RetentionReport:
        from mqctl.mq.kafka.retention import kafka_report

        return kafka_report(self, configured, now)
