"""Walk composed YAML nodes the way Milvus's YAML parser reads them: merge keys, nulls, lists as strings."""

from __future__ import annotations

from typing import Any

from mqctl.config.settings import Setting

Node = Any  # a composed ruamel.yaml node: ScalarNode, MappingNode or SequenceNode (untyped upstream)
Pair = tuple[Node, Node]  # (key node, value node)

MERGE_KEY = "<<"


def is_mapping(node: Node) -> bool:
    return type(node).__name__ == "MappingNode"


def is_sequence(node: Node) -> bool:
    return type(node).__name__ == "SequenceNode"


def is_scalar(node: Node) -> bool:
    return type(node).__name__ == "ScalarNode"


def child(node: Node, name: str) -> Pair | None:
    """(key node, value node) of `name` as written in a mapping node, the last one when repeated
    (merged keys are not written there: edits use this, reads use `lookup`)."""
    found: Pair | None = None
    if is_mapping(node):
        for key_node, value_node in node.value:
            if key_node.value == name and is_scalar(key_node):
                found = (key_node, value_node)
    return found


def _is_merge(key_node: Node) -> bool:
    return key_node.value == MERGE_KEY and is_scalar(key_node) and key_node.style is None


def _merged_mappings(value_node: Node) -> list[Node]:
    """What `<<:` merges: one mapping, or the mappings of a list, in priority order."""
    if is_mapping(value_node):
        return [value_node]
    return [item for item in value_node.value if is_mapping(item)] if is_sequence(value_node) else []


def members(node: Node) -> list[Pair]:
    """(key node, value node) pairs of a mapping as Milvus's YAML parser sees them: merge keys
    (`<<: *base`, `<<: [*a, *b]`) resolved the YAML way, a key written in the mapping winning over a
    merged one and an earlier merged mapping over a later one. Merged pairs come first, so that
    "later wins" readers keep the written ones."""
    if not is_mapping(node):
        return []
    if not any(_is_merge(k) for k, _ in node.value):
        return list(node.value)
    written = [(k, v) for k, v in node.value if not _is_merge(k)]
    names = {k.value for k, _ in written if is_scalar(k)}
    merged = []
    for key_node, value_node in node.value:
        if not _is_merge(key_node):
            continue
        for source in _merged_mappings(value_node):
            for pair in members(source):
                if is_scalar(pair[0]) and pair[0].value not in names:
                    names.add(pair[0].value)
                    merged.append(pair)
    return merged + written


def member(node: Node, name: str) -> Pair | None:
    """(key node, value node) of `name` in a mapping as read (merge keys resolved), the last when repeated."""
    found = child(node, name)
    if found is None and is_mapping(node) and any(_is_merge(k) for k, _ in node.value):
        found = next((pair for pair in members(node) if is_scalar(pair[0]) and pair[0].value == name), None)
    return found


def lookup(node: Node, parts: list[str]) -> Pair | None:
    """(key node, value node) at a dotted path as read (merge keys resolved), or None."""
    pair = None
    for part in parts:
        pair = member(node, part)
        if pair is None:
            return None
        node = pair[1]
    return pair


def scalar_text(node: Node) -> str | None:
    """The string Milvus would read: None for null/empty, lists joined by commas."""
    if node is None:
        return None
    if is_scalar(node):
        if node.style is None and node.value in ("", "~", "null", "Null", "NULL"):
            return None
        return str(node.value)
    if is_sequence(node):
        return ",".join(scalar_text(item) or "" for item in node.value)
    return None


def flatten(
    node: Node, file: str, *, prefix: str = "", line_offset: int = 0, source: str = "yaml", detail_prefix: str = ""
) -> list[Setting]:
    """Every leaf of a mapping node as a Setting with its 1-based line (for a merged key, the line
    where the anchored mapping writes it)."""
    settings: list[Setting] = []
    if not is_mapping(node):
        return settings
    for key_node, value_node in members(node):
        if not is_scalar(key_node):
            continue
        key = f"{prefix}{key_node.value}"
        if is_mapping(value_node):
            settings.extend(
                flatten(
                    value_node,
                    file,
                    prefix=key + ".",
                    line_offset=line_offset,
                    source=source,
                    detail_prefix=detail_prefix,
                )
            )
        else:
            settings.append(
                Setting(
                    key,
                    scalar_text(value_node),
                    file,
                    key_node.start_mark.line + 1 + line_offset,
                    source,
                    detail_prefix + key,
                )
            )
    return settings
