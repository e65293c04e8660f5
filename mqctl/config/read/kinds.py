"""How each kind of document becomes Milvus settings.

A milvus.yaml is Milvus settings already. An Operator CR and Helm values choose the MQ through
their own fields, which the operator or the chart turns into `mq.type` and the backend's
address; their `spec.config` / `extraConfigFiles.user.yaml` are Milvus settings layered on top.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mqctl.backends import CLUSTER, STANDALONE, V2_3, V2_6, Version
from mqctl.config.known_keys import MODES, format_version, parse_version
from mqctl.config.read.documents import (
    CONFIGMAP,
    CONFIGMAP_FILES,
    HELM_VALUES,
    MILVUS_YAML,
    OPERATOR_CR,
    Document,
    embedded_yaml,
)
from mqctl.config.read.nodes import flatten, is_mapping, lookup, scalar_text
from mqctl.config.settings import Setting

HELM_PULSAR_TOGGLES = ("pulsarv3.enabled", "pulsar.enabled", "externalPulsar.enabled")
HELM_KAFKA_TOGGLES = ("kafka.enabled", "externalKafka.enabled")
# the dependencies the operator deploys or points at through an endpoint (the embedded ones run inside Milvus)
OPERATOR_ENDPOINTS = ("pulsar", "kafka")
HELM_TOGGLES = HELM_PULSAR_TOGGLES + HELM_KAFKA_TOGGLES + ("woodpecker.enabled",)


@dataclass
class KindView:
    """What one document says, in Milvus's terms."""

    document: Document
    settings: list[Setting] = field(default_factory=list)  # Milvus keys, merge order (later wins)
    notes: list[str] = field(default_factory=list)  # explanation lines about the translation
    fields: dict[str, Setting] = field(default_factory=dict)  # kind-specific fields (msgStreamType, toggles)


def field_setting(doc: Document, path: str, detail: str | None = None) -> Setting | None:
    pair = lookup(doc.main, path.split(".")) if doc.main is not None else None
    if pair is None:
        return None
    key_node, value_node = pair
    return Setting(path, scalar_text(value_node), doc.name, key_node.start_mark.line + 1, "yaml", detail or path)


def _where(setting: Setting) -> str:
    return f"{setting.file}:{setting.line}"


def document_mode(doc: Document) -> tuple[str | None, str]:
    """Mode stated by the document, and why."""
    if doc.kind == OPERATOR_CR:
        kind = field_setting(doc, "kind")
        if kind and kind.value == "MilvusCluster":
            return CLUSTER, f"kind MilvusCluster ({_where(kind)})"
        mode = field_setting(doc, "spec.mode")
        if mode and mode.value in MODES:
            return mode.value, f"spec.mode ({_where(mode)})"
        return STANDALONE, "spec.mode not set: the operator deploys standalone"
    if doc.kind == HELM_VALUES:
        enabled = field_setting(doc, "cluster.enabled")
        if enabled and enabled.value is not None:
            stated = CLUSTER if enabled.value.lower() == "true" else STANDALONE
            return stated, f"cluster.enabled: {enabled.value} ({_where(enabled)})"
        return CLUSTER, "cluster.enabled not set: the chart's default is a cluster"
    return None, ""


def document_version(doc: Document) -> tuple[Version | None, str, str | None]:
    """(version, why, raw tag) from the image tag of a CR or Helm values."""
    path = {OPERATOR_CR: "spec.components.image", HELM_VALUES: "image.all.tag"}.get(doc.kind)
    tag = field_setting(doc, path) if path else None
    if tag is None or not tag.value:
        return None, "", None
    version = parse_version(tag.value)
    why = f"{path} {tag.value} ({_where(tag)})"
    return version, why, tag.value


def view(doc: Document, mode: str, version: Version | None) -> KindView:
    builder = {MILVUS_YAML: _milvus_yaml, OPERATOR_CR: _operator_cr, HELM_VALUES: _helm_values, CONFIGMAP: _configmap}[
        doc.kind
    ]
    return builder(doc, mode, version)


def _milvus_yaml(doc: Document, mode: str, version: Version | None) -> KindView:
    result = KindView(doc, flatten(doc.main, doc.name) if doc.main is not None else [])
    if len(doc.roots) > 1:
        result.notes.append(f"{doc.name} holds {len(doc.roots)} YAML documents: Milvus reads the first only")
    return result


