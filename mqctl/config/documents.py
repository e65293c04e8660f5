"""Load a deployment document (milvus.yaml/user.yaml, Operator CR, Helm values, rendered ConfigMap).

Documents are parsed with ruamel.yaml's composer only: the node tree keeps exact character
offsets and lines, which both provenance (file:line) and byte-exact edits rely on. Values are
kept as the strings Milvus itself would see.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from mqctl.errors import InputError

MILVUS_YAML, OPERATOR_CR, HELM_VALUES, CONFIGMAP = "milvus-yaml", "operator-cr", "helm-values", "configmap"
KINDS = (MILVUS_YAML, OPERATOR_CR, HELM_VALUES, CONFIGMAP)
KIND_ALIASES = {"milvus": MILVUS_YAML, "yaml": MILVUS_YAML, "user-yaml": MILVUS_YAML, "user.yaml": MILVUS_YAML,
                "milvus.yaml": MILVUS_YAML, "operator": OPERATOR_CR, "cr": OPERATOR_CR, "helm": HELM_VALUES,
                "values": HELM_VALUES}
HELM_MARKERS = ("cluster", "standalone", "extraConfigFiles", "pulsarv3", "externalPulsar", "externalKafka")
PLACEHOLDER = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?:[:?+-][^}]*)?\}|\{\{[^}]*\}\}")  # envsubst, Jinja/Helm
BOM = "\ufeff"


@dataclass
class Setting:
    """One value of a Milvus key and where it came from."""

    key: str  # dotted Milvus key as written
    value: str | None  # the string Milvus sees; None when empty or null
    file: str | None
    line: int | None  # 1-based
    source: str  # yaml, env, etcd, default, operator, helm
    detail: str = ""  # document path, variable name or etcd key


@dataclass
class Document:
    path: Path
    text: str  # without BOM
    bom: bool
    newline: str
    kind: str
    roots: tuple  # composed ruamel nodes, one per YAML document
    main: object | None  # the node this kind is about (CR, values mapping, milvus.yaml mapping)

    @property
    def name(self) -> str:
        return str(self.path)


# ---------------------------------------------------------------------------- parsing

def read_text(path: Path) -> tuple[str, bool, str]:
    """File text without BOM, whether it had one, and its line ending."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file", hint="check the path") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a config file",
                         hint="pass the milvus.yaml/user.yaml (or CR, Helm values) file itself") from None
    except OSError as err:
        raise InputError(f"{path}: cannot read: {err.strerror}", hint="check the file's permissions") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text (byte {err.start})", location=str(path),
                         hint="save the file as UTF-8") from None
    bom = text.startswith(BOM)
    if bom:
        text = text[1:]
    newline = "\r\n" if "\r\n" in text else "\n"
    return text, bom, newline


def check_placeholders(text: str, where: str, line_offset: int = 0) -> None:
    """An unrendered `${VAR}` template would be read by Milvus literally: refuse it clearly."""
    for number, line in enumerate(text.splitlines(), start=1):
        code = line.split(" #")[0] if not line.lstrip().startswith("#") else ""
        match = PLACEHOLDER.search(code)
        if match:
            raise InputError(f"unrendered template placeholder {match.group(0)}",
                             location=f"{where}:{number + line_offset}:{match.start() + 1}",
                             hint="render the template first (envsubst, helm template) and pass the result")


def compose(text: str, where: str, line_offset: int = 0) -> tuple:
    """Parse YAML text into node trees; invalid YAML is an InputError at file:line:column.

    One command reads the same file many times (resolve, get, set, switch: a migration step does
    all four) and a milvus.yaml takes ~60 ms to parse, so trees are kept by text; nothing here
    changes a node, and the tuple keeps callers from changing the list."""
    return _compose(text, where, line_offset)


@functools.lru_cache(maxsize=16)
def _compose(text: str, where: str, line_offset: int) -> tuple:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    check_placeholders(text, where, line_offset)
    try:
        return tuple(node for node in YAML(typ="rt").compose_all(text) if node is not None)
    except MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        location = f"{where}:{mark.line + 1 + line_offset}:{mark.column + 1}" if mark else where
        problem = " ".join(p for p in (err.context, err.problem) if p)
        raise InputError(f"invalid YAML: {problem}", location=location, hint="fix the syntax at that position") from None
    except YAMLError as err:
        raise InputError(f"invalid YAML: {err}", location=where) from None


