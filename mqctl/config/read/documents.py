"""Load a deployment document (milvus.yaml/user.yaml, Operator CR, Helm values, rendered ConfigMap).

Reading and composing the YAML is parse.py's job, walking nodes nodes.py's; here a file becomes a
Document of a known kind with its main node. Values are kept as the strings Milvus itself would see.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mqctl.config.read.nodes import Node, is_mapping, is_scalar, lookup, members, scalar_text
from mqctl.config.read.parse import compose, read_text
from mqctl.errors import InputError

MILVUS_YAML, OPERATOR_CR, HELM_VALUES, CONFIGMAP = "milvus-yaml", "operator-cr", "helm-values", "configmap"
KINDS = (MILVUS_YAML, OPERATOR_CR, HELM_VALUES, CONFIGMAP)
KIND_ALIASES = {
    "milvus": MILVUS_YAML,
    "yaml": MILVUS_YAML,
    "user-yaml": MILVUS_YAML,
    "user.yaml": MILVUS_YAML,
    "milvus.yaml": MILVUS_YAML,
    "operator": OPERATOR_CR,
    "cr": OPERATOR_CR,
    "helm": HELM_VALUES,
    "values": HELM_VALUES,
}
HELM_MARKERS = ("cluster", "standalone", "extraConfigFiles", "pulsarv3", "externalPulsar", "externalKafka")
CONFIGMAP_FILES = ("milvus.yaml", "default.yaml", "user.yaml")  # in Milvus's merge order


@dataclass
class Document:
    path: Path
    text: str  # without BOM
    bom: bool
    newline: str
    kind: str
    roots: tuple[Node, ...]  # composed ruamel nodes, one per YAML document
    main: object | None  # the node this kind is about (CR, values mapping, milvus.yaml mapping)

    @property
    def name(self) -> str:
        return str(self.path)


def _root_keys(node: Node) -> set[str]:
    return {k.value for k, _ in members(node) if is_scalar(k)}


def _field_text(node: Node, name: str) -> str | None:
    pair = lookup(node, [name])
    return scalar_text(pair[1]) if pair is not None and is_scalar(pair[1]) else None


def _is_operator_cr(node: Node) -> bool:
    api, kind = _field_text(node, "apiVersion"), _field_text(node, "kind")
    return bool(api and api.startswith("milvus.io/") and kind in ("Milvus", "MilvusCluster"))


def _configmap_keys(node: Node) -> list[str]:
    """The names under a ConfigMap's `data`."""
    data = lookup(node, ["data"])
    return [str(k.value) for k, _ in members(data[1]) if is_scalar(k)] if data else []


def _is_configmap(node: Node) -> bool:
    """A ConfigMap carrying a file Milvus reads (the ones the chart and the operator render)."""
    return _field_text(node, "kind") == "ConfigMap" and bool(set(_configmap_keys(node)) & set(CONFIGMAP_FILES))


def _refuse_kubernetes_object(node: Node, path: Path) -> None:
    """Any other Kubernetes object is not a config: read as a milvus.yaml, an edit would add `mq:` to it."""
    kind = _field_text(node, "kind")
    if not (_field_text(node, "apiVersion") and kind):
        return
    written = lookup(node, ["kind"])
    where = f"{path}:{written[0].start_mark.line + 1 if written else 1}"
    if kind == "ConfigMap":
        keys = _configmap_keys(node)
        raise InputError(
            f"is a Kubernetes ConfigMap, not a Milvus config: its data holds no "
            f"{', '.join(CONFIGMAP_FILES)} (keys: {', '.join(keys[:8]) or 'none'})",
            location=where,
            hint="save the Milvus config it carries into a file and pass that file",
        )
    raise InputError(
        f"is a Kubernetes {kind}, not a Milvus config: mqctl reads milvus.yaml/user.yaml, Milvus "
        "Operator CRs (milvus.io Milvus/MilvusCluster), Helm values and ConfigMaps holding "
        f"{', '.join(CONFIGMAP_FILES)}",
        location=where,
        hint="pass the Milvus config this object mounts or is rendered from",
    )


