"""An edit worked out in memory (EditPlan): spliced, verified, checked against the rules, then written."""

from __future__ import annotations

import shlex
import socket
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mqctl.backends import port_of
from mqctl.config.edit.diff import shown_diff
from mqctl.config.edit.splice import Splice, embedded_region, set_splice
from mqctl.config.edit.verify import Change, verify_edit
from mqctl.config.read.addressing import HELM_USER_YAML, USER_YAML_PATH, Address
from mqctl.config.read.documents import Document
from mqctl.config.read.nodes import Node, is_mapping, lookup
from mqctl.config.read.parse import compose
from mqctl.errors import InputError, MqctlError
from mqctl.files import atomic_write

if TYPE_CHECKING:
    from mqctl.config.resolve.resolution import Resolution


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
        return shown_diff(self.document.text, self.new_text, str(self.document.path))

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


def verified(doc: Document, new_text: str, changes: list[Change], notes: list[str] | None = None) -> EditPlan:
    verify_edit(doc, new_text, changes)  # also when the text stays: "already set" and "not set" are claims too
    return EditPlan(doc, new_text, notes or [])


# ---------------------------------------------------------------------------- operations on text


MakeSplice = Callable[[str, Node], Splice | None]  # (text, root node or None) -> the splice of one edit


def splice_text(doc: Document, text: str, addr: Address, make: MakeSplice) -> str:
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


def _create_user_yaml(doc: Document, text: str, main: Node, make: MakeSplice) -> Splice | None:
    """Add `extraConfigFiles: user.yaml: |` holding the keys `make` writes into an empty file."""
    inner = make("", None)
    if inner is None:
        return None
    marker = "MQCTL_USER_YAML"
    splice = set_splice(text, main, ["extraConfigFiles", "user.yaml"], marker, doc.newline)
    if splice is None:  # the marker is never already there
        return None
    before, _, after = splice.text.partition(marker)
    key_line = before.rsplit("\n", 1)[-1]
    pad = " " * (len(key_line) - len(key_line.lstrip(" ")) + 2)
    body = "".join(pad + line if line.strip() else line for line in inner.text.splitlines(keepends=True))
    if not after:  # inserted at the end of a file without a final newline
        body = body.rstrip("\r\n")
    return Splice(splice.start, splice.end, before + "|" + doc.newline + body)


def _main_root(doc: Document, roots: tuple[Node, ...]) -> Node:
    """The node of the re-parsed text that corresponds to doc.main."""
    if doc.main is None:
        return None
    index = next(i for i, r in enumerate(doc.roots) if r is doc.main)
    return roots[index]


NATS_RETENTION_KEYS = (
    "natsmq.server.retention.maxAge",
    "natsmq.server.retention.maxBytes",
    "natsmq.server.retention.maxMsgs",
)


def _resolve_text(doc: Document, text: str, **options: Any) -> Resolution:
    """The resolution of a document text (a planned edit) as if it were the file."""
    from mqctl.config.resolve.resolution import resolve

    with tempfile.TemporaryDirectory(prefix="mqctl-edit-") as folder:
        copy = Path(folder) / doc.path.name
        copy.write_text(text, encoding="utf-8")
        return resolve([copy], kind=doc.kind, **options)


def checked(plan: EditPlan, keys: list[str], *, force: bool, **options: Any) -> EditPlan:
    """Refuse an edit that makes `config validate` report a new error on an edited key (exit 2, with the
    rule's code; `force` skips this); note when natsmq retention changes and streams exist to reconcile."""
    from mqctl.config.known_keys import normalize_key
    from mqctl.config.resolve.resolution import resolve
    from mqctl.config.rules.report import validate
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


def _note_streams(plan: EditPlan, resolution: Resolution) -> None:
    """Milvus never updates an existing stream, and its AddStream with other limits fails (JetStream 10058): when
    this host has the store (or a NATS server answers on the port), say which command reconciles the streams."""
    store = resolution.value("natsmq.server.storeDir") or ""
    port = port_of("natsmq", resolution.value("natsmq.server.port"))
    config = shlex.quote(str(plan.document.path))
    if store and (Path(store) / "jetstream").is_dir():
        command = f"mqctl retention apply --config {config} --nats-store {shlex.quote(store)}"
        where = f"the JetStream streams in {store}"
    elif port is not None and _nats_answers(port):
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
