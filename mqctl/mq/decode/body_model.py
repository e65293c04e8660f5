"""The shapes bodies.py reads Milvus 2.6 message headers and bodies into (BodyFacts, Parts, Layout), the
declared messages of the data table body_fields.py, and the checks that a header or body is the message it
claims to be (`declared`, `pymilvus_message`: Undecodable otherwise), with the one-line text helpers."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mqctl.milvus.protos import pb2
from mqctl.mq.declared_protos import declare, misread_fields, parse, unknown_field_numbers
from mqctl.mq.decode.body_fields import FIELDS

messagespb = declare("mqctl.milvus_message_bodies", FIELDS)

LIST_PREVIEW = 5


@dataclass
class BodyFacts:
    """What a header and body say, in the columns of a decoded message; `detail` is the rest, one line."""

    collection: str | None = None
    collection_id: int | None = None
    partition_id: int | None = None
    segment_id: int | None = None
    detail: str | None = None


class Undecodable(Exception):
    """A header or body is not the declared message; the text says which and why."""


@dataclass
class Parts:
    """The parsed header and body of one message (None where the type has none declared, or `_h` is absent)."""

    type_name: str
    header: Any
    body: Any


@dataclass(frozen=True)
class Layout:
    header: str | None  # declared class of `_h`
    body: str | None  # declared class of the payload; "msgpb.X" for a pymilvus class
    facts: Callable[[Parts], BodyFacts]


def declared(what: str, class_name: str, raw: bytes) -> Any:
    return checked(what, class_name, parse(messagespb(class_name), raw), raw, " (messages.proto)")


def pymilvus_message(what: str, module: str, class_name: str, raw: bytes) -> Any:
    """A pymilvus message: an Import body, or a field kept as bytes."""
    return checked(what, class_name, parse(getattr(pb2(module), class_name), raw), raw, "")


def checked(what: str, class_name: str, message: Any, raw: bytes, source: str) -> Any:
    """`message` when the bytes were that message; Undecodable when they did not parse, held a known field with
    another wire type, or held fields and none of them known (protobuf skips unknown fields silently)."""
    if message is None:
        raise Undecodable(f"{what} does not parse as {class_name}{source}")
    misread = misread_fields(message)
    if misread:
        raise Undecodable(f"{what} is not a {class_name}: {', '.join(misread)} has another wire type")
    if raw and not message.ListFields() and unknown_field_numbers(message):
        numbers = ", ".join(str(n) for n in unknown_field_numbers(message))
        if not message.DESCRIPTOR.fields:
            raise Undecodable(f"{what} holds field(s) {numbers}, but {class_name} has none{source}")
        raise Undecodable(f"{what} holds none of the fields of {class_name}{source}, only field(s) {numbers}")
    return message


def ids_text(values: Iterable[int | str]) -> str:
    items = list(values)
    shown = ", ".join(str(v) for v in items[:LIST_PREVIEW])
    return shown + (f" … (+{len(items) - LIST_PREVIEW})" if len(items) > LIST_PREVIEW else "")


def pairs_text(entries: Iterable[Any]) -> str:
    """`key=value, ...`; the value of a key that names a secret (password, token...) masked, any URL password too."""
    from mqctl.secrets import REDACTED, is_secret_key, mask_url_passwords

    return ", ".join(f"{e.key}={REDACTED if is_secret_key(e.key) else mask_url_passwords(e.value)}" for e in entries)


def joined(*parts: str | None) -> str | None:
    """The non-empty parts joined with "; ", None when there are none."""
    text = "; ".join(p for p in parts if p)
    return text or None


def tso_text(ts: int) -> str:
    from mqctl.mq.decode.envelope import tso_time

    when = tso_time(ts)
    return f"{when.isoformat().replace('+00:00', 'Z')} (TSO {ts})" if when else f"TSO {ts}"


def or_none(value: int) -> int | None:
    return value or None
