"""Minimal text splices on YAML: change one value, add or remove one key, touch nothing else.

ruamel.yaml's round-trip dump re-flows lines, changes indentation and drops CRLF/BOM, so it is
used here only to parse (node spans); the edit itself is a splice of the original text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from mqctl.config.read.nodes import Node, child, is_mapping, is_scalar, is_sequence
from mqctl.config.read.parse import compose
from mqctl.errors import InputError

PLAIN_SAFE = re.compile(r"^(?:[A-Za-z0-9_/.]|-(?=\d))[A-Za-z0-9_/.:@+~ -]*$")
BOOLEAN_WORDS = {"true", "false", "yes", "no", "on", "off", "y", "n"}
NULL_WORDS = {"null", "~"}
NODE_PROPERTIES = re.compile(r"(?:(?:&[^\s]+|![^\s]*)\s+)*")
ALIAS_AFTER_KEY = re.compile(r"[ \t]*:[ \t]*(\*[^\s,\]}#]+)")


@dataclass
class Splice:
    start: int
    end: int
    text: str

    def apply(self, source: str) -> str:
        return source[: self.start] + self.text + source[self.end :]


def render_scalar(value: str, old: Node | None = None, *, string: bool = False) -> str:
    """YAML text for a value, keeping the old value's quoting style when it had one."""
    style = getattr(old, "style", None) if old is not None else None
    if style == "'":
        return "'" + value.replace("'", "''") + "'"
    if style == '"':
        return _double_quoted(value)
    plain_ok = (
        bool(PLAIN_SAFE.match(value))
        and not value.endswith((" ", ":"))
        and " #" not in value
        and ": " not in value
        and value.lower() not in NULL_WORDS
    )
    if string and value.lower() in BOOLEAN_WORDS:
        plain_ok = False
    return value if plain_ok else _double_quoted(value)


def _double_quoted(value: str) -> str:
    """A YAML double-quoted scalar; characters YAML does not allow raw are written as \\u escapes."""
    quoted = json.dumps(value, ensure_ascii=False)
    return "".join(
        char if char.isprintable() or char == " " else f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else char
        for char in quoted
    )


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for match in re.finditer(r"\n", text):
        starts.append(match.end())
    return starts


def _is_empty(node: Node) -> bool:
    """A plain scalar with no text (`key:` or `key: # comment`): the parser marks it at the next token,
    which may be the next section's key, so its position is never a place to splice at."""
    return is_scalar(node) and node.style is None and node.start_mark.index == node.end_mark.index


def _last_line(node: Node, key_node: Node | None = None) -> int:
    """0-based line of a node's last character (block collections end on the next token's line; an empty
    value or an alias ends on its key's line)."""
    if key_node is not None and (_is_empty(node) or node.start_mark.index < key_node.end_mark.index):
        return int(
            key_node.end_mark.line
        )  # an empty value, or an alias (`key: *name`: the node is where its anchor is)
    if is_mapping(node) and node.value and node.flow_style is not True:
        return _last_line(node.value[-1][1], node.value[-1][0])
    if is_sequence(node) and node.value and node.flow_style is not True:
        return _last_line(node.value[-1])
    end = node.end_mark
    if end.column == 0 and end.line > node.start_mark.line:
        return int(end.line) - 1
    return int(end.line)


def indent_step(root: Node) -> int:
    """The document's indentation step, from its first nested block mapping (2 when none)."""
    if not is_mapping(root):
        return 2
    for key_node, value_node in root.value:
        if is_mapping(value_node) and value_node.value and value_node.flow_style is not True:
            step = int(value_node.value[0][0].start_mark.column - key_node.start_mark.column)
            if step > 0:
                return step
    return 2


def _new_lines(parts: list[str], value_text: str, indent: int, step: int, newline: str) -> str:
    lines = []
    for depth, part in enumerate(parts):
        pad = " " * (indent + depth * step)
        lines.append(f"{pad}{part}: {value_text}" if depth == len(parts) - 1 else f"{pad}{part}:")
    return newline.join(lines) + newline


def _insert_after_line(text: str, line: int, block: str, newline: str) -> Splice:
    starts = _line_starts(text)
    if line + 1 < len(starts):
        position = starts[line + 1]
        return Splice(position, position, block)
    # the last line: keep a missing final newline missing
    if text.endswith("\n"):
        return Splice(len(text), len(text), block)
    return Splice(len(text), len(text), newline + block[: -len(newline)])


