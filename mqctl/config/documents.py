"""Load a deployment document (milvus.yaml/user.yaml, Operator CR, Helm values, rendered ConfigMap).

Documents are parsed with ruamel.yaml's composer only: the node tree keeps exact character
offsets and lines, which both provenance (file:line) and byte-exact edits rely on. Values are
kept as the strings Milvus itself would see.

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
from dataclasses import dataclass
from pathlib import Path

from mqctl.errors import InputError
from mqctl.secrets import REDACTED, is_secret_key

MILVUS_YAML, OPERATOR_CR, HELM_VALUES, CONFIGMAP = "milvus-yaml", "operator-cr", "helm-values", "configmap"
KINDS = (MILVUS_YAML, OPERATOR_CR, HELM_VALUES, CONFIGMAP)
KIND_ALIASES = {
    "milvus": MILVUS_YAML,
    "yaml": MILVUS_YAML,
    "user-yaml": MILVUS_YAML,
    "user.yaml": MILVUS_YAML,
    "milvus.yaml": MILVUS_YAML,
    "operator": OPERATOR_CR,
    "cr": OPERATOR_CR,
    "helm": HELM_VALUES,
    "values": HELM_VALUES,
}
HELM_MARKERS = ("cluster", "standalone", "extraConfigFiles", "pulsarv3", "externalPulsar", "externalKafka")
PLACEHOLDER = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?:[:?+-][^}]*)?\}|\{\{[^}]*\}\}")  # envsubst, Jinja/Helm
BOM = "\ufeff"
SURROGATES = re.compile("[\ud800-\udfff]")
CONFIGMAP_FILES = ("milvus.yaml", "default.yaml", "user.yaml")  # in Milvus's merge order
MERGE_KEY = "<<"

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


def _masked_placeholder(placeholder: str) -> str:
    """`${NAME:-default}` -> `${NAME:-******}`: the variable's name helps, its default may be a password."""
    named = re.match(r"\$\{([A-Za-z_][A-Za-z0-9_]*)([:?+-]*)", placeholder)
    if named is None:
        return "{{" + REDACTED + "}}"
    return "${" + named.group(1) + (named.group(2) + REDACTED if named.group(2) else "") + "}"


def check_placeholders(text: str, where: str, line_offset: int = 0) -> None:
    """An unrendered `${VAR}` template would be read by Milvus literally: refuse it clearly."""
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        code = line.split(" #")[0] if not line.lstrip().startswith("#") else ""
        match = PLACEHOLDER.search(code)
        if match:
            shown = match.group(0)
            if _under_secret_key(lines, number - 1, match.start()):
                shown = _masked_placeholder(shown)
            raise InputError(
                f"unrendered template placeholder {shown}",
                location=f"{where}:{number + line_offset}:{match.start() + 1}",
                hint="render the template first (envsubst, helm template) and pass the result",
            )


def compose(text: str, where: str, line_offset: int = 0) -> tuple:
    """Parse YAML text into node trees; invalid YAML is an InputError at file:line:column.

    One command reads the same file many times (resolve, get, set, switch: a migration step does
    all four) and a milvus.yaml takes ~60 ms to parse, so trees are kept by text; nothing here
    changes a node, and the tuple keeps callers from changing the list."""
    return _compose(text, where, line_offset)


@functools.cache
def _bounded_composer():
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

        def __init__(self, problem: str, mark, hint: str):
            super().__init__(None, None, problem, mark, hint)

    class BoundedComposer(Composer):
        def __init__(self, loader=None):
            super().__init__(loader)
            self.warn_double_anchors = False  # allowed in YAML (the later one counts); the warning quotes lines
            self.measured: dict[int, list[int]] = {}  # id(node) -> [nodes, characters, alias uses, height]
            self.open: list[list[int]] = []  # the same for the children of each node being composed
            self.total = [0, 0, 0]  # nodes, characters, alias uses of the whole stream, written out

        def compose_node(self, parent, index):
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

        def _add(self, measure: list[int], mark, *, parent_only: bool = False) -> None:
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


@functools.lru_cache(maxsize=16)
def _compose(text: str, where: str, line_offset: int) -> tuple:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError
    from ruamel.yaml.reader import ReaderError

    check_placeholders(text, where, line_offset)
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
            f"invalid YAML: {problem}", location=location, hint="fix the syntax at that position"
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


def is_mapping(node) -> bool:
    return type(node).__name__ == "MappingNode"


def is_sequence(node) -> bool:
    return type(node).__name__ == "SequenceNode"


def is_scalar(node) -> bool:
    return type(node).__name__ == "ScalarNode"


def child(node, name: str):
    """(key node, value node) of `name` as written in a mapping node, the last one when repeated
    (merged keys are not written there: edits use this, reads use `lookup`)."""
    found = None
    if is_mapping(node):
        for key_node, value_node in node.value:
            if key_node.value == name and is_scalar(key_node):
                found = (key_node, value_node)
    return found


def _is_merge(key_node) -> bool:
    return key_node.value == MERGE_KEY and is_scalar(key_node) and key_node.style is None


