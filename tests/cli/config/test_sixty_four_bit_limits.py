"""One rule for a retention limit past 64 bits, in every command: `config validate` (MQ117), `config set`
(refused) and `retention show` (refused) say the same thing at the same key."""

from __future__ import annotations

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.files import write_yaml
from tests.helpers.paths import FIXTURES

CASES = [
    ("natsmq.server.retention.maxAge", 153722867, "natsmq", "--nats-store", FIXTURES / "natsmq" / "store"),
    ("rocksmq.retentionTimeInMinutes", 153722867280912930, "rocksmq", "--rocksmq", FIXTURES / "rocksmq" / "rdb_data"),
    ("rocksmq.retentionSizeInMB", 8796093022207, "rocksmq", "--rocksmq", FIXTURES / "rocksmq" / "rdb_data"),
]


def config_with(tmp_path, key: str, value: int, mq: str):
    section, *rest = key.split(".")
    body = f"{section}:\n" + "".join(f"{'  ' * (i + 1)}{part}:\n" for i, part in enumerate(rest[:-1]))
    body += f"{'  ' * len(rest)}{rest[-1]}: {value}\n"
    return write_yaml(tmp_path, f"mq:\n  type: {mq}\n{body}")


@pytest.mark.parametrize(("key", "largest", "mq", "option", "store"), CASES)
def test_the_largest_value_passes_and_one_more_fails_everywhere(tmp_path, key, largest, mq, option, store):
    fits = config_with(tmp_path, key, largest, mq)
    assert not [
        f for f in run_cli("config", "validate", str(fits), "--json").json()["findings"] if f["code"] == "MQ117"
    ]
    over = config_with(tmp_path, key, largest + 1, mq)
    finding = next(
        f for f in run_cli("config", "validate", str(over), "--json").json()["findings"] if f["code"] == "MQ117"
    )
    assert finding["key"] == key and f"at most {largest} " in finding["message"]
    shown = run_cli("retention", "show", option, str(store), "--config", str(over), "--json")
    assert shown.code == 2 and shown.json()["error"]["message"] == finding["message"]
    target = config_with(tmp_path, key, 1, mq)
    refused = run_cli("config", "set", str(target), key, str(largest + 1), "--yes", "--json")
    assert refused.code == 2 and finding["message"] in refused.json()["error"]["message"]
    assert ": 1\n" in target.read_text()
