"""Every validation rule: its stable code, severity, title and why it matters (`config rules` prints them).

The rules come from Milvus's own behaviour (its source, or runs of a real Milvus 2.3.5); where one
comes from a Milvus issue or PR, the number is in its `why`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqctl.config.resolve import pinning
from mqctl.config.settings import Setting
from mqctl.findings import ERROR, INFO, WARNING, Finding


@dataclass(frozen=True)
class Rule:
    code: str
    severity: str
    title: str
    why: str


RULES: tuple[Rule, ...] = (
    Rule(
        "MQ100",
        ERROR,
        "mq.type is not a valid value",
        "Milvus panics at startup with `mq type X is invalid` (2.6+: `mq X is not valid`); an empty value is no default.",
    ),
    Rule(
        "MQ101",
        ERROR,
        "rocksmq/natsmq in cluster mode",
        "both are embedded; Milvus panics with `mq %!s(MISSING) is only valid in standalone mode`.",
    ),
    Rule(
        "MQ102",
        ERROR,
        "natsmq on Milvus 2.6+",
        "natsmq was removed in 2.6 (milvus #41564, PR #41565); "
        "a natsmq deployment must move to another MQ before upgrading.",
    ),
    Rule(
        "MQ103", WARNING, "natsmq on Milvus 2.5", "natsmq is deprecated in 2.5 (CVE) and gone in 2.6 (milvus #41564)."
    ),
    Rule(
        "MQ104",
        ERROR,
        "mq.type default finds no backend",
        "with nothing enabled Milvus panics with `no available mq config found`.",
    ),
    Rule(
        "MQ105",
        ERROR,
        "chosen backend has no address",
        "an explicit pulsar with an empty address panics "
        "`Failed to add msgstream`; kafka without brokers reports healthy but every operation times out.",
    ),
    Rule(
        "MQ106",
        WARNING,
        "natsmq configured but mq.type is default",
        "natsmq never takes part in `default` (PR #26791): customised natsmq settings are ignored.",
    ),
    Rule(
        "MQ107",
        ERROR,
        "rocksmq without path",
        "an explicit rocksmq with an empty rocksmq.path has nowhere to open its RocksDB; Milvus fails at startup.",
    ),
    Rule(
        "MQ110",
        ERROR,
        "natsmq without storeDir",
        "Milvus passes an empty storeDir to its embedded NATS server as is (nmq_server.go ParseServerOption), "
        "which then keeps JetStream in the system temp dir (/tmp/nats/jetstream), emptied by a reboot or tmp cleaner.",
    ),
    Rule("MQ111", ERROR, "natsmq port out of range", "natsmq.server.port must be 1-65535, or -1 for a random port."),
    Rule("MQ112", INFO, "natsmq port is random", "-1 lets the embedded NATS server pick a port at each start."),
    Rule("MQ113", WARNING, "natsmq maxPayload below 5 MB", "Milvus messages reach 5 MB; smaller payloads get refused."),
    Rule("MQ114", ERROR, "natsmq maxPayload above int32", "NATS reads max_payload as int32; larger values overflow."),
    Rule(
        "MQ115",
        ERROR,
        "number Milvus cannot parse",
        "Milvus silently turns an unparsable number into 0 (e.g. `maxAge: 3d` means no age limit).",
    ),
    Rule(
        "MQ116",
        WARNING,
        "retention disabled",
        "zero or negative retention means messages are never cleaned up (full disks: milvus #16606, #19574).",
    ),
    Rule("MQ120", WARNING, "unknown key under mq/natsmq/rocksmq", "Milvus ignores unknown keys; usually a typo."),
    Rule("MQ121", INFO, "several backends configured", "only one MQ runs; the others' settings are ignored."),
    Rule(
        "MQ122",
        WARNING,
        "pulsar.address with scheme or port",
        "an address containing ':' is used as is, so pulsar.port is ignored.",
    ),
    Rule(
        "MQ130",
        ERROR,
        "Operator msgStreamType vs spec.config mq.type",
        "the operator writes mq.type from msgStreamType; a different spec.config value contradicts it.",
    ),
    Rule(
        "MQ131",
        WARNING,
        "Operator dependency not used",
        "a dependency block for another MQ deploys or references a service Milvus will not use.",
    ),
    Rule(
        "MQ132",
        ERROR,
        "Operator rolling update with an embedded MQ",
        "the operator's webhook rejects enableRollingUpdate with rocksmq or natsmq.",
    ),
    Rule(
        "MQ140",
        WARNING,
        "Helm messageQueue vs *.enabled mismatch",
        "the chart deploys what *.enabled says; messageQueue picks what Milvus uses in standalone.",
    ),
    Rule(
        "MQ150",
        WARNING,
        "override shadows the yaml",
        "etcd > env > yaml: a yaml change to this key will not take effect (milvus #50217).",
    ),
    Rule("MQ151", WARNING, "file ignored by this version", "Milvus 2.3 reads milvus.yaml only."),
    Rule("MQ152", INFO, "mode assumed", "a milvus.yaml does not say whether it runs standalone or in a cluster."),
    Rule(
        "MQ153",
        INFO,
        "file role decides a backend",
        "a key left out takes Milvus's code default under a whole "
        "milvus.yaml (rocksmq.path and pulsar.address empty) and the stock file's value under an overlay.",
    ),
    Rule(
        "MQ154",
        WARNING,
        "verdict depends on the unknown Milvus version",
        "natsmq is gone and woodpecker arrives in 2.6, kafka.brokerList's code default changes in 2.5, the "
        "operator and the chart default to woodpecker from 2.6: without a version the answer is one of several.",
    ),
    Rule(
        "MQ155",
        WARNING,
        "no MQ settings at all",
        "a file without mq/rocksmq/pulsar/kafka/natsmq/woodpecker keys leaves the MQ to defaults, which depend on "
        "the file's role (code defaults under a whole milvus.yaml, the stock file under an overlay).",
    ),
    Rule("MQ156", WARNING, "Operator CR without spec", "the operator deploys its defaults; the CR says nothing."),
    Rule(
        "MQ157",
        WARNING,
        "Operator or Helm key in a milvus.yaml",
        "msgStreamType (Operator CR) and messageQueue (Helm chart) mean nothing to Milvus; mq.type decides.",
    ),
    Rule(
        "MQ158",
        WARNING,
        "placeholder-looking MQ address",
        "an address such as `<kafka_broker>:9094` was copied from an example; Milvus would try to reach it as "
        "written (an error when that MQ is the one used).",
    ),
    Rule(
        "MQ159",
        WARNING,
        "woodpecker without object storage",
        "woodpecker keeps its log in MinIO/S3 by default (woodpecker.storage.type minio); with "
        "common.storageType local or MinIO disabled there may be none.",
    ),
    Rule("MQ160", INFO, "mq.type pinned in etcd (2.6.14+)", pinning.WHY_PINNED),
    Rule("MQ161", WARNING, "yaml mq.type is only the first-boot value (2.6.14+)", pinning.WHY_FIRST_BOOT),
    Rule(
        "MQ165",
        WARNING,
        "yaml mq.type may not be the deployment's MQ (2.6.0-2.6.13)",
        pinning.WHY_UNCHANGEABLE,
    ),
    Rule(
        "MQ163",
        WARNING,
        "${VAR} placeholder in a setting",
        "Milvus substitutes no environment variables in its yaml (viper / yaml.v2 file source): the value is "
        "the literal text. The file is still read; this key does not decide the MQ.",
    ),
    Rule(
        "MQ164",
        WARNING,
        "${VAR} placeholder in an MQ-deciding key",
        "mq.type or a backend's enabling key holds a placeholder: Milvus uses the literal string, and the verdict "
        "is what that literal gives.",
    ),
    Rule(
        "MQ162",
        WARNING,
        "mq.type, natsmq or a later backend before Milvus 2.3",
        "2.0-2.2 have no mq.type, natsmq or woodpecker (an Operator CR's msgStreamType naming one is ignored): "
        "they run rocksmq in standalone when rocksmq.path is set, else Pulsar, else Kafka (DefaultFactory.Init, "
        "internal/util/dependency/factory.go).",
    ),
    Rule(
        "MQ117",
        ERROR,
        "a retention limit that overflows 64 bits",
        "Go multiplies it into an int64 (natsmq maxAge into nanoseconds, rocksmq retention into seconds or "
        "bytes): JetStream refuses or wraps the limit and RocksMQ's check wraps around; `retention show` and "
        "`retention apply` refuse the same values.",
    ),
    Rule(
        "MQ166",
        WARNING,
        "a key or section written twice in one mapping",
        "Milvus parses milvus.yaml with gopkg.in/yaml.v2's non-strict Unmarshal (through viper in 2.3/2.4, "
        "directly from 2.5, PR #37423): the last occurrence replaces the earlier one whole, so keys written only "
        "in an earlier `rocksmq:` block are not read at all.",
    ),
    Rule(
        "MQ167",
        WARNING,
        "a key written both dotted (`mq.type:`) and inside its section (`mq:` / `type:`)",
        "Milvus 2.3/2.4 read the file through viper, whose lookup takes the longest written prefix first: the "
        "dotted key wins wherever it stands (seen on the 2.3.5 binary). 2.5+ unmarshal it into a Go map and "
        "flatten it (pkg/config/file_source.go, flattenAndMergeMap): both write the same key in the map's random "
        "order, so either value may win at each start.",
    ),
    Rule("HOST201", ERROR, "MQ port already in use (--check-host)", "the embedded NATS server cannot bind it."),
    Rule("HOST202", ERROR, "store directory not writable (--check-host)", "the MQ cannot create its files."),
    Rule("HOST203", WARNING, "free disk below maxFileStore (--check-host)", "JetStream may run out of space."),
    Rule(
        "HOST204",
        WARNING,
        "store directory on a rotational disk (--check-host)",
        "MQ write-ahead logs need fast fsyncs; spinning disks slow every insert.",
    ),
)
RULE_BY_CODE = {rule.code: rule for rule in RULES}


@dataclass
class RuleList:
    """What `config rules` prints."""

    rules: list[Rule]


def finding(
    code: str,
    message: str,
    origin: Setting | None = None,
    *,
    key: str | None = None,
    hint: str | None = None,
    severity: str | None = None,
) -> Finding:
    """A finding of rule `code` (its severity unless given) at the place `origin` was written."""
    return Finding(
        code,
        severity or RULE_BY_CODE[code].severity,
        message,
        key or (origin.key if origin else None),
        origin.file if origin else None,
        origin.line if origin else None,
        hint,
    )