def _merged_mappings(value_node) -> list:
    """What `<<:` merges: one mapping, or the mappings of a list, in priority order."""
    if is_mapping(value_node):
        return [value_node]
    return [item for item in value_node.value if is_mapping(item)] if is_sequence(value_node) else []


def members(node) -> list[tuple]:
    """(key node, value node) pairs of a mapping as Milvus's YAML parser sees them: merge keys
    (`<<: *base`, `<<: [*a, *b]`) resolved the YAML way, a key written in the mapping winning over a
    merged one and an earlier merged mapping over a later one. Merged pairs come first, so that
    "later wins" readers keep the written ones."""
    if not is_mapping(node):
        return []
    if not any(_is_merge(k) for k, _ in node.value):
        return node.value
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


def member(node, name: str):
    """(key node, value node) of `name` in a mapping as read (merge keys resolved), the last when repeated."""
    found = child(node, name)
    if found is None and is_mapping(node) and any(_is_merge(k) for k, _ in node.value):
        found = next((pair for pair in members(node) if is_scalar(pair[0]) and pair[0].value == name), None)
    return found


def lookup(node, parts: list[str]):
    """(key node, value node) at a dotted path as read (merge keys resolved), or None."""
    pair = None
    for part in parts:
        pair = member(node, part)
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


def flatten(
    node, file: str, *, prefix: str = "", line_offset: int = 0, source: str = "yaml", detail_prefix: str = ""
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


# ---------------------------------------------------------------------------- kinds


def _root_keys(node) -> set[str]:
    return {k.value for k, _ in members(node) if is_scalar(k)}


def _field_text(node, name: str) -> str | None:
    pair = lookup(node, [name])
    return scalar_text(pair[1]) if pair is not None and is_scalar(pair[1]) else None


def _is_operator_cr(node) -> bool:
    api, kind = _field_text(node, "apiVersion"), _field_text(node, "kind")
    return bool(api and api.startswith("milvus.io/") and kind in ("Milvus", "MilvusCluster"))


def _configmap_keys(node) -> list[str]:
    """The names under a ConfigMap's `data`."""
    data = lookup(node, ["data"])
    return [str(k.value) for k, _ in members(data[1]) if is_scalar(k)] if data else []


def _is_configmap(node) -> bool:
    """A ConfigMap carrying a file Milvus reads (the ones the chart and the operator render)."""
    return _field_text(node, "kind") == "ConfigMap" and bool(set(_configmap_keys(node)) & set(CONFIGMAP_FILES))


def _refuse_kubernetes_object(node, path: Path) -> None:
    """Any other Kubernetes object is not a config: read as a milvus.yaml, an edit would add `mq:` to it."""
    kind = _field_text(node, "kind")
    if not (_field_text(node, "apiVersion") and kind):
        return
    where = f"{path}:{lookup(node, ['kind'])[0].start_mark.line + 1}"
    if kind == "ConfigMap":
        keys = _configmap_keys(node)
        raise InputError(
            f"is a Kubernetes ConfigMap, not a Milvus config: its data holds no "
            f"{', '.join(CONFIGMAP_FILES)} (keys: {', '.join(keys[:8]) or 'none'})",
            location=where,
            hint="save the Milvus config it carries into a file and pass that file",
        )
    raise InputError(
        f"is a Kubernetes {kind}, not a Milvus config: mqctl reads milvus.yaml/user.yaml, Milvus "
        "Operator CRs (milvus.io Milvus/MilvusCluster), Helm values and ConfigMaps holding "
        f"{', '.join(CONFIGMAP_FILES)}",
        location=where,
        hint="pass the Milvus config this object mounts or is rendered from",
    )


def _is_helm_values(node) -> bool:
    keys = _root_keys(node)
    if keys & set(HELM_MARKERS):
        return True
    for name in ("pulsar", "kafka", "minio", "etcd"):
        if lookup(node, [name, "enabled"]) is not None:
            return True
    return lookup(node, ["image", "all"]) is not None


def _not_a_mapping(path: Path) -> InputError:
    return InputError(
        "expected a mapping of settings at the top level",
        location=f"{path}:1",
        hint="a milvus.yaml, user.yaml, Operator CR or Helm values file starts with `key: value` lines",
    )


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
        raise _not_a_mapping(path)
    root = mappings[0]
    _refuse_kubernetes_object(root, path)
    if "services" in _root_keys(root) and not _root_keys(root) & {
        "mq",
        "etcd",
        "minio",
        "rocksmq",
        "pulsar",
        "natsmq",
        "common",
        "proxy",
    }:
        raise InputError(
            "not a Milvus configuration: this looks like a docker-compose file",
            location=f"{path}:{root.start_mark.line + 1}",
            hint="pass the milvus.yaml mounted into the container, or force with --kind milvus-yaml",
        )
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
            raise InputError(
                "no Milvus or MilvusCluster resource (apiVersion milvus.io/...) in the file",
                location=str(path),
                hint="check --kind",
            )
        if main is None and roots:
            raise _not_a_mapping(path)
        if forced == CONFIGMAP and not set(_configmap_keys(main)) & set(CONFIGMAP_FILES):
            raise InputError(
                f"--kind configmap, but `data` holds no {', '.join(CONFIGMAP_FILES)}",
                location=str(path),
                hint="check --kind",
            )
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
