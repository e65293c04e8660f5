"""mqctl.mq.kafka on a real Kafka broker (tests/helpers/kafka.py)."""
