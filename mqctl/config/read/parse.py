"""Read a config file's text and compose its YAML into node trees, refusing hostile input early.

Documents are parsed with ruamel.yaml's composer only: the node tree keeps exact character
offsets and lines, which both provenance (file:line) and byte-exact edits rely on.

Hostile input is refused before it costs much: files over MAX_INPUT_BYTES are not read; nesting
deeper than MAX_NESTING, more than MAX_NODES nodes, more than MAX_ALIASES alias uses or more than
MAX_INPUT_BYTES of scalar text (a "billion laughs") stop the composer, counted with every alias
written out, since everything after composing walks aliases as if they were.
"""

from __future__ import annotations

import functools
import os
import re
import select
import stat
import time
from pathlib import Path
from typing import Any

from mqctl.config.read import placeholders
from mqctl.config.read.nodes import Node
from mqctl.errors import InputError
from mqctl.files import BOM
from mqctl.secrets import REDACTED, is_secret_key

TEMPLATE = re.compile(r"\{\{[^}]*\}\}")  # Jinja/Helm
SURROGATES = re.compile("[\ud800-\udfff]")

# Real inputs are far below these: the largest milvus.yaml or Helm values we have seen is ~100 KB with
# ~2,000 nodes, 6 levels deep. Parsing takes ~1 s per MiB or per 20,000 nodes, so the size and node
# limits also bound the time a read takes.
MAX_INPUT_BYTES = 2 * 1024 * 1024
MAX_NESTING = 100  # mappings/sequences inside each other, aliases written out
MAX_ALIASES = 10_000  # alias uses once every alias inside an anchor is written out too
MAX_NODES = 50_000  # keys and values (sections included) once aliases are written out
PIPE_WAIT_SECONDS = 30  # a pipe (`<(kubectl get ...)`) must be written in full within this time
NESTING_PROBLEM = f"nesting deeper than {MAX_NESTING} levels, the nesting limit"
DEEP_HINT = "a Milvus config is a few levels deep; check the file is the one meant"
ALIAS_HINT = "write the values out instead of nesting aliases"
SIZE_HINT = "pass the milvus.yaml/user.yaml, CR or Helm values itself; real ones are well below these limits"
# ruamel's scanner spends ~1 s on the first hundred levels of `[[[[...`: such a run is refused from the text
FLOW_OPENERS = re.compile(r"(?:[\[{][ \t\r\n]*)" + f"{{{MAX_NESTING + 1}}}")


def _size_error(path: Path) -> InputError:
    return InputError(
        f"{path}: larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB, the input size limit", hint=SIZE_HINT
    )


@functools.cache
def _read_pipe(path: Path) -> bytes:
    """A FIFO's content; refused at once when nothing writes into it, after PIPE_WAIT_SECONDS when the
    writer never finishes (a plain read would block for ever on either). A pipe can be read once and a
    command reads its files several times, so the content is kept."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        chunks: list[bytes] = []
        total, deadline = 0, time.monotonic() + PIPE_WAIT_SECONDS
        while True:
            try:
                chunk = os.read(descriptor, 65536)
            except BlockingIOError:  # a writer is there but has not written yet
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([descriptor], [], [], left)[0]:
                    raise InputError(
                        f"{path}: the pipe was not written in full within {PIPE_WAIT_SECONDS} s",
                        hint="pass a file instead",
                    ) from None
                continue
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_INPUT_BYTES:
                raise _size_error(path)
            chunks.append(chunk)
    finally:
        os.close(descriptor)
    if not chunks:
        raise InputError(f"{path}: a named pipe that nothing writes into", hint="pass the config file itself")
    return b"".join(chunks)


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, refusing what is not a config file (directories, devices, oversized input)."""
    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise InputError(
                f"{path}: is a directory, not a config file",
                hint="pass the milvus.yaml/user.yaml (or CR, Helm values) file itself",
            )
        if stat.S_ISFIFO(info.st_mode):
            return _read_pipe(path)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{path}: is a device or socket, not a config file", hint="pass a regular file")
        if info.st_size > MAX_INPUT_BYTES:
            raise _size_error(path)
        with path.open("rb") as handle:
            raw = handle.read(MAX_INPUT_BYTES + 1)  # a file that grows, or /proc, may say a smaller size
    except FileNotFoundError:
        raise InputError(f"{path}: no such file", hint="check the path") from None
    except OSError as err:
        raise InputError(
            f"{path}: cannot read: {err.strerror}", hint="check the file's permissions and symbolic links"
        ) from None
    if len(raw) > MAX_INPUT_BYTES:
        raise _size_error(path)
    return raw