def _is_helm_values(node: Node) -> bool:
    keys = _root_keys(node)
    if keys & set(HELM_MARKERS):
        return True
    for name in ("pulsar", "kafka", "minio", "etcd"):
        if lookup(node, [name, "enabled"]) is not None:
            return True
    return lookup(node, ["image", "all"]) is not None


def _not_a_mapping(path: Path) -> InputError:
    return InputError(
        "expected a mapping of settings at the top level",
        location=f"{path}:1",
        hint="a milvus.yaml, user.yaml, Operator CR or Helm values file starts with `key: value` lines",
    )


def detect(roots: tuple[Node, ...], path: Path) -> tuple[str, object | None]:
    """The document kind and its main node."""
    mappings = [root for root in roots if is_mapping(root)]
    for root in mappings:
        if _is_operator_cr(root):
            return OPERATOR_CR, root
    for root in mappings:
        if _is_configmap(root):
            return CONFIGMAP, root
    for root in mappings:
        if _is_helm_values(root):
            return HELM_VALUES, root
    if not roots:
        return MILVUS_YAML, None
    if not mappings:
        raise _not_a_mapping(path)
    root = mappings[0]
    _refuse_kubernetes_object(root, path)
    if "services" in _root_keys(root) and not _root_keys(root) & {
        "mq",
        "etcd",
        "minio",
        "rocksmq",
        "pulsar",
        "natsmq",
        "common",
        "proxy",
    }:
        raise InputError(
            "not a Milvus configuration: this looks like a docker-compose file",
            location=f"{path}:{root.start_mark.line + 1}",
            hint="pass the milvus.yaml mounted into the container, or force with --kind milvus-yaml",
        )
    return MILVUS_YAML, root


def resolve_kind(kind: str | None) -> str | None:
    if kind is None:
        return None
    kind = KIND_ALIASES.get(kind.lower(), kind.lower())
    if kind not in KINDS:
        raise InputError(f"unknown --kind {kind!r}", hint=f"use one of {', '.join(KINDS)}")
    return kind


def load_document(path: Path | str, kind: str | None = None) -> Document:
    path = Path(path)
    text, bom, newline = read_text(path)
    roots = compose(text, str(path))
    forced = resolve_kind(kind)
    if forced is None:
        detected, main = detect(roots, path)
    else:
        detected = forced
        main = next((r for r in roots if is_mapping(r) and (forced != OPERATOR_CR or _is_operator_cr(r))), None)
        if forced == OPERATOR_CR and main is None:
            raise InputError(
                "no Milvus or MilvusCluster resource (apiVersion milvus.io/...) in the file",
                location=str(path),
                hint="check --kind",
            )
        if main is None and roots:
            raise _not_a_mapping(path)
        if forced == CONFIGMAP and not set(_configmap_keys(main)) & set(CONFIGMAP_FILES):
            raise InputError(
                f"--kind configmap, but `data` holds no {', '.join(CONFIGMAP_FILES)}",
                location=str(path),
                hint="check --kind",
            )
    return Document(path, text, bom, newline, detected, roots, main)


@dataclass
class Embedded:
    """A YAML file carried inside another document (Helm user.yaml, ConfigMap data): as a block string, or
    (Helm) as a mapping, which the chart renders with toYaml."""

    name: str  # document path, e.g. extraConfigFiles.user.yaml
    text: str
    line_offset: int  # add to an embedded 1-based line to get the outer file's line
    roots: tuple[Node, ...] = ()


def embedded_yaml(doc: Document, parts: list[str]) -> Embedded | None:
    """Parse a block-scalar YAML value at `parts`, keeping outer-file line numbers."""
    pair = lookup(doc.main, parts)
    if pair is not None and is_mapping(pair[1]):  # Helm's toYaml renders a mapping value as the file itself
        return Embedded(".".join(parts), "", 0, (pair[1],))
    if pair is None or not is_scalar(pair[1]) or not pair[1].value:
        return None
    value_node = pair[1]
    offset = value_node.start_mark.line + (1 if value_node.style in ("|", ">") else 0)
    name = ".".join(parts)
    roots = compose(value_node.value, str(doc.path), line_offset=offset)
    return Embedded(name, value_node.value, offset, roots)
