"""`config switch`: point a document at another MQ with the right key for its kind.

plan_switch is the switch planner's entry point (migrate and the CLI call it).
"""

from __future__ import annotations

from pathlib import Path

from mqctl.backends import BACKENDS, CLUSTER, EMBEDDED, NAMES, STANDALONE, Version, is_embedded, valid_mq_types
from mqctl.config.edit.plan import EditPlan, EditResult, checked, splice_text, verified
from mqctl.config.edit.splice import Splice, set_splice
from mqctl.config.edit.verify import Change, doc_path
from mqctl.config.known_keys import format_version, nearest
from mqctl.config.read.addressing import HELM_USER_YAML, Address, address, typed_value
from mqctl.config.read.documents import CONFIGMAP, HELM_VALUES, OPERATOR_CR, Document, load_document
from mqctl.config.read.nodes import Node, lookup
from mqctl.config.resolve import wal
from mqctl.config.resolve.lookup import get_key
from mqctl.errors import InputError, PreconditionError


def check_backend_name(to: str) -> None:
    """A misspelled MQ name is bad input (exit 2), before any version or mode check."""
    if to not in NAMES:
        guess = nearest(to, NAMES)
        raise InputError(
            f"unknown MQ {to!r}", hint=f"did you mean {guess!r}?" if guess else f"use one of {', '.join(NAMES)}"
        )


def check_target(to: str, mode: str, version: Version | None) -> None:
    """Refuse a target Milvus would not start with (exit 3, with the reason)."""
    check_backend_name(to)
    if version is not None and to not in valid_mq_types(version):
        reason = (
            "natsmq was removed in Milvus 2.6 (milvus #41564): move to rocksmq, pulsar, kafka or woodpecker"
            if to == "natsmq"
            else f"{to} needs Milvus 2.6 or later"
        )
        raise PreconditionError(f"cannot switch to {to} on Milvus {format_version(version)}: {reason}")
    if mode == CLUSTER and is_embedded(to):
        raise PreconditionError(
            f"cannot switch to {to} in cluster mode: Milvus panics with "
            f"`mq %!s(MISSING) is only valid in standalone mode`",
            hint="use pulsar, kafka or (2.6+) woodpecker for a cluster",
        )


def plan_switch(
    path: Path | str,
    to: str,
    *,
    store_dir: str | None = None,
    port: int | None = None,
    mode: str | None = None,
    milvus_version: str | None = None,
    kind: str | None = None,
    kafka: str | None = None,
) -> EditPlan:
    from mqctl.config.resolve.resolution import resolve

    resolution = resolve([path], kind=kind, mode=mode, milvus_version=milvus_version)
    check_target(to, resolution.mode, resolution.version)
    wal.refuse_file_switch(resolution.version, to)  # 2.6+: only the online WAL switch changes the MQ
    doc = load_document(path, kind)
    if doc.kind == CONFIGMAP:
        address(doc, "mq.type")  # raises the ConfigMap error
    edits: list[tuple[str, str]] = []
    if doc.kind == OPERATOR_CR:
        edits.append(("spec.dependencies.msgStreamType", to))
        written_type = resolution.yaml_setting("mq.type")
        if written_type is not None and written_type.source == "yaml":
            edits.append(("mq.type", to))  # spec.config.mq.type would contradict msgStreamType
    elif doc.kind == HELM_VALUES:
        if resolution.mode == STANDALONE:
            edits.append(("standalone.messageQueue", to))
        edits += _helm_deploy_toggles(doc, to)
        user_type = get_key(path, f"{HELM_USER_YAML}.mq.type", kind=kind)[0]
        if user_type is not None and user_type != to:
            edits.append((f"{HELM_USER_YAML}.mq.type", to))
    else:
        edits.append(("mq.type", to))
    backend = BACKENDS[to]
    wanted = dict(backend.switch_settings)
    if store_dir is not None:
        if backend.store_key is None:
            raise InputError(f"--store-dir applies to {' and '.join(EMBEDDED)}, not {to}")
        wanted[backend.store_key] = store_dir
    if port is not None:
        if backend.port_key is None:
            raise InputError(f"--port applies to natsmq and pulsar, not {to}")
        wanted[backend.port_key] = str(port)
    if kafka is not None:
        if to != "kafka":
            raise InputError(f"--kafka applies to a switch to kafka, not {to}")
        wanted[BACKENDS["kafka"].enabled_by] = kafka  # kafka.brokerList
    explicit = {backend.store_key: store_dir, backend.port_key: port, BACKENDS["kafka"].enabled_by: kafka}
    # the operator and the chart write the settings of the Pulsar/Kafka/Woodpecker they deploy themselves
    fill_settings = doc.kind not in (OPERATOR_CR, HELM_VALUES) or backend.embedded
    for key, value in wanted.items() if fill_settings else ():
        written = resolution.yaml_setting(key)
        if explicit.get(key) is not None or written is None or not written.value:  # absent, empty or null
            edits.append((key, value))
    text, changes, milvus_keys = doc.text, [], []
    for key, value in edits:
        addr = address(doc, key)
        typed, string = typed_value(addr, key, value)

        def make(
            source: str, root: Node, a: Address = addr, v: str = typed, s: bool = string, k: str = key
        ) -> Splice | None:
            return set_splice(source, root, a.parts, v, doc.newline, string=s, label=k)

        text = splice_text(doc, text, addr, make)
        changes.append(Change(key, doc_path(doc, addr), typed))
        milvus_keys += [addr.milvus_key] if addr.milvus_key else []
    plan = verified(doc, text, changes, [f"switch sets {key} = {value}" for key, value in edits])
    return checked(plan, milvus_keys, force=False, mode=mode, milvus_version=milvus_version)


def _helm_deploy_toggles(doc: Document, to: str) -> list[tuple[str, str]]:
    """The chart deploys the Pulsar/Kafka/Woodpecker whose `*.enabled` is true: turn the target on and the others
    off (in a cluster this is the switch itself; in standalone messageQueue picks and the toggle deploys)."""
    edits: list[tuple[str, str]] = []
    pulsar_keys = [k for k in ("pulsarv3.enabled", "pulsar.enabled") if lookup(doc.main, k.split("."))]
    targets = {
        "pulsar": pulsar_keys[:1] or ["pulsarv3.enabled"],
        "kafka": ["kafka.enabled"],
        "woodpecker": ["woodpecker.enabled"],
    }.get(to, [])  # rocksmq/natsmq run inside Milvus
    for key in ("pulsarv3.enabled", "pulsar.enabled", "kafka.enabled", "woodpecker.enabled"):
        if key in targets:
            edits.append((key, "true"))
        elif lookup(doc.main, key.split(".")) is not None:
            edits.append((key, "false"))
    return edits


def switch(
    path: Path | str,
    to: str,
    *,
    store_dir: str | None = None,
    port: int | None = None,
    mode: str | None = None,
    milvus_version: str | None = None,
    dry_run: bool = False,
    kind: str | None = None,
    kafka: str | None = None,
) -> EditResult:
    plan = plan_switch(
        path, to, store_dir=store_dir, port=port, mode=mode, milvus_version=milvus_version, kind=kind, kafka=kafka
    )
    return plan.result() if dry_run else plan.commit()