def _operator_cr(doc: Document, mode: str, version: Version | None) -> KindView:
    result = KindView(doc)
    config = lookup(doc.main, ["spec", "config"])
    if config is not None and is_mapping(config[1]):
        result.settings += flatten(config[1], doc.name, detail_prefix="spec.config.")
        result.notes.append("spec.config is merged over Milvus's defaults (user.yaml written by the operator)")
    stream = field_setting(doc, "spec.dependencies.msgStreamType")
    if stream is not None:
        result.fields["msgStreamType"] = stream
    chosen = stream.value if stream is not None and stream.value else None
    if stream is not None and chosen == "custom":
        result.notes.append(f"msgStreamType custom ({_where(stream)}): spec.config decides the MQ")
        return result
    spec = lookup(doc.main, ["spec"])
    line = stream.line if stream is not None else (spec[0].start_mark.line + 1 if spec else 1)
    if chosen is None:
        chosen = "pulsar" if mode == CLUSTER else ("woodpecker" if version and version >= V2_6 else "rocksmq")
        why = f"spec.dependencies.msgStreamType empty: the operator's default for {mode} is {chosen}"
    else:
        why = f"spec.dependencies.msgStreamType: {chosen} ({doc.name}:{line})"
    if version is not None and version < V2_3:
        why += (
            f"; the operator writes it as mq.type into user.yaml, which Milvus {format_version(version)} does not "
            "read (mq.type came in 2.3): the addresses below decide"
        )
    else:
        why += "; the operator writes it as mq.type into user.yaml"
    result.notes.append(why)
    address_key = {"pulsar": "pulsar.address", "kafka": "kafka.brokerList"}.get(chosen)
    if address_key:
        endpoint = field_setting(doc, f"spec.dependencies.{chosen}.endpoint") or field_setting(
            doc, f"spec.dependencies.{chosen}.brokerList"
        )
        value = endpoint.value if endpoint and endpoint.value else f"{chosen} deployed in-cluster by the operator"
        result.settings.append(
            Setting(
                address_key,
                value,
                doc.name,
                endpoint.line if endpoint else line,
                "operator",
                endpoint.detail if endpoint else f"spec.dependencies.{chosen}",
            )
        )
    result.settings.append(Setting("mq.type", chosen, doc.name, line, "operator", "spec.dependencies.msgStreamType"))
    return result


def helm_enabled(toggles: dict[str, Setting], name: str) -> bool:
    """A Helm `*.enabled` toggle written as true."""
    return name in toggles and (toggles[name].value or "").lower() == "true"


def _helm_choice(
    doc: Document, mode: str, version: Version | None, toggles: dict[str, Setting]
) -> tuple[str | None, Setting | None, str]:
    """The MQ the chart configures, and why."""
    if mode == STANDALONE:
        queue = field_setting(doc, "standalone.messageQueue")
        if queue is not None and queue.value:
            return queue.value, queue, f"standalone.messageQueue: {queue.value} ({_where(queue)})"
        default = "woodpecker" if version and version >= V2_6 else "rocksmq"
        return default, None, f"standalone.messageQueue not set: the chart's default is {default}"
    for name in HELM_PULSAR_TOGGLES:
        if helm_enabled(toggles, name):
            return "pulsar", toggles[name], f"{name}: true ({_where(toggles[name])})"
    for name in HELM_KAFKA_TOGGLES:
        if helm_enabled(toggles, name):
            return "kafka", toggles[name], f"{name}: true ({_where(toggles[name])})"
    if helm_enabled(toggles, "woodpecker.enabled") or (version and version >= V2_6):
        return "woodpecker", toggles.get("woodpecker.enabled"), "no Pulsar or Kafka enabled: the chart uses woodpecker"
    if not any(name in toggles for name in HELM_PULSAR_TOGGLES):
        return "pulsar", None, "no Pulsar toggle set: the chart deploys Pulsar by default in a cluster"
    return None, None, "every Pulsar and Kafka toggle is false: the chart configures no MQ"


def _helm_values(doc: Document, mode: str, version: Version | None) -> KindView:
    result = KindView(doc)
    for name in HELM_TOGGLES + ("standalone.messageQueue",):
        found = field_setting(doc, name)
        if found is not None:
            result.fields[name] = found
    chosen, origin, why = _helm_choice(doc, mode, version, result.fields)
    result.notes.append(why)
    if chosen:
        line = origin.line if origin else 1
        detail = origin.detail if origin else "chart default"
        result.settings.append(Setting("mq.type", chosen, doc.name, line, "helm", detail))
        endpoint = _helm_endpoint(doc, chosen, result.fields, line)
        if endpoint is not None:
            result.settings.append(endpoint)
    user = embedded_yaml(doc, ["extraConfigFiles", "user.yaml"])
    if user is not None:
        result.notes.append("extraConfigFiles.user.yaml is merged last (user.yaml wins over the chart's settings)")
        for root in user.roots:
            result.settings += flatten(
                root, doc.name, line_offset=user.line_offset, detail_prefix="extraConfigFiles.user.yaml:"
            )
    return result


def _helm_endpoint(doc: Document, chosen: str, toggles: dict[str, Setting], line: int | None) -> Setting | None:
    """The address the chart writes for the Pulsar/Kafka it deploys or points at (externalPulsar/externalKafka)."""
    address_key = {"pulsar": "pulsar.address", "kafka": "kafka.brokerList"}.get(chosen)
    if address_key is None:
        return None
    external = f"external{chosen.capitalize()}"
    given = field_setting(doc, f"{external}.host" if chosen == "pulsar" else f"{external}.brokerList")
    if helm_enabled(toggles, f"{external}.enabled") and given is not None and given.value:
        return Setting(address_key, given.value, doc.name, given.line, "helm", given.detail)
    return Setting(
        address_key,
        f"{chosen} deployed in-cluster by the chart",
        doc.name,
        line,
        "helm",
        f"{external}.enabled is not true: the chart points Milvus at its own {chosen}",
    )


def _configmap(doc: Document, mode: str, version: Version | None) -> KindView:
    result = KindView(doc)
    for name in CONFIGMAP_FILES:
        embedded = embedded_yaml(doc, ["data", name])
        if embedded is None:
            continue
        result.notes.append(f"rendered ConfigMap: data.{name} read in Milvus's merge order")
        for root in embedded.roots:
            result.settings += flatten(root, doc.name, line_offset=embedded.line_offset, detail_prefix=f"data.{name}:")
    return result
