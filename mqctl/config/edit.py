"""get/set/unset/switch on milvus.yaml, user.yaml, Operator CRs and Helm values.

Every edit is a minimal text splice (see splice.py): what it does not touch stays
byte-identical. Writes are atomic (temp file in the same folder, fsync, rename, mode kept)
after a timestamped backup next to the file.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import difflib
import os
import re
import shlex
import shutil
import socket
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from mqctl.backends import BACKENDS, EMBEDDED, NAMES, valid_mq_types
from mqctl.config import wal
from mqctl.config.documents import (
    BOM,
    CONFIGMAP,
    HELM_VALUES,
    OPERATOR_CR,
    Document,
    compose,
    embedded_yaml,
    is_mapping,
    is_scalar,
    is_sequence,
    load_document,
    lookup,
    scalar_text,
)
from mqctl.config.schema import (
    CLUSTER,
    STANDALONE,
    coerce_value,
    format_version,
    nearest,
    spec_for,
)
from mqctl.config.splice import Splice, embedded_region, set_splice, unset_splice
from mqctl.errors import InputError, MqctlError, PreconditionError
from mqctl.files import edit_lock, keep_owner, replace_atomically, write_error
from mqctl.secrets import REDACTED, is_secret_key, mask_url_passwords

KEY_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_/-]*$")
CR_TOP = ("apiVersion", "kind", "metadata", "spec", "status")
HELM_USER_YAML = "extraConfigFiles.user.yaml"
USER_YAML_PATH = ("extraConfigFiles", "user.yaml")
HELM_MILVUS_SECTIONS = ("mq", "natsmq", "rocksmq")  # Milvus keys that live in user.yaml, not in chart values
DOCUMENT_CHOICES = {
    "spec.dependencies.msgStreamType": ("pulsar", "kafka", "woodpecker", "rocksmq", "natsmq", "custom", ""),
    "standalone.messageQueue": ("rocksmq", "natsmq", "pulsar", "kafka", "woodpecker"),
}


@dataclass
class EditResult:
    path: Path
    diff: str
    changed: bool
    backup: Path | None = None


@dataclass
class EditOutcome:
    """What `config set/unset/switch` print: the plan's diff and what was done with it."""

    path: str
    changed: bool
    written: bool
    dry_run: bool
    backup: str | None
    diff: str
    notes: list[str]
    warnings: list[str] = field(default_factory=list)
    reconcile: str | None = None


@dataclass
class EditPlan:
    """An edit worked out in memory: show `diff`, then `commit()` to write it."""

    document: Document
    new_text: str
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    reconcile: str | None = None  # the command that brings existing streams in line with the edited retention

    @property
    def changed(self) -> bool:
        return self.new_text != self.document.text

    @property
    def diff(self) -> str:
        name = str(self.document.path).lstrip("/")
        lines = unified_diff(self.document.text, self.new_text, f"a/{name}", f"b/{name}")
        text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
        return mask_url_passwords(redact_diff(text))

    def result(self, backup: Path | None = None) -> EditResult:
        return EditResult(self.document.path, self.diff, self.changed, backup)

    def commit(self, backup: Path | None = None) -> EditResult:
        """Write the edit; `backup`: a copy of the file taken (and recorded) before, instead of a new one."""
        if not self.changed:
            return self.result()
        return self.result(
            atomic_write(
                self.document.path, self.new_text, bom=self.document.bom, expected=self.document.text, backup=backup
            )
        )


SECRET_LINE = re.compile(r"^([+ -])(\s*)([^\s:#][^:]*):(\s+)(\S.*?)(\r?\n)?$")


def _secret_spans(node, spans: list[tuple[int, int]]) -> None:
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


def unified_diff(old: str, new: str, old_name: str, new_name: str):
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


