"""Re-read an edited text and refuse it unless exactly the intended keys changed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mqctl.config.read.addressing import HELM_USER_YAML, USER_YAML_PATH, Address
from mqctl.config.read.documents import HELM_VALUES, Document
from mqctl.config.read.nodes import Node, is_mapping, is_scalar, is_sequence
from mqctl.config.read.parse import compose
from mqctl.errors import InputError, PreconditionError

Shape = tuple[Any, ...]  # a comparable picture of a value (see _shape)
KeyPath = tuple[Any, ...]  # document index, then the keys down to a value
SECTION: Shape = ("section",)


def _shape(node: Node) -> Shape:
    """A comparable picture of a value: scalars with their quoting, collections with their content."""
    if is_mapping(node):
        return ("map", tuple((_shape(k), _shape(v)) for k, v in node.value))
    if is_sequence(node):
        return ("seq", tuple(_shape(item) for item in node.value))
    return ("scalar", node.value, node.style or "")


def _walk(node: Node, path: KeyPath, picture: dict[KeyPath, Shape], doc: Document) -> None:
    if is_scalar(node) and doc.kind == HELM_VALUES and path[1:] == USER_YAML_PATH and node.value.strip():
        try:  # the chart's user.yaml string is YAML of its own: compare what Milvus will read from it
            inner = compose(node.value, f"{doc.path} ({HELM_USER_YAML})")
        except InputError:
            inner = ()
        if inner:
            node = inner[0]
    if not is_mapping(node):
        picture[path] = _shape(node)
        return
    picture[path] = SECTION
    for key_node, value_node in node.value:
        _walk(value_node, path + (key_node.value if is_scalar(key_node) else _shape(key_node),), picture, doc)


def picture(doc: Document, text: str) -> dict[KeyPath, Shape]:
    """Every value of a document text by its path (document index first), as Milvus and Kubernetes read it."""
    found: dict[KeyPath, Shape] = {}
    for index, root in enumerate(compose(text, str(doc.path))):
        _walk(root, (index,), found, doc)
    return found


@dataclass
class Change:
    """One key an edit means to change: `value` is the YAML value text it must read back as, None for removal."""

    key: str
    path: KeyPath
    value: str | None


def doc_path(doc: Document, addr: Address) -> KeyPath:
    index = next((i for i, r in enumerate(doc.roots) if r is doc.main), 0)
    return (index, *(USER_YAML_PATH if addr.embedded else ()), *addr.parts)


def _dotted(path: KeyPath) -> str:
    return ".".join(str(part) for part in path[1:])


def verify_edit(doc: Document, new_text: str, changes: list[Change]) -> None:
    """Re-parse the edited text and refuse (exit 3) unless exactly the intended keys changed."""
    try:
        after = picture(doc, new_text)
    except InputError as err:
        raise PreconditionError(
            f"the edit would leave {doc.path} unreadable ({err.message}); nothing was written",
            hint="edit this part by hand",
        ) from None
    expected: dict[KeyPath, Shape | None] = dict(picture(doc, doc.text))
    intended: dict[KeyPath, str | None] = {}
    for change in changes:
        path = change.path
        if change.value is None:
            expected = {p: v for p, v in expected.items() if p[: len(path)] != path}
            for depth in range(len(path) - 1, 1, -1):  # a section left without keys reads as empty
                section = path[:depth]
                emptied = not any(len(p) > depth and p[:depth] == section for p in expected)
                if emptied and expected.get(section) == SECTION and (after.get(section) or ("",))[0] == "scalar":
                    expected[section] = after[section]
            if expected.get(path[:1]) == SECTION and len(expected) == 1 and path[:1] not in after:
                del expected[path[:1]]  # the last key of the document: nothing is left to parse
            intended[path] = None
            continue
        expected = {p: v for p, v in expected.items() if p[: len(path)] != path or p == path}
        for depth in range(2, len(path)):
            expected[path[:depth]] = SECTION
        expected[path] = after.get(path)  # checked below
        intended[path] = change.value
    wrong = [p for p in sorted(set(expected) | set(after), key=str) if expected.get(p) != after.get(p)]
    for path, value in intended.items():
        got = after.get(path)
        if (value is None and got is not None) or (
            value is not None and (got is None or got == SECTION or (got[0] == "scalar" and got[1] != value))
        ):
            wrong.insert(0, path)
    if wrong:
        keys = ", ".join(c.key for c in changes)
        shown = ", ".join(_dotted(p) or "(top level)" for p in wrong[:3]) + (" ..." if len(wrong) > 3 else "")
        raise PreconditionError(
            f"{doc.path}: the edit of {keys} would not read back as intended (it would change "
            f"{shown}); nothing was written",
            hint="edit this part of the file by hand",
        )