def set_splice(
    text: str, root: Node, parts: list[str], value: str, newline: str, *, string: bool = False, label: str = ""
) -> Splice | None:
    """The splice that sets `parts` to `value` (None when it already has that text)."""
    label = label or ".".join(parts)
    node, depth = root, 0
    while depth < len(parts) and node is not None:
        pair = child(node, parts[depth])
        if pair is None:
            break
        key_node, value_node = pair
        if depth == len(parts) - 1:
            return _replace_value(text, key_node, value_node, value, newline, string=string, label=label)
        if is_mapping(value_node) and value_node.flow_style is True and not value_node.value:
            return _fill_empty_flow(
                text, key_node, value_node, parts[depth + 1 :], value, newline, indent_step(root), string=string
            )
        if is_mapping(value_node):  # flow mappings too: their values can be replaced in place
            node, depth = value_node, depth + 1
            continue
        if is_scalar(value_node) and value_node.value == "" and value_node.style is None:
            rest = parts[depth + 1 :]
            block = _new_lines(
                rest,
                render_scalar(value, string=string),
                key_node.start_mark.column + indent_step(root),
                indent_step(root),
                newline,
            )
            return _insert_after_line(text, _last_line(value_node, key_node), block, newline)
        raise InputError(
            f"{'.'.join(parts[: depth + 1])} holds a value, not a section, so {label} cannot be set",
            hint="unset it first or choose another key",
        )
    rest = parts[depth:]
    rendered = render_scalar(value, string=string)
    if node is None or not is_mapping(node):
        block = _new_lines(rest, rendered, 0, 2, newline)
        return _append_to_document(text, block, newline)
    if node.flow_style is True:
        raise InputError(
            f"{label}: cannot add a key inside a flow mapping {{...}}",
            hint="rewrite that mapping as an indented block to edit it with mqctl",
        )
    indent = node.value[0][0].start_mark.column
    block = _new_lines(rest, rendered, indent, indent_step(root), newline)
    if node is root and len(rest) > 1:
        block = newline + block  # a new top-level section gets a blank line before it, like its siblings
    return _insert_after_line(text, _last_line(node), block, newline)


def _fill_empty_flow(
    text: str, key_node: Node, value_node: Node, rest: list[str], value: str, newline: str, step: int, *, string: bool
) -> Splice:
    """`key: {}` becomes `key:` followed by the new block (a comment after `{}` stays on the key's line)."""
    starts = _line_starts(text)
    line = value_node.end_mark.line
    line_end = starts[line + 1] if line + 1 < len(starts) else len(text)
    tail = text[value_node.end_mark.index : line_end]
    ending = newline if tail.endswith("\n") else ""
    tail = tail[: len(tail) - len(ending)] if ending else tail
    tail = tail.rstrip("\r")
    colon = text.rindex(":", key_node.end_mark.index, value_node.start_mark.index + 1)
    block = _new_lines(rest, render_scalar(value, string=string), key_node.start_mark.column + step, step, newline)
    if not ending:
        block = block[: -len(newline)]
    return Splice(colon + 1, line_end, tail + newline + block)


def _append_to_document(text: str, block: str, newline: str) -> Splice:
    if not text or text.endswith("\n"):
        return Splice(len(text), len(text), block)
    return Splice(len(text), len(text), newline + block)


