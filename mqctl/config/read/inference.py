"""What the documents say, or leave to assume, about the mode, the Milvus version and the file's role.

Each answer comes with why (an explanation step) and whether it was stated (by an option or the
document) or assumed; rules and the JSON `assumptions` list report the assumed ones.
"""

from __future__ import annotations

import re
from pathlib import Path

from mqctl.backends import STANDALONE, Version
from mqctl.config.known_keys import FULL, MODES, OVERLAY, ROLES, parse_version
from mqctl.config.read import kinds
from mqctl.config.read.documents import CONFIGMAP, MILVUS_YAML, Document
from mqctl.config.read.nodes import lookup
from mqctl.errors import InputError

# user.yaml (also user-2.5.yaml, natsmq_user.yaml, ...) and default.yaml: files Milvus 2.4+ merges over its milvus.yaml
OVERLAY_NAME = re.compile(r"(^|[^a-z])user([^a-z]|$)|^default\.ya?ml$", re.IGNORECASE)


def pick_mode(docs: list[Document], mode: str | None) -> tuple[str, str, bool]:
    if mode is not None:
        if mode not in MODES:
            raise InputError(f"unknown --mode {mode!r}", hint="use standalone or cluster")
        return mode, "--mode", True
    for doc in docs:
        stated, why = kinds.document_mode(doc)
        if stated:
            return stated, why, True
    return STANDALONE, "assumed: a milvus.yaml does not say; pass --mode cluster for a cluster", False


def pick_version(docs: list[Document], milvus_version: str | None) -> tuple[Version | None, str]:
    if milvus_version is not None:
        version = parse_version(milvus_version)
        if version is None:
            raise InputError(f"cannot read --milvus-version {milvus_version!r}", hint="e.g. 2.3.5 or v2.5.4")
        return version, "--milvus-version"
    unreadable = None
    for doc in docs:
        version, why, tag = kinds.document_version(doc)
        if version:
            return version, why
        if tag:
            unreadable = tag
    if unreadable:
        return None, f"image tag {unreadable} names no version; pass --milvus-version"
    return None, "unknown (pass --milvus-version): rules common to 2.3–2.6 apply"


def _is_overlay(doc: Document) -> bool:
    """CRs and Helm values sit on the image's milvus.yaml; a ConfigMap too unless it holds a milvus.yaml."""
    if doc.kind == CONFIGMAP:
        return lookup(doc.main, ["data", "milvus.yaml"]) is None
    return doc.kind != MILVUS_YAML or bool(OVERLAY_NAME.search(Path(doc.name).name))


def pick_role(docs: list[Document], role: str | None) -> tuple[str, str, bool]:
    """Whole milvus.yaml or overlay: forced by --role, else an overlay only when every document is one."""
    if role is not None:
        if role not in ROLES:
            raise InputError(
                f"unknown --role {role!r}",
                hint="use full (Milvus reads this file as its milvus.yaml) "
                "or overlay (it sits on the stock milvus.yaml)",
            )
        return role, "--role", True
    overlays = [doc for doc in docs if _is_overlay(doc)]
    if len(overlays) == len(docs):
        names = ", ".join(f"{doc.name} ({doc.kind})" for doc in docs)
        return (
            OVERLAY,
            (
                f"assumed from {names}: keys it leaves out take the stock milvus.yaml beneath it; "
                "--role full if Milvus reads it as its whole milvus.yaml"
            ),
            False,
        )
    return (
        FULL,
        (
            "assumed: Milvus reads it as its whole milvus.yaml, so keys it leaves out take Milvus's code "
            "defaults, where rocksmq.path and pulsar.address are empty; --role overlay if it sits on the "
            "stock milvus.yaml"
        ),
        False,
    )
