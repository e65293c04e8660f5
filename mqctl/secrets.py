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


# `user:password@host` in a URL (the password runs to the last `@` before the host, as `safe_url` reads
# it) or in a broker list without a scheme (pulsar.address, kafka.brokerList, etcd endpoints...)
# (a scheme is at most 32 characters, so a long word is not rescanned from each of its letters)
URL_PASSWORD = re.compile(
    r"(?P<user>[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s:/@'\"]*:)(?P<password>[^\s'\",]+)(?=@[^\s@'\",]+)"
    r"|(?P<user2>(?<![^\s'\"(\[,=])[^\s:/@'\"]+:)(?P<password2>[^\s/@'\",]+)(?=@[^\s@]+)"
)


def mask_url_passwords(text: str) -> str:
    """Any text fit to print: the password of every `user:password@` becomes ******."""
    if "@" not in text:
        return text

    def masked(match: re.Match[str]) -> str:
        user = match["user"] or match["user2"]
        return str(match[0]) if (match["password"] or match["password2"]) == REDACTED else str(user) + REDACTED

    return URL_PASSWORD.sub(masked, text)
