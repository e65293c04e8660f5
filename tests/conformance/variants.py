"""MQ-config variants of a whole milvus.yaml, over the keys that decide which MQ Milvus starts.

A variant is a handful of parameters applied as text edits to a base file (the milvus.yaml the
sandbox renders, which is the stock 2.3.5 file with the sandbox's ports and folders), so the
file the binary ran on can be rebuilt from the base and the parameters alone.

Milvus 2.3 reads only milvus.yaml, so every variant is a whole file (mqctl's `full` role);
an overlay (user.yaml on the stock file) cannot be run on a 2.3 binary.
"""

from __future__ import annotations

import itertools
import random
import re
from dataclasses import asdict, dataclass, fields

MQ_TYPES = ("default", "absent", "rocksmq", "natsmq", "pulsar", "kafka", "rocksmqq")
ROCKSMQ = ("kept", "empty", "removed")  # rocksmq.path as stock / "" / whole section gone
PULSAR = ("kept", "empty", "removed")  # pulsar.address as stock (localhost) / "" / whole section gone
# natsmq.server.storeDir as rendered / "" / key gone; the port stays, so the embedded server
# never collides with another nats-server on 4222
NATSMQ = ("kept", "empty", "removed")
KAFKA = ("absent", "empty", "set")  # the stock 2.3.5 file has no kafka section / brokerList "" / a broker


@dataclass(frozen=True)
class Variant:
    mq_type: str = "default"
    rocksmq: str = "kept"
    pulsar: str = "kept"
    natsmq: str = "kept"
    kafka: str = "absent"

    @property
    def name(self) -> str:
        return " ".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))

    def params(self) -> dict[str, str]:
        return asdict(self)


def all_variants() -> list[Variant]:
    return [Variant(*combo) for combo in itertools.product(MQ_TYPES, ROCKSMQ, PULSAR, NATSMQ, KAFKA)]


def sample(seed: int, count: int) -> list[Variant]:
    """`count` distinct variants drawn with a fixed seed (the same list on every machine)."""
    return random.Random(seed).sample(all_variants(), count)


def _section_span(lines: list[str], name: str) -> tuple[int, int]:
    """First and end line index of a top-level section (its header and indented body)."""
    start = next(i for i, line in enumerate(lines) if re.match(rf"^{name}:", line))
    end = start + 1
    while end < len(lines) and (lines[end].startswith((" ", "\t")) or not lines[end].strip()):
        end += 1
    return start, end


def drop_section(lines: list[str], name: str) -> list[str]:
    start, end = _section_span(lines, name)
    return lines[:start] + lines[end:]


def _edit_key(lines: list[str], section: str, key: str, value: str | None) -> list[str]:
    """Set `key` (a line inside `section`) to `value`, or drop that line when value is None."""
    start, end = _section_span(lines, section)
    for i in range(start + 1, end):
        match = re.match(rf"^(\s+){key}:", lines[i])
        if match:
            if value is None:
                return lines[:i] + lines[i + 1 :]
            return lines[:i] + [f"{match.group(1)}{key}: {value}"] + lines[i + 1 :]
    raise ValueError(f"no {section}.{key} in the base file")


def render(base: str, variant: Variant) -> str:
    """The base milvus.yaml with the variant's MQ keys applied."""
    lines = base.splitlines()
    if variant.mq_type == "absent":
        lines = drop_section(lines, "mq")
    else:
        lines = _edit_key(lines, "mq", "type", variant.mq_type)
    if variant.rocksmq == "empty":
        lines = _edit_key(lines, "rocksmq", "path", '""')
    elif variant.rocksmq == "removed":
        lines = drop_section(lines, "rocksmq")
    if variant.pulsar == "empty":
        lines = _edit_key(lines, "pulsar", "address", '""')
    elif variant.pulsar == "removed":
        lines = drop_section(lines, "pulsar")
    if variant.natsmq != "kept":
        lines = _edit_key(lines, "natsmq", "storeDir", '""' if variant.natsmq == "empty" else None)
    if variant.kafka != "absent":
        broker = '""' if variant.kafka == "empty" else "127.0.0.1:9"  # discard port: nobody answers
        lines += ["", "kafka:", f"  brokerList: {broker}"]
    return "\n".join(lines) + "\n"


# One variant per behaviour seen on the real binary: re-run against it in CI (a few minutes).
CI_SAMPLE = (
    Variant("default"),  # starts rocksmq
    Variant("default", rocksmq="removed", pulsar="removed"),  # panic: no available mq config found
    Variant("default", rocksmq="removed"),  # pulsar kept: mqType=pulsar
    Variant("rocksmq", rocksmq="removed"),  # mqType=rocksmq, FATAL fail to init rocksmq
    Variant("pulsar", pulsar="empty"),  # mqType=pulsar, panic Failed to add msgstream
    Variant("kafka"),  # no kafka section: mqType=kafka, no broker configured
    Variant("natsmq", natsmq="removed"),  # natsmq's code default storeDir: starts
    Variant("rocksmqq"),  # panic: mq type rocksmqq is invalid
)
RECORD_SEED = 235
RECORD_COUNT = 40  # seeded variants recorded beside CI_SAMPLE