def read_text(path: Path) -> tuple[str, bool, str]:
    """File text without BOM, whether it had one, and its line ending."""
    raw = _read_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(
            f"not UTF-8 text (byte {err.start})", location=str(path), hint="save the file as UTF-8"
        ) from None
    bom = text.startswith(BOM)
    if bom:
        text = text[1:]
    newline = "\r\n" if "\r\n" in text else "\n"
    return text, bom, newline


def _under_secret_key(lines: list[str], number: int, column: int) -> bool:
    """Whether the text at 0-based (line, column) is the value of a secret key (by the key written
    before it on the line, else on the nearest less-indented line above): such text is never shown."""
    if number >= len(lines):
        return False
    before = lines[number][:column]
    if ":" in before:
        return is_secret_key(before)
    indent = len(lines[number]) - len(lines[number].lstrip())
    for line in reversed(lines[:number]):
        stripped = line.lstrip()
        if stripped and not stripped.startswith("#") and len(line) - len(stripped) < indent:
            return is_secret_key(line.split(":")[0])
    return False


def check_templates(text: str, where: str, line_offset: int = 0) -> None:
    """An unrendered `{{ ... }}` template (Helm, Jinja) is not the YAML Milvus reads: refuse it clearly.
    A `${VAR}` placeholder is read, as Milvus reads it (literally: see placeholders.py)."""
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        code = line.split(" #")[0] if not line.lstrip().startswith("#") else ""
        match = TEMPLATE.search(code)
        if match:
            shown = match.group(0)
            if _under_secret_key(lines, number - 1, match.start()):
                shown = "{{" + REDACTED + "}}"
            raise InputError(
                f"unrendered template placeholder {shown}",
                location=f"{where}:{number + line_offset}:{match.start() + 1}",
                hint="render the template first (helm template) and pass the result",
            )


def _template_hint(text: str, error_line: int | None, line_offset: int) -> str | None:
    """When a `${VAR}` stands where YAML structure is expected (a line of its own, shortly before the error),
    the file is a template meant to be rendered first: Milvus, which substitutes nothing, fails on it too."""
    if error_line is None:
        return None
    lines = text.splitlines()
    for number in range(min(error_line, len(lines) - 1), max(error_line - 4, -1), -1):
        stripped = lines[number].strip()
        if placeholders.PLACEHOLDER.fullmatch(stripped):
            shown = placeholders.masked(stripped) if _under_secret_key(lines, number, 0) else stripped
            return (
                f"line {number + 1 + line_offset} is the placeholder {shown}, which Milvus reads literally: "
                "this is a template, so render it (e.g. envsubst) and pass the result"
            )
    return None


def compose(text: str, where: str, line_offset: int = 0) -> tuple[Node, ...]:
    """Parse YAML text into node trees; invalid YAML is an InputError at file:line:column.

    One command reads the same file many times (resolve, get, set, switch: a migration step does
    all four) and a milvus.yaml takes ~60 ms to parse, so trees are kept by text; nothing here
    changes a node, and the tuple keeps callers from changing the list. The trees are kept by text alone:
    `where` only names the text in an error, and the same text is read under several names (the file's
    path, "diff")."""
    key = (text, line_offset)
    trees = _TREES.get(key)
    if trees is None:
        trees = _compose(text, where, line_offset)
        while len(_TREES) >= TREES_KEPT:
            _TREES.pop(next(iter(_TREES)), None)
        _TREES[key] = trees
    return trees


TREES_KEPT = 16
_TREES: dict[tuple[str, int], tuple[Node, ...]] = {}  # (text, line offset) -> trees, oldest first


