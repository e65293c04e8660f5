"""Where a dotted key lives in each kind of document, and the YAML text a value is written as."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mqctl.backends import NAMES
from mqctl.config.known_keys import CHECKED_SECTIONS, coerce_value, nearest, spec_for
from mqctl.config.read.documents import CONFIGMAP, HELM_VALUES, OPERATOR_CR, Document, embedded_yaml
from mqctl.config.read.nodes import Pair, lookup
from mqctl.errors import InputError

KEY_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_/-]*$")
CR_TOP = ("apiVersion", "kind", "metadata", "spec", "status")
HELM_USER_YAML = "extraConfigFiles.user.yaml"
USER_YAML_PATH = ("extraConfigFiles", "user.yaml")
DOCUMENT_CHOICES = {
    "spec.dependencies.msgStreamType": (*NAMES, "custom", ""),  # the operator's msgStreamType values
    "standalone.messageQueue": NAMES,  # the chart's
}


@dataclass
class Address:
    """Where a key lives in a document: a path, possibly inside Helm's embedded user.yaml."""

    parts: list[str]
    milvus_key: str | None  # the Milvus key it sets, for typing values
    embedded: bool = False


def address(doc: Document, key: str) -> Address:
    if not key or key.startswith(".") or key.endswith(".") or ".." in key:
        raise InputError(f"invalid key {key!r}", hint="use a dotted key such as natsmq.server.port")
    bad = next((part for part in key.split(".") if not KEY_PART.match(part)), None)
    if bad is not None:
        raise InputError(
            f"invalid key {key!r}: {bad!r} is not a plain YAML key",
            hint="a key part holds letters, digits, '_', '-' and '/' only, e.g. natsmq.server.port",
        )
    if doc.kind == CONFIGMAP:
        raise InputError(
            f"{doc.path} is a rendered ConfigMap; mqctl does not edit generated files",
            hint="edit the Helm values or Operator CR it was rendered from",
        )
    if doc.kind == OPERATOR_CR:
        parts = key.split(".")
        if parts[0] in CR_TOP:
            milvus = ".".join(parts[2:]) if parts[:2] == ["spec", "config"] else None
            return Address(parts, milvus)
        return Address(["spec", "config", *parts], key)
    if doc.kind == HELM_VALUES:
        if key.startswith(HELM_USER_YAML + "."):
            inner = key[len(HELM_USER_YAML) + 1 :]
            return Address(inner.split("."), inner, embedded=True)
        if key.split(".")[0] in CHECKED_SECTIONS:  # Milvus keys the chart has no values for: they live in user.yaml
            return Address(key.split("."), key, embedded=True)
        return Address(key.split("."), None)
    return Address(key.split("."), key)


def typed_value(addr: Address, key: str, value: str) -> tuple[str, bool]:
    """The value's YAML text per the schema, and whether it must stay a string."""
    if addr.milvus_key:
        spec = spec_for(addr.milvus_key)
        return coerce_value(addr.milvus_key, value), spec is not None and spec.type in ("str", "path", "enum")
    choices = DOCUMENT_CHOICES.get(".".join(addr.parts))
    if choices is not None and value not in choices:
        guess = nearest(value, [c for c in choices if c])
        shown = ", ".join(c or '""' for c in choices)
        raise InputError(
            f"{key} must be one of {shown}, got {value!r}", hint=f"did you mean {guess!r}?" if guess else None
        )
    return value, choices is not None


def written(doc: Document, addr: Address) -> tuple[Pair | None, int]:
    """(key node, value node) of an address as the document writes it (None when absent), and what to add to
    its line for the outer file (Helm's user.yaml string: a read needs no block text, a quoted one reads too)."""
    root, line_offset = doc.main, 0
    if addr.embedded:
        embedded = embedded_yaml(doc, list(USER_YAML_PATH))
        root = embedded.roots[0] if embedded and embedded.roots else None
        line_offset = embedded.line_offset if embedded else 0
    return (lookup(root, addr.parts) if root is not None else None), line_offset
