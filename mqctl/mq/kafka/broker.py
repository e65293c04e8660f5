"""What a Kafka cluster must offer Milvus before Milvus is switched onto it: the brokers answer, Milvus's topics
can be created or are there, and the brokers take messages as large as Milvus sends.

Milvus's consumers ask for `allow.auto.create.topics: true` and its producer writes to topics it never creates
(pkg/mq/msgstream/mqwrapper/kafka/kafka_client.go `newConsumerConfig`, kafka_producer.go), so the brokers'
`auto.create.topics.enable` must be on, or every topic Milvus uses must exist. Its producer allows messages of
10485760 bytes (`message.max.bytes`, librdkafka's counterpart of the Java producer's `max.request.size`,
kafka_client.go `newProducerConfig`), and its proxy cuts inserts into messages of up to `pulsar.maxMessageSize`
bytes whatever the MQ (internal/proxy/msg_pack.go `genInsertMsgsByPartition`: `threshold :=
Params.PulsarCfg.MaxMessageSize.GetAsInt()`), 5242880 in the 2.3.5 package's milvus.yaml; a broker whose
`message.max.bytes` (or a topic whose `max.message.bytes`) is smaller refuses such an insert (Kafka's default is
1048588). Both Go files as read at milvus commit 0147eb6f (the 2.3 `pkg/` layout), not on the v2.3.5 tag itself.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from mqctl.errors import PreconditionError
from mqctl.mq.kafka.connect import KafkaAccess

MILVUS_PRODUCER_MAX_BYTES = 10485760  # kafka_client.go newProducerConfig: message.max.bytes
BROKER_KEYS = ("auto.create.topics.enable", "message.max.bytes")


@dataclass
class BrokerFacts:
    """What the brokers answered: one broker's settings and the topics asked about that exist (with their
    `max.message.bytes`)."""

    bootstrap: str
    seconds: float  # until the first answer
    auto_create_topics: bool | None = None
    message_max_bytes: int | None = None
    topics: dict[str, int | None] = field(default_factory=dict)


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def broker_facts(access: KafkaAccess, topics: list[str], wait: float) -> BrokerFacts:
    """Ask the brokers, retrying for up to `wait` seconds until one answers; PreconditionError (one line naming the
    bootstrap and the last error) when none does."""
    from confluent_kafka import KafkaException

    from mqctl.mq.kafka.librdkafka import admin_module, error_text

    kafka_admin = admin_module()
    ConfigResource, ResourceType = kafka_admin.ConfigResource, kafka_admin.ResourceType
    errors: list[str] = []

    def remember(err: Any) -> None:
        errors.append(err.str() if hasattr(err, "str") else str(err))

    config: dict[str, Any] = {**access.client_config(), "error_cb": remember}
    admin = kafka_admin.AdminClient(config)
    started = time.monotonic()
    metadata = None
    while metadata is None:
        try:
            found = admin.list_topics(timeout=min(access.timeout, max(wait, 1.0)))
            metadata = found if found.brokers else None
        except KafkaException as err:
            errors.append(error_text(err))
        if metadata is None and time.monotonic() - started >= wait:
            raise PreconditionError(
                f"Kafka at {access.bootstrap} does not answer within {wait:.0f} s: {(errors or ['no broker'])[-1]}",
                hint="start the brokers, or pass --kafka HOST:PORT as Milvus's host reaches them",
            )
        if metadata is None:
            time.sleep(0.5)
    facts = BrokerFacts(access.bootstrap, round(time.monotonic() - started, 3))
    present = [name for name in topics if name in metadata.topics and metadata.topics[name].error is None]
    resources = [ConfigResource(ResourceType.BROKER, str(min(metadata.brokers)))]
    resources += [ConfigResource(ResourceType.TOPIC, name) for name in present]
    try:
        futures = admin.describe_configs(resources, request_timeout=access.timeout)
        described = {resource.name: future.result() for resource, future in futures.items()}
    except KafkaException as err:
        raise PreconditionError(
            f"Kafka at {access.bootstrap}: cannot describe the broker's configs: {err}",
            hint="the user needs DescribeConfigs on the cluster and Milvus's topics",
        ) from None
    broker = described.get(resources[0].name, {})
    auto = broker.get("auto.create.topics.enable")
    facts.auto_create_topics = None if auto is None else auto.value == "true"
    facts.message_max_bytes = _int(getattr(broker.get("message.max.bytes"), "value", None))
    for name in present:
        facts.topics[name] = _int(getattr(described.get(name, {}).get("max.message.bytes"), "value", None))
    return facts


def milvus_topics(res_value: Any) -> list[str]:
    """The topics Milvus 2.3–2.5 produces to from the start: `{cluster}-{rootCoordDml}_N` for N below
    `rootCoord.dmlChannelNum` (the physical DML channels every collection's shards are spread over) and
    `{cluster}-{replicateMsg}` (seen created on a fresh 2.3.5). `res_value`: a Resolution's `value`."""
    cluster = res_value("msgChannel.chanNamePrefix.cluster") or "by-dev"
    dml = res_value("msgChannel.chanNamePrefix.rootCoordDml") or "rootcoord-dml"
    replicate = res_value("msgChannel.chanNamePrefix.replicateMsg") or "replicate-msg"
    count = _int(res_value("rootCoord.dmlChannelNum")) or 16
    return [f"{cluster}-{dml}_{i}" for i in range(count)] + [f"{cluster}-{replicate}"]
