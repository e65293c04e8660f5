"""The output layer's safety net: passwords inside URLs and broker lists never reach the screen."""

import pytest

from mqctl.output import mask_url_passwords


@pytest.mark.parametrize("text, shown", [
    ("pulsar+ssl://admin:S3cret@broker:6651", "pulsar+ssl://admin:******@broker:6651"),
    ("pulsar://admin:pa/ss@pulsar:6650", "pulsar://admin:******@pulsar:6650"),  # a '/' in the password
    ("http://root:p@ss@etcd:2379/v3", "http://root:******@etcd:2379/v3"),  # an '@' in it: up to the last one
    ("user:KPW2@b:9092,u2:x@c:1", "user:******@b:9092,u2:******@c:1"),  # a Kafka broker list
    ("address = 'nats://u:tok@127.0.0.1:4222'", "address = 'nats://u:******@127.0.0.1:4222'"),
    ("http://u:******@h", "http://u:******@h"),  # already masked: unchanged
    ("ops@example.com and http://host:9091/healthz", "ops@example.com and http://host:9091/healthz"),
])
def test_passwords_in_urls_are_masked(text, shown):
    assert mask_url_passwords(text) == shown
