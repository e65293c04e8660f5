"""What is inside a Milvus MQ: message decoding and read-only sources (RocksMQ, NATS JetStream)."""
