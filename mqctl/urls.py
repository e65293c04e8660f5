"""Server URLs: split off user:password@, print them without the password."""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit

from mqctl.errors import InputError
from mqctl.secrets import REDACTED


def split_url(url: str, option: str) -> tuple[SplitResult, str | None, str | None]:
    """A server URL without its user:password@ part, and that user and password.

    Raises InputError (exit 2) naming the option when the URL cannot be parsed, e.g. `http://[::1`.
    """
    try:
        parts = urlsplit(url)
        _ = parts.port  # a non-numeric port only fails here
    except ValueError as err:
        raise InputError(
            f"{option} {safe_url(url)!r} is not a valid URL: {err}",
            hint="write scheme://host:port; an IPv6 host goes in brackets, e.g. [::1]",
        ) from None
    if parts.username is None and parts.password is None:
        return parts, None, None
    host = parts.netloc.rsplit("@", 1)[1]
    return parts._replace(netloc=host), parts.username, parts.password


def _with_password(url: str, password: str | None) -> str:
    """`url` with the password of its user:password@ part replaced, or left out when `password` is None."""
    head, sep, rest = url.partition("://")
    if not sep:
        head, rest = "", url
    userinfo, at, host = rest.rpartition("@")
    if not at or ":" not in userinfo:
        return url
    user = userinfo.split(":", 1)[0]
    return f"{head}{sep}{user}{'' if password is None else ':' + password}@{host}"


def safe_url(url: str) -> str:
    """A URL fit to print: the password of a user:password@ part becomes ******."""
    return _with_password(url, REDACTED) if "://" in url else url


def without_password(url: str) -> str:
    """The URL with the password of its user:password@ part left out (the user stays), fit to store."""
    return _with_password(url, None)
