"""`config get`: a key as the document writes it, or its effective value and where that comes from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mqctl.config.known_keys import CHECKED_SECTIONS, known_children, nearest, section_keys, spec_for
from mqctl.config.read.addressing import address, written
from mqctl.config.read.documents import OPERATOR_CR, load_document
from mqctl.config.read.nodes import is_mapping, scalar_text
from mqctl.config.resolve.sources import EtcdConfig
from mqctl.errors import InputError


def get_key(path: Path | str, key: str, *, kind: str | None = None) -> tuple[str | None, int | None]:
    """(value, line) of a key written in the document; (None, None) when absent."""
    doc = load_document(path, kind)
    addr = address(doc, key)
    pair, line_offset = written(doc, addr)
    if pair is None:
        return None, None
    if is_mapping(pair[1]):
        raise InputError(
            f"{key} is a section (it has keys under it), not a value",
            hint=f"ask for one of its keys, e.g. {key}.<name>",
        )
    return scalar_text(pair[1]), pair[0].start_mark.line + 1 + line_offset


@dataclass
class KeyValue:
    """A key's effective value and where it comes from (what `config get` prints)."""

    key: str
    value: str | None
    source: str  # yaml, operator, helm, env, etcd, default, absent
    file: str | None
    line: int | None
    detail: str = ""


def check_known(key: str) -> None:
    """A key under mq/natsmq/rocksmq that Milvus does not have is a typo, not an unset value."""

    if key.split(".")[0] not in CHECKED_SECTIONS or spec_for(key) or known_children(key):
        return  # a known key, or a section such as natsmq.server
    candidates = section_keys(key)
    guess = nearest(key, candidates)
    raise InputError(
        f"unknown key {key!r}: Milvus has no such setting",
        hint=f"did you mean {guess}?" if guess else f"see `mqctl config rules`; known: {', '.join(candidates[:6])}",
    )


def read_key(
    path: Path | str,
    key: str,
    *,
    kind: str | None = None,
    mode: str | None = None,
    milvus_version: str | None = None,
    env: dict[str, str] | None = None,
    etcd: EtcdConfig | None = None,
    role: str | None = None,
) -> KeyValue:
    """A Milvus key's effective value (overrides and defaults included) or a document path's value."""
    from mqctl.config.resolve.resolution import resolve

    doc = load_document(path, kind)
    addr = address(doc, key)
    value, line = get_key(path, key, kind=kind)  # refuses a section, whose "value" would read as unset
    if line is None and addr.milvus_key:
        check_known(addr.milvus_key)
    if addr.milvus_key and not (doc.kind == OPERATOR_CR and addr.parts[:2] != ["spec", "config"]):
        origin = resolve(
            [path], kind=kind, mode=mode, milvus_version=milvus_version, env=env, etcd=etcd, role=role
        ).origin(addr.milvus_key)
        return KeyValue(key, origin.value, origin.source, origin.file, origin.line, origin.detail)
    if line is None:
        return KeyValue(key, None, "absent", str(doc.path), None, "not in the document")
    return KeyValue(key, value, "yaml", str(doc.path), line, key)