def _replace_value(
    text: str, key_node: Node, value_node: Node, value: str, newline: str, *, string: bool, label: str
) -> Splice | None:
    if is_mapping(value_node):
        raise InputError(
            f"{label} is a section (it has keys under it)", hint=f"set one of its keys, e.g. {label}.<name>"
        )
    if is_sequence(value_node):
        if value_node.flow_style is not True:
            raise InputError(f"{label} is a block list", hint="edit the list by hand, or write it as [a, b]")
        items = [item.strip() for item in value.strip().strip("[]").split(",") if item.strip()]
        new = "[" + ", ".join(render_scalar(item) for item in items) + "]"
        return (
            None
            if text[value_node.start_mark.index : value_node.end_mark.index] == new
            else Splice(value_node.start_mark.index, value_node.end_mark.index, new)
        )
    if value_node.style in ("|", ">"):
        raise InputError(f"{label} holds a block text (| or >)", hint="edit that text by hand")
    start, end = value_node.start_mark.index, value_node.end_mark.index
    if start < key_node.end_mark.index:  # `key: *name`: the node lives at its anchor, the edit replaces the alias
        alias = ALIAS_AFTER_KEY.match(text, key_node.end_mark.index)
        if alias is None:
            raise InputError(f"{label} refers to a value written elsewhere", hint="edit that value by hand")
        return Splice(*alias.span(1), render_scalar(value, string=string))
    properties = NODE_PROPERTIES.match(
        text, start
    )  # always matches (maybe nothing); keep `&anchor` and `!!tag` in front of the value
    start = properties.end() if properties else start
    if value_node.value == value and value_node.style is None and start != end:
        return None
    rendered = render_scalar(value, value_node, string=string)
    if start == end:  # `key:` with nothing after the colon (the parser may place the empty node elsewhere)
        colon = text.index(":", key_node.end_mark.index) + 1
        return Splice(colon, colon, " " + rendered)
    if text[start:end] == rendered:
        return None
    return Splice(start, end, rendered)


def unset_splice(text: str, root: Node, parts: list[str], *, label: str = "") -> Splice | None:
    """The splice that removes `parts` (its whole lines); None when the key is absent."""
    label = label or ".".join(parts)
    node, pair = root, None
    for part in parts:
        pair = child(node, part) if node is not None else None
        if pair is None:
            return None
        node = pair[1]
    if pair is None:  # no parts
        return None
    key_node, value_node = pair
    starts = _line_starts(text)
    first = key_node.start_mark.line
    if text[starts[first] : key_node.start_mark.index].strip():
        raise InputError(f"{label} shares its line with other YAML", hint="edit that line by hand")
    last = _last_line(value_node, key_node)
    end = starts[last + 1] if last + 1 < len(starts) else len(text)
    start = starts[first]
    if end == len(text) and not text.endswith("\n") and start > 0:
        start -= 2 if text[start - 2 : start] == "\r\n" else 1  # keep a missing final newline missing
    return Splice(start, end, "")


@dataclass
class Region:
    """A YAML file embedded as a block scalar (`user.yaml: |`), as its own dedented text."""

    text: str
    roots: tuple[Node, ...]
    line_starts: list[int]  # outer offset of each embedded line
    cut: list[int]  # indentation removed from each line
    indent: int
    end: int  # outer offset just past the block

    def outer(self, offset: int) -> int:
        starts = _line_starts(self.text)
        line = max(i for i, s in enumerate(starts) if s <= offset)
        column = offset - starts[line]
        if line >= len(self.line_starts):
            return self.end
        if column == 0:
            return self.line_starts[line]
        return self.line_starts[line] + self.cut[line] + column

    def lift(self, splice: Splice) -> Splice:
        """The same splice on the outer file: inserted lines get the block's indentation."""
        at_line_start = splice.start == 0 or self.text[splice.start - 1] == "\n"
        lines = splice.text.split("\n")
        pad = " " * self.indent
        lifted = [(pad + line) if line.strip() and (i > 0 or at_line_start) else line for i, line in enumerate(lines)]
        return Splice(self.outer(splice.start), self.outer(splice.end), "\n".join(lifted))


def embedded_region(outer_text: str, value_node: Node, where: str) -> Region:
    """Cut the lines of a block scalar out of the outer text, dedented, with their offsets."""
    if value_node.style not in ("|", ">"):
        raise InputError(f"{where}: the embedded YAML must be a block text (`|`) to be edited")
    starts = _line_starts(outer_text)
    first, last = value_node.start_mark.line + 1, _last_line(value_node)
    lines = [
        outer_text[starts[i] : (starts[i + 1] if i + 1 < len(starts) else len(outer_text))]
        for i in range(first, last + 1)
    ]
    indents = [len(line) - len(line.lstrip(" ")) for line in lines if line.strip()]
    indent = min(indents) if indents else value_node.start_mark.column + 2
    cut = [min(indent, len(line) - len(line.lstrip(" "))) for line in lines]
    text = "".join(line[c:] for line, c in zip(lines, cut))
    end = starts[last + 1] if last + 1 < len(starts) else len(outer_text)
    return Region(
        text, compose(text, where, line_offset=first), [starts[i] for i in range(first, last + 1)], cut, indent, end
    )
