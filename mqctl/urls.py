"""Server URLs: split off user:password@, check the host and port, print them without the password.

A password may hold `@`, `:`, `/` or `%` unencoded (users paste them so): the userinfo runs to the LAST `@`
of the URL, as `mask_url_passwords` reads free text, so what is split off, stored and masked is the same
everywhere. urllib's own errors are never shown: they quote the piece they could not read, which may be a
piece of the password.
"""

from __future__ import annotations

import re
from urllib.parse import SplitResult, urlsplit

from mqctl.errors import InputError
from mqctl.secrets import REDACTED

URL_FIX = "write scheme://host:port; an IPv6 host goes in brackets, e.g. http://[::1]:2379"
# host[:port] after the userinfo: a bracketed IPv6 address (with an optional %zone) or a name without brackets
_AUTHORITY = re.compile(r"(?:\[[0-9A-Fa-f:.]+(?:%[\w.~-]+)?\]|[^\s\[\]/?#@:]*)(?::(?P<port>[^/?#]*))?")


def _parts(url: str) -> tuple[str, str, str | None, str]:
    """(scheme://, userinfo or '', None when there is no `@`, the rest) of a URL with or without a scheme."""
    head, sep, rest = url.partition("://")
    if not sep or "/" in head or "@" in head:
        head, sep, rest = "", "", url
    userinfo, at, tail = rest.rpartition("@")
    if not at:
        return head + sep, "", None, rest
    return head + sep, userinfo, "@", tail


def _authority_problem(tail: str) -> str | None:
    """Why the host[:port] at the start of `tail` cannot be a server's, or None."""
    authority = re.split(r"[/?#]", tail, maxsplit=1)[0]
    if authority.count("[") != authority.count("]") or authority.count("[") > 1:
        return "its IPv6 host misses a bracket"
    match = _AUTHORITY.fullmatch(authority)
    if match is None:
        if "[" in authority:
            return "an IPv6 host in brackets may only be followed by :PORT"
        return "an IPv6 host goes in brackets"
    port = match["port"]
    if port is not None and port != "" and not (port.isascii() and port.isdigit() and int(port) <= 65535):
        return "its port is not a number from 0 to 65535"
    return None


def split_url(url: str, option: str) -> tuple[SplitResult, str | None, str | None]:
    """A server URL without its user:password@ part, and that user and password (still %-encoded).

    Raises InputError (exit 2) naming the option when the host or port cannot be a server's, e.g. `http://[::1`
    or `http://[::1]x:2379`; the message shows the URL with its password masked and says nothing of the
    password itself."""
    scheme, userinfo, at, tail = _parts(url)
    problem = _authority_problem(tail)
    parts: SplitResult | None = None
    if problem is None:
        try:
            parts = urlsplit(scheme + tail)
            _ = parts.port  # a non-numeric port only fails here
        except ValueError:
            problem = "it cannot be read as a URL"
    if problem is not None or parts is None:
        raise InputError(f"{option} {safe_url(url)!r} is not a valid URL: {problem}", hint=URL_FIX)
    if not at:
        return parts, None, None
    user, colon, password = userinfo.partition(":")
    return parts, user, password if colon else None


def _with_password(url: str, password: str | None) -> str:
    """`url` with the password of its user:password@ part replaced, or left out when `password` is None."""
    scheme, userinfo, at, tail = _parts(url)
    if not at or ":" not in userinfo:
        return url
    user = userinfo.split(":", 1)[0]
    return f"{scheme}{user}{'' if password is None else ':' + password}@{tail}"


def safe_url(url: str) -> str:
    """A URL fit to print: the password of a user:password@ part (up to the last `@`) becomes ******."""
    return _with_password(url, REDACTED)


def without_password(url: str) -> str:
    """The URL with the password of its user:password@ part left out (the user stays), fit to store."""
    return _with_password(url, None)


def check_url(url: str, option: str) -> str:
    """`url` itself once its host and port can be a server's (see `split_url`); exit 2 naming `option` if not."""
    split_url(url, option)
    return url
