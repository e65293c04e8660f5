"""Kafka (Milvus 2.3–2.5 cluster MQ, 2.6 WAL): the topics through confluent-kafka; source.py is the one entrance."""
