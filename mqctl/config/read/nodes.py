"""Walk composed YAML nodes the way Milvus's YAML parser reads them: merge keys, nulls, lists as strings."""

from __future__ import annotations

import re
from typing import Any

from mqctl.config.known_keys import INT64_MAX
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
    written = _last_of_each([(k, v) for k, v in node.value if not _is_merge(k)])
    if len(written) == len(node.value):
        return written
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


def _last_of_each(pairs: list[Pair]) -> list[Pair]:
    """A key written twice in one mapping counts once, with its last value and nothing of the earlier one:
    Milvus reads milvus.yaml with gopkg.in/yaml.v2's non-strict Unmarshal (through viper up to 2.4, directly
    from 2.5 on), which replaces the whole value (yaml.v2 v2.4.0 decode.go:675-690), so a second `rocksmq:`
    block hides the first one's keys instead of merging with them."""
    last = {k.value: i for i, (k, _) in enumerate(pairs) if is_scalar(k)}
    return [pair for i, pair in enumerate(pairs) if not is_scalar(pair[0]) or last[pair[0].value] == i]


def repeated_keys(node: Node, prefix: str = "") -> list[tuple[str, list[int], list[str]]]:
    """Every key written more than once in one mapping, at any depth: (dotted key, 1-based lines of each
    occurrence, the dotted leaves of the earlier occurrences that the last one drops)."""
    found: list[tuple[str, list[int], list[str]]] = []
    if not is_mapping(node):
        return found
    by_name: dict[str, list[Pair]] = {}
    for key_node, value_node in node.value:
        if is_scalar(key_node) and not _is_merge(key_node):
            by_name.setdefault(key_node.value, []).append((key_node, value_node))
    for name, pairs in by_name.items():
        key = f"{prefix}{name}"
        if len(pairs) > 1:
            kept = {s.key for s in flatten_value(pairs[-1][1], key)}
            dropped = [s.key for _, value in pairs[:-1] for s in flatten_value(value, key) if s.key not in kept]
            found.append((key, [k.start_mark.line + 1 for k, _ in pairs], list(dict.fromkeys(dropped))))
        found += repeated_keys(pairs[-1][1], key + ".")
    return found


def flatten_value(value_node: Node, key: str) -> list[Setting]:
    """The leaves under one key's value (the key itself when it is a scalar)."""
    if is_mapping(value_node):
        return flatten(value_node, "", prefix=key + ".")
    return [Setting(key, scalar_text(value_node), None, None, "yaml")]


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
    """The string Milvus would read: None for null/empty, lists joined by commas, and a plain (unquoted)
    scalar as gopkg.in/yaml.v2 resolves it and spf13/cast turns it back into a string (`010` -> "8")."""
    if node is None:
        return None
    if is_scalar(node):
        if node.style is None and node.value in ("", "~", "null", "Null", "NULL"):
            return None
        return str(node.value) if node.style is not None else yaml_v2_plain(str(node.value))
    if is_sequence(node):
        return ",".join(scalar_text(item) or "" for item in node.value)
    return None


# gopkg.in/yaml.v2 v2.4.0 resolve.go: the plain scalars it does not keep as strings
_YAML_V2_BOOLS = {
    **dict.fromkeys(["y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"], "true"),
    **dict.fromkeys(["n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"], "false"),
}
_YAML_V2_SPECIAL_FLOATS = {
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), "+Inf"),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), "-Inf"),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), "NaN"),
}
_YAML_V2_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_GO_INT_BASE0 = re.compile(r"[-+]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
UINT64_MAX = (1 << 64) - 1


def yaml_v2_plain(text: str) -> str:
    """The string Milvus stores for a plain YAML scalar: yaml.v2 resolves ints with strconv.ParseInt(s, 0, 64)
    after removing `_` (`010` octal 8, `0x10` 16, `0o10` 8, `1_000` 1000), then ParseUint, then its float
    pattern (`1e3`, `08`), and YAML 1.1 booleans (`yes`, `off`); paramtable then reads the value through
    cast.ToStringE (ints in decimal, floats as strconv.FormatFloat(f, 'f', -1, 64): 1000, not 1e+03)."""
    if text in _YAML_V2_BOOLS:
        return _YAML_V2_BOOLS[text]
    if text in _YAML_V2_SPECIAL_FLOATS:
        return _YAML_V2_SPECIAL_FLOATS[text]
    if not text or not (text[0].isdigit() or text[0] in "+-."):
        return text
    plain = text.replace("_", "")
    if _GO_INT_BASE0.fullmatch(plain):
        sign = -1 if plain.startswith("-") else 1
        digits = plain.lstrip("+-")
        base = 8 if digits[:1] == "0" and digits[1:2].isdigit() else 0
        value = sign * int(digits, base) if base else sign * int(digits, 0)
        if -INT64_MAX - 1 <= value <= UINT64_MAX:
            return str(value)
    if _YAML_V2_FLOAT.fullmatch(plain):
        number = float(plain)
        if number not in (float("inf"), float("-inf")):  # ParseFloat's range error: yaml.v2 keeps the string
            return _go_format_float(number)
    return text


def _go_format_float(value: float) -> str:
    """strconv.FormatFloat(value, 'f', -1, 64): the shortest digits that read back, never an exponent."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    shortest = repr(value)
    if "e" not in shortest and "E" not in shortest:
        return shortest[:-2] if shortest.endswith(".0") else shortest
    from decimal import Decimal

    text = format(Decimal(shortest), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def flatten(
    node: Node,
    file: str,
    *,
    prefix: str = "",
    line_offset: int = 0,
    source: str = "yaml",
    detail_prefix: str = "",
    parts: tuple[int, ...] = (),
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
        written = (*parts, str(key_node.value).count(".") + 1)
        if is_mapping(value_node):
            settings.extend(
                flatten(
                    value_node,
                    file,
                    prefix=key + ".",
                    line_offset=line_offset,
                    source=source,
                    detail_prefix=detail_prefix,
                    parts=written,
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
                    written_parts=written,
                )
            )
    return settings


def viper_rank(setting: Setting) -> tuple[int, ...]:
    """Which of two settings of one dotted key in one file viper reads: the higher rank. viper's Get searches the
    config map for the longest written prefix first (`searchIndexableWithPathPrefixes` / v1.8.1
    `searchMapWithPathPrefixes`: "search for path prefixes, starting from the longest one"), so a top-level
    `mq.type: natsmq` wins over `mq: {type: rocksmq}` wherever it stands in the file. Seen on the 2.3.5 binary."""
    return setting.written_parts


def same_yaml(first: Setting, second: Setting) -> bool:
    """Both were written in one yaml file (not set by the Operator or Helm from their own fields)."""
    return (
        first.file == second.file
        and first.source == second.source == "yaml"
        and bool(first.written_parts)
        and bool(second.written_parts)
    )


def written_dotted(setting: Setting) -> bool:
    """The key was written with a dot inside one YAML key (`mq.type:`), not as nested sections."""
    return any(count > 1 for count in setting.written_parts)
