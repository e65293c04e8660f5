"""The two pieces of confluent-kafka every Kafka module needs: its admin module, and its errors as one line."""

from __future__ import annotations

from typing import Any


def admin_module() -> Any:
    """confluent_kafka.admin, untyped: its stubs leave OffsetSpec and ConfigResource out of the exports."""
    import importlib

    return importlib.import_module("confluent_kafka.admin")


def error_text(err: BaseException) -> str:
    """librdkafka's error text without the KafkaError{...} wrapping."""
    from confluent_kafka import KafkaException

    if isinstance(err, KafkaException) and err.args:
        inner = err.args[0]
        text = inner.str() if hasattr(inner, "str") else str(inner)
        return str(text)
    return str(err) or type(err).__name__
