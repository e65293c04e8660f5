"""The diff an edit shows: unified, with every secret value hidden whatever its YAML style."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator

from mqctl.config.read.nodes import Node, is_mapping, is_scalar, is_sequence
from mqctl.config.read.parse import compose
from mqctl.errors import InputError
from mqctl.secrets import REDACTED, is_secret_key, mask_url_passwords

SECRET_LINE = re.compile(r"^([+ -])(\s*)([^\s:#][^:]*):(\s+)(\S.*?)(\r?\n)?$")


def _secret_spans(node: Node, spans: list[tuple[int, int]]) -> None:
    """Character spans of the values of secret keys anywhere in a node tree."""
    if is_mapping(node):
        for key, value in node.value:
            if is_scalar(key) and is_secret_key(str(key.value)):
                spans.append((value.start_mark.index, value.end_mark.index))
            else:
                _secret_spans(value, spans)
    elif is_sequence(node):
        for item in node.value:
            _secret_spans(item, spans)


def shown_lines(text: str) -> list[str]:
    """The lines of a YAML text with every secret value replaced, whatever its style (flow mappings,
    lists, block scalars); the line count stays, so a diff's line numbers still hold."""
    spans: list[tuple[int, int]] = []
    try:
        for root in compose(text, "diff"):  # the texts of an edit are parsed anyway: cached
            _secret_spans(root, spans)
    except InputError:
        pass  # redact_diff still hides `key: value` lines of text that does not parse
    for start, end in sorted(spans, reverse=True):
        pieces = text[start:end].split("\n")
        if text[start:end].strip():
            text = (
                text[:start]
                + "\n".join(
                    piece[: len(piece) - len(piece.lstrip(" -"))] + REDACTED if piece.strip() else piece
                    for piece in pieces
                )
                + text[end:]
            )
    return text.splitlines(keepends=True)


def unified_diff(old: str, new: str, old_name: str, new_name: str) -> Iterator[str]:
    """difflib.unified_diff, except that lines are matched as written but shown through shown_lines."""
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    old_shown, new_shown = shown_lines(old), shown_lines(new)

    def span(start: int, stop: int) -> str:
        length = stop - start
        first = start + 1 if length else start
        return str(first) if length == 1 else f"{first},{length}"

    groups = list(difflib.SequenceMatcher(None, old_lines, new_lines).get_grouped_opcodes(3))
    if groups:
        yield f"--- {old_name}\n"
        yield f"+++ {new_name}\n"
    for group in groups:
        yield f"@@ -{span(group[0][1], group[-1][2])} +{span(group[0][3], group[-1][4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in old_shown[i1:i2])
                continue
            yield from ("-" + line for line in old_shown[i1:i2])
            yield from ("+" + line for line in new_shown[j1:j2])


def redact_diff(diff: str) -> str:
    """Hide the values of secret keys (passwords, tokens, sasl...) in a diff shown to people."""
    lines = []
    for line in diff.splitlines(keepends=True):
        match = SECRET_LINE.match(line)
        if match and not line.startswith(("+++", "---")) and is_secret_key(match.group(3)):
            line = f"{match.group(1)}{match.group(2)}{match.group(3)}:{match.group(4)}{REDACTED}{match.group(6) or ''}"
        lines.append(line)
    return "".join(lines)


def shown_diff(old: str, new: str, name: str) -> str:
    """The unified diff of an edit of the file `name`, secrets and URL passwords hidden."""
    name = name.lstrip("/")
    lines = unified_diff(old, new, f"a/{name}", f"b/{name}")
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    return mask_url_passwords(redact_diff(text))