def is_mapping(node) -> bool:
    return type(node).__name__ == "MappingNode"


def is_sequence(node) -> bool:
    return type(node).__name__ == "SequenceNode"


def is_scalar(node) -> bool:
    return type(node).__name__ == "ScalarNode"


def child(node, name: str):
    """(key node, value node) of `name` in a mapping node, the last one when repeated."""
    found = None
    if is_mapping(node):
        for key_node, value_node in node.value:
            if is_scalar(key_node) and key_node.value == name:
                found = (key_node, value_node)
    return found


def lookup(node, parts: list[str]):
    """(key node, value node) at a dotted path, or None."""
    pair = None
    for part in parts:
        pair = child(node, part)
        if pair is None:
            return None
        node = pair[1]
    return pair


def scalar_text(node) -> str | None:
    """The string Milvus would read: None for null/empty, lists joined by commas."""
    if node is None:
        return None
    if is_scalar(node):
        if node.style is None and node.value in ("", "~", "null", "Null", "NULL"):
            return None
        return node.value
    if is_sequence(node):
        return ",".join(scalar_text(item) or "" for item in node.value)
    return None


def flatten(node, file: str, *, prefix: str = "", line_offset: int = 0, source: str = "yaml",
            detail_prefix: str = "") -> list[Setting]:
    """Every leaf of a mapping node as a Setting with its 1-based line."""
    settings: list[Setting] = []
    if not is_mapping(node):
        return settings
    for key_node, value_node in node.value:
        if not is_scalar(key_node) or key_node.value == "<<":
            continue
        key = f"{prefix}{key_node.value}"
        if is_mapping(value_node):
            settings.extend(flatten(value_node, file, prefix=key + ".", line_offset=line_offset, source=source,
                                    detail_prefix=detail_prefix))
        else:
            settings.append(Setting(key, scalar_text(value_node), file, key_node.start_mark.line + 1 + line_offset,
                                    source, detail_prefix + key))
    return settings


# ---------------------------------------------------------------------------- kinds

def _root_keys(node) -> set[str]:
    return {k.value for k, _ in node.value if is_scalar(k)} if is_mapping(node) else set()


def _is_operator_cr(node) -> bool:
    api = scalar_text(lookup(node, ["apiVersion"])[1]) if lookup(node, ["apiVersion"]) else None
    kind = scalar_text(lookup(node, ["kind"])[1]) if lookup(node, ["kind"]) else None
    return bool(api and api.startswith("milvus.io/") and kind in ("Milvus", "MilvusCluster"))


def _is_configmap(node) -> bool:
    kind = lookup(node, ["kind"])
    data = lookup(node, ["data"])
    return bool(kind and scalar_text(kind[1]) == "ConfigMap" and data and is_mapping(data[1])
                and any(str(k.value).endswith(".yaml") for k, _ in data[1].value))


def _is_helm_values(node) -> bool:
    keys = _root_keys(node)
    if keys & set(HELM_MARKERS):
        return True
    for name in ("pulsar", "kafka", "minio", "etcd"):
        if lookup(node, [name, "enabled"]) is not None:
            return True
    return lookup(node, ["image", "all"]) is not None


def detect(roots: list, path: Path) -> tuple[str, object | None]:
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
        raise InputError("expected a mapping of settings at the top level", location=f"{path}:1",
                         hint="a milvus.yaml, user.yaml, Operator CR or Helm values file starts with `key: value` lines")
    root = mappings[0]
    if "services" in _root_keys(root) and not _root_keys(root) & {"mq", "etcd", "minio", "rocksmq", "pulsar",
                                                                    "natsmq", "common", "proxy"}:
        raise InputError("not a Milvus configuration: this looks like a docker-compose file",
                         location=f"{path}:{root.start_mark.line + 1}",
                         hint="pass the milvus.yaml mounted into the container, or force with --kind milvus-yaml")
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
            raise InputError("no Milvus or MilvusCluster resource (apiVersion milvus.io/...) in the file",
                             location=str(path), hint="check --kind")
    return Document(path, text, bom, newline, detected, roots, main)


@dataclass
class Embedded:
    """A YAML file carried inside another document (Helm user.yaml, ConfigMap data): as a block string, or
    (Helm) as a mapping, which the chart renders with toYaml."""

    name: str  # document path, e.g. extraConfigFiles.user.yaml
    text: str
    line_offset: int  # add to an embedded 1-based line to get the outer file's line
    roots: tuple = ()


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
