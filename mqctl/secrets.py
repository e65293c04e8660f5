"""Which keys hold secrets, and masking them in values and free text; stdlib only, so the domain can use it."""

from __future__ import annotations

import re
from typing import Any

SECRET_MARKERS = ("password", "token", "secret", "sasl", "authparams", "credential", "accesskey", "privatekey")
REDACTED = "******"


def is_secret_key(key: str) -> bool:
    """True for keys whose values must never be printed (passwords, tokens, sasl, authParams...)."""
    flat = key.lower().replace("_", "").replace("-", "").replace(".", "")
    return any(marker in flat for marker in SECRET_MARKERS)


def redact(value: Any, key: str = "") -> Any:
    """Replace secret values anywhere inside a nested structure."""
    if key and is_secret_key(key) and value not in (None, "", [], {}):
        return REDACTED
    if isinstance(value, dict):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    return value


# a scheme is at most 32 characters, so a long word is not rescanned from each of its letters
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,31}://")
_SEGMENT = re.compile(r"[^\s'\"]+")  # URLs end at white space and quotes
_USER_START = "([=,;"  # what may stand right before a user in free text: `etcd=u:p@h`, `(u:p@h`


def mask_url_passwords(text: str) -> str:
    """Any text fit to print: the password of every `user:password@` becomes ******.

    The password runs from the first `:` of the userinfo to the LAST `@` before the host, so one holding `@`,
    `:`, `/` or `%` is masked whole (`http://u:pa@ss@h`, `u:p/w@h`); it ends at white space or a quote. In a
    broker list without schemes (`u:p@h1,u2:q@h2`) each entry is masked apart; an entry that cannot stand alone
    (`u:pa,ss@h`: `ss@h` has no password) is read as part of the one before it. Masking too much (a host after
    an `@` in a path) is preferred to showing any part of a password."""
    if "@" not in text:
        return text
    return _SEGMENT.sub(lambda m: _mask_segment(m[0]) if "@" in m[0] else m[0], text)


def _mask_segment(segment: str) -> str:
    starts = [m.start() for m in _SCHEME.finditer(segment)]
    if not starts:
        return _mask_list(segment)
    pieces = [segment[: starts[0]]] if starts[0] else []
    pieces += [segment[a:b] for a, b in zip(starts, [*starts[1:], len(segment)], strict=True)]
    out = []
    for piece in pieces:
        scheme = _SCHEME.match(piece)
        if scheme is None:
            out.append(_mask_list(piece))
            continue
        out.append(scheme[0] + _mask_userinfo(piece[scheme.end() :]))
    return "".join(out)


def _mask_list(text: str) -> str:
    """A scheme-less `user:password@host` or a comma-separated list of them, inside free text."""
    items: list[str] = []
    for item in text.split(","):
        standalone = "@" in item and ":" in _user_part(item.rpartition("@")[0])
        if items and not standalone and "@" in item and ":" in items[-1] and "@" not in items[-1]:
            items[-1] += "," + item  # `u:pa,ss@h`: a comma inside the password
        else:
            items.append(item)
    return ",".join(_mask_userinfo(item, free=True) for item in items)


def _user_part(head: str) -> str:
    """The userinfo of free text: what follows the last character that may stand before a user."""
    colon = head.find(":")
    before = head if colon < 0 else head[:colon]
    cut = max(before.rfind(c) for c in _USER_START)
    return head[cut + 1 :]


def _mask_userinfo(rest: str, *, free: bool = False) -> str:
    """`user:password@host...` with the password (up to the last `@`) masked; `free`: the userinfo may follow
    other text (`etcd=`), and a user holding `/` is not one (a path: left alone)."""
    head, at, host = rest.rpartition("@")
    if not at or not host:
        return rest
    userinfo = _user_part(head) if free else head
    prefix = head[: len(head) - len(userinfo)]
    user, colon, password = userinfo.partition(":")
    if not colon or not password or password == REDACTED or (free and "/" in user):
        return rest
    return f"{prefix}{user}:{REDACTED}@{host}"
