"""MQ-config variants of a whole milvus.yaml, over the keys that decide which MQ Milvus starts.

A variant is a handful of parameters applied as text edits to a base file (the milvus.yaml the
sandbox renders, which is the stock 2.3.5 file with the sandbox's ports and folders), so the
file the binary ran on can be rebuilt from the base and the parameters alone.

Two families: the MQ matrix (`all_variants`: mq.type x the backend sections, as plain values) and
the value forms (`VALUE_VARIANTS`): how mq.type is written (null, `~`, empty quotes, case, quotes,
padding), a duplicated or flat `mq` key, the environment (MQ_TYPE unset, set, set empty, in lower
case; ROCKSMQ_PATH empty) and etcd overrides under `<etcd.rootPath>/config/` (key spellings, empty
values), which need an external etcd: such a variant turns `etcd.use.embed` off and points
`etcd.endpoints` at the etcd the runner starts (ETCD_ENDPOINT in the recorded file).

Milvus 2.3 reads only milvus.yaml, so every variant is a whole file (mqctl's `full` role);
an overlay (user.yaml on the stock file) cannot be run on a 2.3 binary.
"""

from __future__ import annotations

import itertools
import random
import re
from dataclasses import dataclass, fields

MQ_TYPES = ("default", "absent", "rocksmq", "natsmq", "pulsar", "kafka", "rocksmqq")
ROCKSMQ = ("kept", "empty", "removed")  # rocksmq.path as stock / "" / whole section gone
PULSAR = ("kept", "empty", "removed")  # pulsar.address as stock (localhost) / "" / whole section gone
# natsmq.server.storeDir as rendered / "" / key gone; the port stays, so the embedded server
# never collides with another nats-server on 4222
NATSMQ = ("kept", "empty", "removed")
KAFKA = ("absent", "empty", "set")  # the stock 2.3.5 file has no kafka section / brokerList "" / a broker

# How the `type:` line of the mq section is written (plain: `type: <mq_type>`); the empty forms ignore mq_type.
WRITTEN = {
    "plain": "{}",
    "null": "",  # `type:`
    "tilde": "~",
    "empty_dq": '""',
    "empty_sq": "''",
    "quoted": '"{}"',
    "padded": '" {} "',  # quoted, so the spaces are part of the value
    "trailing": "{}   ",  # plain: YAML drops trailing spaces
    "case": "{}",  # the value in another case (CASED)
}
CASED = {"rocksmq": "RocksMQ", "natsmq": "NATSMQ", "pulsar": "Pulsar", "kafka": "Kafka", "default": "Default"}
# single: one `mq:` section; dup_other: a second `mq:` section later in the file with another type; dup_no_type:
# a second `mq:` section without `type` (a 2.4 key only); flat: a top-level `mq.type: natsmq` key at the end;
# flat_first: the same key as the file's first line, before the `mq:` section
SECTION = ("single", "dup_other", "dup_no_type", "flat", "flat_first")
ENV = {  # environment variables the binary starts with (every name of ENV_NAMES not listed here is unset)
    "unset": {},
    "mq_type": {"MQ_TYPE": "natsmq"},
    "mq_type_empty": {"MQ_TYPE": ""},  # docker compose's `MQ_TYPE: ${MQ_TYPE}` when the shell has none
    "mq_type_lower": {"mq_type": "natsmq"},
    "rocksmq_path_empty": {"ROCKSMQ_PATH": ""},
}
ENV_NAMES = tuple(dict.fromkeys(name for values in ENV.values() for name in values))
ETCD = {  # keys under `<etcd.rootPath>/config/` in an external etcd ("none": embedded etcd, as the base file)
    "none": None,
    "external": {},  # an external etcd without overrides
    "mq_type": {"mq/type": "natsmq"},
    "mq_type_empty": {"mq/type": ""},
    "mq_type_dotted": {"mq.type": "natsmq"},
    "mq_type_upper": {"MQ_TYPE": "natsmq"},
    "rocksmq_path_empty": {"rocksmq/path": ""},
    # the embedded etcd (as the base file): the key is written there while Milvus runs, then Milvus restarts
    "embedded_mq_type": {"mq/type": "natsmq"},
}
ETCD_ENDPOINT = "127.0.0.1:2379"  # what the recorded file says; the runner puts its own etcd there


@dataclass(frozen=True)
class Variant:
    mq_type: str = "default"
    rocksmq: str = "kept"
    pulsar: str = "kept"
    natsmq: str = "kept"
    kafka: str = "absent"
    written: str = "plain"
    section: str = "single"
    env: str = "unset"
    etcd: str = "none"

    @property
    def name(self) -> str:
        return " ".join(f"{key}={value}" for key, value in self.params().items())

    def params(self) -> dict[str, str]:
        """The parameters; a value-form field only when it is not its default (so MQ-matrix ids stay short)."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name in MQ_FIELDS or getattr(self, f.name) != f.default
        }

    def environment(self) -> dict[str, str]:
        return dict(ENV[self.env])

    def external_etcd(self) -> bool:
        """Milvus runs on an etcd of its own (`etcd.use.embed: false`), which the runner starts."""
        return self.etcd != "none" and not self.etcd.startswith("embedded")

    def etcd_keys(self) -> dict[str, str] | None:
        """Keys under `<root>/config/` to put in an external etcd before the start; None: embedded etcd."""
        keys = ETCD[self.etcd]
        return None if keys is None else dict(keys)


MQ_FIELDS = ("mq_type", "rocksmq", "pulsar", "natsmq", "kafka")


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


def _type_text(variant: Variant) -> str:
    """The text after `type:` for the variant's mq.type and how it is written."""
    value = CASED.get(variant.mq_type, variant.mq_type) if variant.written == "case" else variant.mq_type
    return WRITTEN[variant.written].format(value)


