"""`retention apply --kafka` stopped by a signal while it changes topics, on a real broker: a signal after the first
topic changed puts that topic back and the report is read back from the brokers (every topic keeps its old configs);
one during the last change is left to finish, and the change is reported as made, as it is."""

from __future__ import annotations

import contextlib
import os
import signal

import pytest

pytestmark = pytest.mark.kafka


def _retention_ms(admin, topics: list[str]) -> list[str]:
    from confluent_kafka.admin import ConfigResource

    futures = admin.describe_configs([ConfigResource("topic", topic) for topic in topics])
    return [future.result()["retention.ms"].value for future in futures.values()]


def _apply(bootstrap: str, prefix: str, signal_at_call: int, monkeypatch):
    from mqctl import interrupts
    from mqctl.mq.kafka.connect import KafkaAccess
    from mqctl.mq.kafka.retention_apply import apply_topic_retention
    from mqctl.mq.kafka.source import KafkaSource

    interrupts.install()
    from mqctl.mq.kafka import retention_apply

    original = retention_apply.alter_topic_configs
    calls = [0]

    def alter_then_signal(source, topic, set_to, remove=()):
        original(source, topic, set_to, remove)
        calls[0] += 1
        if calls[0] == signal_at_call:
            os.kill(os.getpid(), signal.SIGINT)  # as Ctrl-C, right after this topic's change went out

    monkeypatch.setattr(retention_apply, "alter_topic_configs", alter_then_signal)

    @contextlib.contextmanager
    def open_topics():
        with KafkaSource(KafkaAccess(bootstrap), topic_prefix=prefix) as source:
            yield source

    return apply_topic_retention(open_topics, {"retention.ms": "86400000"}, [], dry_run=False, confirm=lambda _: True)


def test_a_signal_during_apply_puts_back_or_finishes_and_reports_what_the_brokers_hold(kafka_bootstrap, monkeypatch):
    from confluent_kafka.admin import AdminClient, NewTopic

    from mqctl.errors import Stopped

    topics = ["rint-rootcoord-dml_0", "rint-rootcoord-dml_1"]
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    for future in admin.create_topics([NewTopic(t, 1, 1, config={"retention.ms": "-1"}) for t in topics]).values():
        future.result()

    with pytest.raises(Stopped) as stopped:
        _apply(kafka_bootstrap, "rint-", 1, monkeypatch)
    assert stopped.value.message == (
        f"interrupted (Ctrl-C); read back from kafka://{kafka_bootstrap} (topics rint-*): 0 topic(s) hold the new "
        f"configs, 2 keep the old ones ({', '.join(topics)})"
    )
    assert _retention_ms(admin, topics) == ["-1", "-1"]  # the first one put back

    outcome = _apply(kafka_bootstrap, "rint-", 2, monkeypatch)  # the signal comes with the last change
    assert outcome.verified is True and outcome.applied == topics
    assert _retention_ms(admin, topics) == ["86400000", "86400000"]