@functools.cache
def _bounded_composer() -> tuple[Any, Any]:
    """ruamel's Composer, measuring what each node would be with its aliases written out.

    An alias stays one shared node in the tree, but flattening and joining lists visit it at every
    use: a few lines of nested aliases stand for billions of nodes. Each node's written-out node
    count, scalar characters, alias uses and height are known once it is composed, so the document
    is refused where it crosses a limit, before anything walks the tree."""
    from ruamel.yaml.composer import Composer
    from ruamel.yaml.error import MarkedYAMLError
    from ruamel.yaml.events import AliasEvent

    class Refused(MarkedYAMLError):
        """A document refused while composing, with the fix as its note."""

        def __init__(self, problem: str, mark: Any, hint: str) -> None:
            super().__init__(None, None, problem, mark, hint)

    class BoundedComposer(Composer):
        def __init__(self, loader: Any = None) -> None:
            super().__init__(loader)
            self.warn_double_anchors = False  # allowed in YAML (the later one counts); the warning quotes lines
            self.measured: dict[int, list[int]] = {}  # id(node) -> [nodes, characters, alias uses, height]
            self.open: list[list[int]] = []  # the same for the children of each node being composed
            self.total = [0, 0, 0]  # nodes, characters, alias uses of the whole stream, written out

        def compose_node(self, parent: Any, index: Any) -> Any:
            is_alias = self.parser.check_event(AliasEvent)
            mark = self.parser.peek_event().start_mark
            if not is_alias and len(self.open) >= MAX_NESTING:
                raise Refused(NESTING_PROBLEM, mark, DEEP_HINT)
            if not is_alias:
                self.open.append([0, 0, 0, 0])
            node = super().compose_node(parent, index)
            if is_alias:
                if id(node) not in self.measured:
                    raise Refused(
                        f"recursive alias *{node.anchor}: it refers to a node that contains it", mark, ALIAS_HINT
                    )
                nodes, characters, uses, height = self.measured[id(node)]
                if len(self.open) + height > MAX_NESTING:
                    raise Refused(f"alias *{node.anchor}: {NESTING_PROBLEM}", mark, ALIAS_HINT)
                self._add([nodes, characters, uses + 1, height], mark)
                return node
            if isinstance(node.value, str) and node.style == '"' and SURROGATES.search(node.value):
                raise Refused(
                    "invalid Unicode escape: a \\uD800-\\uDFFF surrogate, which Milvus's YAML parser "
                    "(Go, after libyaml) rejects",
                    mark,
                    "write the character itself, UTF-8 encoded",
                )
            children = self.open.pop()
            own = len(node.value) if isinstance(node.value, str) else 0
            self.measured[id(node)] = [children[0] + 1, children[1] + own, children[2], children[3] + 1]
            self.total[0] += 1
            self.total[1] += own
            self._add(self.measured[id(node)], mark, parent_only=True)
            return node

        def _add(self, measure: list[int], mark: Any, *, parent_only: bool = False) -> None:
            """Count a node in its parent; an alias also in the totals, which are checked against the limits."""
            if self.open:
                parent = self.open[-1]
                for i in range(3):
                    parent[i] += measure[i]
                parent[3] = max(parent[3], measure[3])
            if not parent_only:
                for i in range(3):
                    self.total[i] += measure[i]
            nodes, characters, uses = self.total
            if nodes > MAX_NODES:
                raise Refused(
                    f"more than {MAX_NODES} YAML nodes (keys and values)"
                    + (" once aliases are written out" if uses else "")
                    + ", the node limit",
                    mark,
                    ALIAS_HINT if uses else SIZE_HINT,
                )
            if characters > MAX_INPUT_BYTES:
                raise Refused(
                    f"aliases expand the document beyond {MAX_INPUT_BYTES // (1024 * 1024)} MiB, the input size limit",
                    mark,
                    ALIAS_HINT,
                )
            if uses > MAX_ALIASES:
                raise Refused(
                    f"aliases are used more than {MAX_ALIASES} times once written out, the alias limit",
                    mark,
                    ALIAS_HINT,
                )

    return BoundedComposer, Refused


def _compose(text: str, where: str, line_offset: int) -> tuple[Node, ...]:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError
    from ruamel.yaml.reader import ReaderError

    check_templates(text, where, line_offset)
    deep = FLOW_OPENERS.search(text)
    if deep:
        line = text.count("\n", 0, deep.start())
        column = deep.start() - (text.rfind("\n", 0, deep.start()) + 1)
        raise InputError(NESTING_PROBLEM, location=f"{where}:{line + 1 + line_offset}:{column + 1}", hint=DEEP_HINT)
    composer, refused = _bounded_composer()
    yaml = YAML(typ="rt")
    yaml.Composer = composer
    try:
        return tuple(node for node in yaml.compose_all(text) if node is not None)
    except MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        location = f"{where}:{mark.line + 1 + line_offset}:{mark.column + 1}" if mark else where
        if isinstance(err, refused):
            raise InputError(err.problem, location=location, hint=err.note) from None
        problem = " ".join(p for p in (err.context, err.problem) if p)
        if mark and _under_secret_key(text.splitlines(), mark.line, mark.column):
            problem = re.sub(r"'[^']*'|\"[^\"]*\"", repr(REDACTED), problem)  # e.g. the name of an undefined alias
        raise InputError(
            f"invalid YAML: {problem}",
            location=location,
            hint=_template_hint(text, mark.line if mark else None, line_offset) or "fix the syntax at that position",
        ) from None
    except ReaderError as err:  # a character YAML does not allow (NUL, escape codes...)
        line = text.count("\n", 0, err.position)
        column = err.position - (text.rfind("\n", 0, err.position) + 1)
        character = f"#x{err.character:04x}" if isinstance(err.character, int) else repr(err.character)
        raise InputError(
            f"invalid YAML: character {character} is not allowed in YAML",
            location=f"{where}:{line + 1 + line_offset}:{column + 1}",
            hint="remove it (a binary file, or a control character pasted in?)",
        ) from None
    except YAMLError as err:
        raise InputError(f"invalid YAML: {err}".replace("\n", " "), location=where) from None