def render(base: str, variant: Variant, etcd_endpoint: str = ETCD_ENDPOINT) -> str:
    """The base milvus.yaml with the variant's MQ keys applied."""
    lines = base.splitlines()
    if variant.mq_type == "absent":
        lines = drop_section(lines, "mq")
    else:
        lines = _edit_key(lines, "mq", "type", _type_text(variant))
        if variant.written == "null":
            lines = [line.rstrip() if re.match(r"^\s+type: $", line) else line for line in lines]
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
    if variant.section == "dup_other":
        lines += ["", "mq:", f"  type: {'rocksmq' if variant.mq_type == 'natsmq' else 'natsmq'}"]
    elif variant.section == "dup_no_type":
        lines += ["", "mq:", "  enablePursuitMode: true"]
    elif variant.section == "flat":
        lines += ["", "mq.type: natsmq"]
    elif variant.section == "flat_first":
        lines = ["mq.type: natsmq", *lines]
    if variant.external_etcd():
        lines = _edit_key(lines, "etcd", "endpoints", etcd_endpoint)
        lines = _edit_nested(lines, "etcd", "use", "embed", "false")
    return "\n".join(lines) + "\n"


def _edit_nested(lines: list[str], section: str, sub: str, key: str, value: str) -> list[str]:
    """Set `section.sub.key` (two levels deep) to `value`, keeping its comment out."""
    start, end = _section_span(lines, section)
    inside = False
    for i in range(start + 1, end):
        if re.match(rf"^\s{{2}}{sub}:", lines[i]):
            inside = True
            continue
        match = re.match(rf"^(\s{{4,}}){key}:", lines[i])
        if inside and match:
            return lines[:i] + [f"{match.group(1)}{key}: {value}"] + lines[i + 1 :]
    raise ValueError(f"no {section}.{sub}.{key} in the base file")


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
    Variant("default", written="null"),  # `type:` is "", not default: panic `mq type  is invalid`
    Variant("natsmq", written="padded"),  # " natsmq " is invalid; the panic message drops the trailing space
    Variant("rocksmq", section="flat_first"),  # a top-level `mq.type: natsmq` wins over the mq section
    Variant("rocksmq", env="mq_type_empty"),  # MQ_TYPE="" overrides the yaml with "": the same panic
    Variant("rocksmq", env="mq_type_empty", etcd="mq_type"),  # an external etcd's mq/type beats the environment
    Variant("rocksmq", etcd="embedded_mq_type"),  # the embedded etcd's mq/type is not read: starts rocksmq
)
RECORD_SEED = 235
RECORD_COUNT = 40  # seeded variants recorded beside CI_SAMPLE

# The value forms, each recorded on the binary (a chosen list, not a product: most pairs tell nothing new).
VALUE_VARIANTS = (
    Variant("default", written="null"),
    Variant("default", written="tilde"),
    Variant("default", written="empty_dq"),
    Variant("default", written="empty_sq"),
    Variant("default", "removed", "removed", written="null"),
    Variant("default", written="quoted"),
    Variant("natsmq", written="quoted"),
    Variant("natsmq", written="padded"),
    Variant("natsmq", written="trailing"),
    Variant("rocksmq", written="case"),
    Variant("natsmq", written="case"),
    Variant("default", written="case"),
    Variant("rocksmq", section="dup_other"),
    Variant("natsmq", section="dup_no_type"),
    Variant("natsmq", "removed", "removed", section="dup_no_type"),
    Variant("default", section="flat"),
    Variant("rocksmq", section="flat"),
    Variant("absent", section="flat"),
    Variant("default", section="flat_first"),
    Variant("rocksmq", section="flat_first"),
    Variant("default", env="mq_type"),
    Variant("rocksmq", env="mq_type"),
    Variant("rocksmq", env="mq_type_empty"),
    Variant("absent", env="mq_type_empty"),
    Variant("default", env="mq_type_lower"),
    Variant("default", env="rocksmq_path_empty"),
    Variant("rocksmq", env="rocksmq_path_empty"),
    Variant("default", written="null", env="mq_type"),
    Variant("default", etcd="external"),
    Variant("default", etcd="mq_type"),
    Variant("rocksmq", etcd="mq_type_empty"),
    Variant("default", etcd="mq_type_dotted"),
    Variant("default", etcd="mq_type_upper"),
    Variant("default", etcd="rocksmq_path_empty"),
    Variant("rocksmq", env="mq_type", etcd="mq_type_empty"),
    Variant("rocksmq", env="mq_type_empty", etcd="mq_type"),
    Variant("default", written="null", etcd="mq_type"),
    Variant("rocksmq", etcd="embedded_mq_type"),
)


def recorded_variants(seed: int = RECORD_SEED, count: int = RECORD_COUNT) -> list[Variant]:
    """What the fixture holds, in order: CI_SAMPLE, the seeded sample of the MQ matrix, the value forms."""
    return list(dict.fromkeys([*CI_SAMPLE, *sample(seed, count), *VALUE_VARIANTS]))


def every_variant() -> list[Variant]:
    """The whole MQ matrix and the value forms (MQCTL_CONFORMANCE=full)."""
    return [*all_variants(), *VALUE_VARIANTS]