def backup_copy(path: Path | str) -> Path:
    """A timestamped copy next to the file (mode, owner and times kept)."""
    target = Path(os.path.realpath(path))
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    backup = target.with_name(f"{target.name}.{stamp}.bak")
    try:
        shutil.copy2(target, backup)
        keep_owner(backup, _owner(target))
    except OSError as err:
        with contextlib.suppress(OSError):
            backup.unlink(missing_ok=True)
        raise write_error(err, path) from None
    return backup


def _owner(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_uid, info.st_gid


def atomic_write(
    path: Path, text: str, *, bom: bool = False, expected: str | None = None, backup: Path | None = None
) -> Path:
    """Under the file's edit lock: check it still holds `expected`, back it up next to itself (unless
    `backup` was taken already), then replace it atomically, keeping its mode and owner. Returns the backup."""
    target = Path(os.path.realpath(path))
    with edit_lock(target):
        if expected is not None:
            current = target.read_bytes().decode("utf-8")
            if current.lstrip(BOM) != expected:
                raise PreconditionError(
                    f"{path} changed while the edit was prepared; nothing was written", hint="run the command again"
                )
        backup = backup or backup_copy(target)
        info = target.stat()
        try:
            replace_atomically(
                target,
                ((BOM if bom else "") + text).encode("utf-8"),
                mode=stat.S_IMODE(info.st_mode),
                owner=(info.st_uid, info.st_gid),
            )
        except OSError as err:
            raise write_error(err, path) from None
    return backup


# ---------------------------------------------------------------------------- addressing


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
        if key.split(".")[0] in HELM_MILVUS_SECTIONS:
            return Address(key.split("."), key, embedded=True)
        return Address(key.split("."), None)
    return Address(key.split("."), key)


def _typed(addr: Address, key: str, value: str) -> tuple[str, bool]:
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


# ---------------------------------------------------------------------------- verification

SECTION = ("section",)


def _shape(node) -> tuple:
    """A comparable picture of a value: scalars with their quoting, collections with their content."""
    if is_mapping(node):
        return ("map", tuple((_shape(k), _shape(v)) for k, v in node.value))
    if is_sequence(node):
        return ("seq", tuple(_shape(item) for item in node.value))
    return ("scalar", node.value, node.style or "")


def _walk(node, path: tuple, picture: dict, doc: Document) -> None:
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


def picture(doc: Document, text: str) -> dict[tuple, tuple]:
    """Every value of a document text by its path (document index first), as Milvus and Kubernetes read it."""
    found: dict[tuple, tuple] = {}
    for index, root in enumerate(compose(text, str(doc.path))):
        _walk(root, (index,), found, doc)
    return found


@dataclass
class Change:
    """One key an edit means to change: `value` is the YAML value text it must read back as, None for removal."""

    key: str
    path: tuple
    value: str | None


def _doc_path(doc: Document, addr: Address) -> tuple:
    index = next((i for i, r in enumerate(doc.roots) if r is doc.main), 0)
    return (index, *(USER_YAML_PATH if addr.embedded else ()), *addr.parts)


def _dotted(path: tuple) -> str:
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
    expected = picture(doc, doc.text)
    intended: dict[tuple, str | None] = {}
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


def _verified(doc: Document, new_text: str, changes: list[Change], notes: list[str] | None = None) -> EditPlan:
    verify_edit(doc, new_text, changes)  # also when the text stays: "already set" and "not set" are claims too
    return EditPlan(doc, new_text, notes or [])


# ---------------------------------------------------------------------------- operations on text


def _splice_text(doc: Document, text: str, addr: Address, make) -> str:
    """Apply `make(text, root) -> Splice|None` to the document or to Helm's embedded user.yaml."""
    roots = compose(text, str(doc.path))
    main = _main_root(doc, roots)
    if not addr.embedded:
        splice = make(text, main)
        return splice.apply(text) if splice else text
    pair = lookup(main, list(USER_YAML_PATH))
    if pair is None:
        splice = _create_user_yaml(doc, text, main, make)
        return splice.apply(text) if splice else text
    if is_mapping(pair[1]):  # the chart renders a mapping with toYaml: it is user.yaml's content, edited in place
        splice = make(text, pair[1])
        return splice.apply(text) if splice else text
    region = embedded_region(text, pair[1], f"{doc.path} ({HELM_USER_YAML})")
    inner_root = region.roots[0] if region.roots else None
    splice = make(region.text, inner_root)
    return region.lift(splice).apply(text) if splice else text


def _create_user_yaml(doc: Document, text: str, main, make) -> Splice | None:
    """Add `extraConfigFiles: user.yaml: |` holding the keys `make` writes into an empty file."""
    inner = make("", None)
    if inner is None:
        return None
    marker = "MQCTL_USER_YAML"
    splice = set_splice(text, main, ["extraConfigFiles", "user.yaml"], marker, doc.newline)
    before, _, after = splice.text.partition(marker)
    key_line = before.rsplit("\n", 1)[-1]
    pad = " " * (len(key_line) - len(key_line.lstrip(" ")) + 2)
    body = "".join(pad + line if line.strip() else line for line in inner.text.splitlines(keepends=True))
    if not after:  # inserted at the end of a file without a final newline
        body = body.rstrip("\r\n")
    return Splice(splice.start, splice.end, before + "|" + doc.newline + body)


def _main_root(doc: Document, roots: list):
    """The node of the re-parsed text that corresponds to doc.main."""
    if doc.main is None:
        return None
    index = next(i for i, r in enumerate(doc.roots) if r is doc.main)
    return roots[index]


def plan_set(path: Path | str, key: str, value: str, *, kind: str | None = None, force: bool = False) -> EditPlan:
    """Set one key; refuses (exit 2) a key Milvus does not have and a value `config validate` would flag as an
    error (its rule code in the message) unless `force`."""
    doc = load_document(path, kind)
    addr = address(doc, key)
    typed, string = _typed(addr, key, value)
    new = _splice_text(
        doc,
        doc.text,
        addr,
        lambda text, root: set_splice(text, root, addr.parts, typed, doc.newline, string=string, label=key),
    )
    if addr.milvus_key and _written(doc, addr)[0] is None:
        _check_known(addr.milvus_key)  # as `config get` does: a key Milvus lacks is a typo
    plan = _verified(doc, new, [Change(key, _doc_path(doc, addr), typed)])
    return _checked(plan, [addr.milvus_key] if addr.milvus_key else [], force=force)


def plan_unset(path: Path | str, key: str, *, kind: str | None = None) -> EditPlan:
    doc = load_document(path, kind)
    addr = address(doc, key)
    new = _splice_text(
        doc,
        doc.text,
        addr,
        lambda text, root: unset_splice(text, root, addr.parts, label=key) if root is not None else None,
    )
    plan = _verified(doc, new, [Change(key, _doc_path(doc, addr), None)])
    if not plan.changed:
        plan.notes.append(f"{key} is not set in {doc.path}: nothing to remove")
    return _checked(plan, [addr.milvus_key] if addr.milvus_key else [], force=True)


NATS_RETENTION_KEYS = (
    "natsmq.server.retention.maxAge",
    "natsmq.server.retention.maxBytes",
    "natsmq.server.retention.maxMsgs",
)


def _resolve_text(doc: Document, text: str, **options):
    """The resolution of a document text (a planned edit) as if it were the file."""
    from mqctl.config.resolve import resolve

    with tempfile.TemporaryDirectory(prefix="mqctl-edit-") as folder:
        copy = Path(folder) / doc.path.name
        copy.write_text(text, encoding="utf-8")
        return resolve([copy], kind=doc.kind, **options)


def _checked(plan: EditPlan, keys: list[str], *, force: bool, **options) -> EditPlan:
    """Refuse an edit that makes `config validate` report a new error on an edited key (exit 2, with the
    rule's code; `force` skips this); note when natsmq retention changes and streams exist to reconcile."""
    from mqctl.config.resolve import resolve
    from mqctl.config.rules import validate
    from mqctl.config.schema import normalize_key
    from mqctl.findings import ERROR

    if not plan.changed or not keys:
        return plan
    doc = plan.document
    try:
        before = resolve([doc.path], kind=doc.kind, **options)
    except MqctlError:
        before = None
    after = _resolve_text(doc, plan.new_text, **options)
    if not force:
        edited = {normalize_key(key) for key in keys}
        old = {(f.code, f.key) for f in validate(before)} if before else set()
        for finding in validate(after):
            if (
                finding.severity == ERROR
                and finding.key
                and normalize_key(finding.key) in edited
                and (finding.code, finding.key) not in old
            ):
                raise InputError(
                    f"{finding.code}: {finding.message}",
                    location=str(doc.path),
                    hint=(finding.hint + "; " if finding.hint else "") + "--force writes it anyway",
                )
    retention_changed = any(before is None or before.value(key) != after.value(key) for key in NATS_RETENTION_KEYS)
    if any(key.startswith("natsmq.server.retention.") for key in keys) and retention_changed:
        _note_streams(plan, after)
    return plan


def _note_streams(plan: EditPlan, resolution) -> None:
    """Milvus never updates an existing stream, and its AddStream with other limits fails (JetStream 10058): when
    this host has the store (or a NATS server answers on the port), say which command reconciles the streams."""
    store = resolution.value("natsmq.server.storeDir") or ""
    port = resolution.value("natsmq.server.port") or ""
    config = shlex.quote(str(plan.document.path))
    if store and (Path(store) / "jetstream").is_dir():
        command = f"mqctl retention apply --config {config} --nats-store {shlex.quote(store)}"
        where = f"the JetStream streams in {store}"
    elif port.isdigit() and _nats_answers(int(port)):
        command = f"mqctl retention apply --config {config} --nats nats://127.0.0.1:{port}"
        where = f"the JetStream streams of the NATS server on 127.0.0.1:{port}"
    else:
        return
    plan.reconcile = command
    plan.warnings.append(
        f"natsmq retention changed: {where} keep their old limits, and Milvus does not start "
        f'(JetStream 10058 "stream name already in use") until they match; once the file is '
        f"written, stop Milvus and run: {command}"
    )


def _nats_answers(port: int) -> bool:
    """Whether a NATS server greets on 127.0.0.1:port (its first line is `INFO {...}`)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
            conn.settimeout(0.5)
            return conn.recv(5) == b"INFO "
    except OSError:
        return False


def _written(doc: Document, addr: Address) -> tuple[tuple | None, int]:
    """(key node, value node) of an address as the document writes it (None when absent), and what to add to
    its line for the outer file (Helm's user.yaml string: a read needs no block text, a quoted one reads too)."""
    root, line_offset = doc.main, 0
    if addr.embedded:
        embedded = embedded_yaml(doc, list(USER_YAML_PATH))
        root = embedded.roots[0] if embedded and embedded.roots else None
        line_offset = embedded.line_offset if embedded else 0
    return (lookup(root, addr.parts) if root is not None else None), line_offset


def set_key(path: Path | str, key: str, value: str, *, dry_run: bool = False, kind: str | None = None) -> EditResult:
    plan = plan_set(path, key, value, kind=kind)
    return plan.result() if dry_run else plan.commit()


def unset_key(path: Path | str, key: str, *, dry_run: bool = False, kind: str | None = None) -> EditResult:
    plan = plan_unset(path, key, kind=kind)
    return plan.result() if dry_run else plan.commit()


def get_key(path: Path | str, key: str, *, kind: str | None = None):
    """(value, line) of a key written in the document; (None, None) when absent."""
    doc = load_document(path, kind)
    addr = address(doc, key)
    pair, line_offset = _written(doc, addr)
    if pair is None:
        return None, None
    if is_mapping(pair[1]):
        raise InputError(
            f"{key} is a section (it has keys under it), not a value",
            hint=f"ask for one of its keys, e.g. {key}.<name>",
        )
    return scalar_text(pair[1]), pair[0].start_mark.line + 1 + line_offset


# ---------------------------------------------------------------------------- switch


def check_backend_name(to: str) -> None:
    """A misspelled MQ name is bad input (exit 2), before any version or mode check."""
    if to not in NAMES:
        guess = nearest(to, NAMES)
        raise InputError(
            f"unknown MQ {to!r}", hint=f"did you mean {guess!r}?" if guess else f"use one of {', '.join(NAMES)}"
        )


def check_target(to: str, mode: str, version) -> None:
    """Refuse a target Milvus would not start with (exit 3, with the reason)."""
    check_backend_name(to)
    if version is not None and to not in valid_mq_types(version):
        reason = (
            "natsmq was removed in Milvus 2.6 (milvus #41564): move to rocksmq, pulsar, kafka or woodpecker"
            if to == "natsmq"
            else f"{to} needs Milvus 2.6 or later"
        )
        raise PreconditionError(f"cannot switch to {to} on Milvus {format_version(version)}: {reason}")
    if mode == CLUSTER and to in ("rocksmq", "natsmq"):
        raise PreconditionError(
            f"cannot switch to {to} in cluster mode: Milvus panics with "
            f"`mq %!s(MISSING) is only valid in standalone mode`",
            hint="use pulsar, kafka or (2.6+) woodpecker for a cluster",
        )


def plan_switch(
    path: Path | str,
    to: str,
    *,
    store_dir: str | None = None,
    port: int | None = None,
    mode: str | None = None,
    milvus_version: str | None = None,
    kind: str | None = None,
) -> EditPlan:
    from mqctl.config.resolve import resolve

    resolution = resolve([path], kind=kind, mode=mode, milvus_version=milvus_version)
    check_target(to, resolution.mode, resolution.version)
    wal.refuse_file_switch(resolution.version, to)  # 2.6+: only the online WAL switch changes the MQ
    doc = load_document(path, kind)
    if doc.kind == CONFIGMAP:
        address(doc, "mq.type")  # raises the ConfigMap error
    edits: list[tuple[str, str]] = []
    if doc.kind == OPERATOR_CR:
        edits.append(("spec.dependencies.msgStreamType", to))
        if resolution.yaml_setting("mq.type") and resolution.yaml_setting("mq.type").source == "yaml":
            edits.append(("mq.type", to))  # spec.config.mq.type would contradict msgStreamType
    elif doc.kind == HELM_VALUES:
        if resolution.mode == STANDALONE:
            edits.append(("standalone.messageQueue", to))
        edits += _helm_deploy_toggles(doc, to)
        user_type = get_key(path, f"{HELM_USER_YAML}.mq.type", kind=kind)[0]
        if user_type is not None and user_type != to:
            edits.append((f"{HELM_USER_YAML}.mq.type", to))
    else:
        edits.append(("mq.type", to))
    backend = BACKENDS[to]
    wanted = dict(backend.switch_settings)
    if store_dir is not None:
        if backend.store_key is None:
            raise InputError(f"--store-dir applies to {' and '.join(EMBEDDED)}, not {to}")
        wanted[backend.store_key] = store_dir
    if port is not None:
        if backend.port_key is None:
            raise InputError(f"--port applies to natsmq and pulsar, not {to}")
        wanted[backend.port_key] = str(port)
    explicit = {backend.store_key: store_dir, backend.port_key: port}
    # the operator and the chart write the settings of the Pulsar/Kafka/Woodpecker they deploy themselves
    fill_settings = doc.kind not in (OPERATOR_CR, HELM_VALUES) or backend.embedded
    for key, value in wanted.items() if fill_settings else ():
        written = resolution.yaml_setting(key)
        if explicit.get(key) is not None or written is None or not written.value:  # absent, empty or null
            edits.append((key, value))
    text, changes, milvus_keys = doc.text, [], []
    for key, value in edits:
        addr = address(doc, key)
        typed, string = _typed(addr, key, value)
        text = _splice_text(
            doc,
            text,
            addr,
            lambda t, root, a=addr, v=typed, s=string, k=key: set_splice(
                t, root, a.parts, v, doc.newline, string=s, label=k
            ),
        )
        changes.append(Change(key, _doc_path(doc, addr), typed))
        milvus_keys += [addr.milvus_key] if addr.milvus_key else []
    plan = _verified(doc, text, changes, [f"switch sets {key} = {value}" for key, value in edits])
    return _checked(plan, milvus_keys, force=False, mode=mode, milvus_version=milvus_version)


def _helm_deploy_toggles(doc: Document, to: str) -> list[tuple[str, str]]:
    """The chart deploys the Pulsar/Kafka/Woodpecker whose `*.enabled` is true: turn the target on and the others
    off (in a cluster this is the switch itself; in standalone messageQueue picks and the toggle deploys)."""
    edits = []
    pulsar_keys = [k for k in ("pulsarv3.enabled", "pulsar.enabled") if lookup(doc.main, k.split("."))]
    targets = {
        "pulsar": pulsar_keys[:1] or ["pulsarv3.enabled"],
        "kafka": ["kafka.enabled"],
        "woodpecker": ["woodpecker.enabled"],
    }.get(to, [])  # rocksmq/natsmq run inside Milvus
    for key in ("pulsarv3.enabled", "pulsar.enabled", "kafka.enabled", "woodpecker.enabled"):
        if key in targets:
            edits.append((key, "true"))
        elif lookup(doc.main, key.split(".")) is not None:
            edits.append((key, "false"))
    return edits


def switch(
    path: Path | str,
    to: str,
    *,
    store_dir: str | None = None,
    port: int | None = None,
    mode: str | None = None,
    milvus_version: str | None = None,
    dry_run: bool = False,
    kind: str | None = None,
) -> EditResult:
    plan = plan_switch(path, to, store_dir=store_dir, port=port, mode=mode, milvus_version=milvus_version, kind=kind)
    return plan.result() if dry_run else plan.commit()


@dataclass
class KeyValue:
    """A key's effective value and where it comes from (what `config get` prints)."""

    key: str
    value: str | None
    source: str  # yaml, operator, helm, env, etcd, default, absent
    file: str | None
    line: int | None
    detail: str = ""


def _check_known(key: str) -> None:
    """A key under mq/natsmq/rocksmq that Milvus does not have is a typo, not an unset value."""
    from mqctl.config.schema import CHECKED_SECTIONS, known_children, section_keys

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
    etcd=None,
    role: str | None = None,
) -> KeyValue:
    """A Milvus key's effective value (overrides and defaults included) or a document path's value."""
    from mqctl.config.resolve import resolve

    doc = load_document(path, kind)
    addr = address(doc, key)
    value, line = get_key(path, key, kind=kind)  # refuses a section, whose "value" would read as unset
    if line is None and addr.milvus_key:
        _check_known(addr.milvus_key)
    if addr.milvus_key and not (doc.kind == OPERATOR_CR and addr.parts[:2] != ["spec", "config"]):
        origin = resolve(
            [path], kind=kind, mode=mode, milvus_version=milvus_version, env=env, etcd=etcd, role=role
        ).origin(addr.milvus_key)
        return KeyValue(key, origin.value, origin.source, origin.file, origin.line, origin.detail)
    if line is None:
        return KeyValue(key, None, "absent", str(doc.path), None, "not in the document")
    return KeyValue(key, value, "yaml", str(doc.path), line, key)
