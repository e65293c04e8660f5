"""set/unset on milvus.yaml, user.yaml, Operator CRs and Helm values; the entry points of every edit.

Every edit is a minimal text splice (see splice.py): what it does not touch stays
byte-identical. Writes are atomic (temp file in the same folder, fsync, rename, mode kept)
after a timestamped backup next to the file (mqctl.files). The jobs live beside this module:
addressing (where a key lives), plan (EditPlan, verify, rule check), diff (redacted diff),
switch (`config switch`), read (`config get`); their entry points are re-exported here, where
callers (migrate, the CLI) import them from.
"""

from __future__ import annotations

from pathlib import Path

from mqctl.config.edit.plan import EditOutcome, EditPlan, EditResult, checked, splice_text, verified
from mqctl.config.edit.splice import set_splice, unset_splice
from mqctl.config.edit.switch import check_backend_name, check_target, plan_switch, switch
from mqctl.config.edit.verify import Change, doc_path
from mqctl.config.read.addressing import address, typed_value, written
from mqctl.config.read.documents import load_document
from mqctl.config.resolve.lookup import KeyValue, check_known, get_key, read_key

__all__ = [
    "EditOutcome",
    "EditPlan",
    "EditResult",
    "KeyValue",
    "check_backend_name",
    "check_target",
    "get_key",
    "plan_set",
    "plan_switch",
    "plan_unset",
    "read_key",
    "set_key",
    "switch",
    "unset_key",
]


def plan_set(path: Path | str, key: str, value: str, *, kind: str | None = None, force: bool = False) -> EditPlan:
    """Set one key; refuses (exit 2) a key Milvus does not have and a value `config validate` would flag as an
    error (its rule code in the message) unless `force`."""
    doc = load_document(path, kind)
    addr = address(doc, key)
    typed, string = typed_value(addr, key, value)
    new = splice_text(
        doc,
        doc.text,
        addr,
        lambda text, root: set_splice(text, root, addr.parts, typed, doc.newline, string=string, label=key),
    )
    if addr.milvus_key and written(doc, addr)[0] is None:
        check_known(addr.milvus_key)  # as `config get` does: a key Milvus lacks is a typo
    plan = verified(doc, new, [Change(key, doc_path(doc, addr), typed)])
    return checked(plan, [addr.milvus_key] if addr.milvus_key else [], force=force)


def plan_unset(path: Path | str, key: str, *, kind: str | None = None) -> EditPlan:
    doc = load_document(path, kind)
    addr = address(doc, key)
    new = splice_text(
        doc,
        doc.text,
        addr,
        lambda text, root: unset_splice(text, root, addr.parts, label=key) if root is not None else None,
    )
    plan = verified(doc, new, [Change(key, doc_path(doc, addr), None)])
    if not plan.changed:
        plan.notes.append(f"{key} is not set in {doc.path}: nothing to remove")
    return checked(plan, [addr.milvus_key] if addr.milvus_key else [], force=True)


def set_key(path: Path | str, key: str, value: str, *, dry_run: bool = False, kind: str | None = None) -> EditResult:
    plan = plan_set(path, key, value, kind=kind)
    return plan.result() if dry_run else plan.commit()


def unset_key(path: Path | str, key: str, *, dry_run: bool = False, kind: str | None = None) -> EditResult:
    plan = plan_unset(path, key, kind=kind)
    return plan.result() if dry_run else plan.commit()
