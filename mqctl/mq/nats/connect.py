"""What a NATS connection is made of, checked before connecting: the server URL (never printed with its
credentials), the request timeout, credential and TLS files."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlunsplit

from mqctl.errors import InputError, PreconditionError

if TYPE_CHECKING:
    import logging
    import ssl


MAX_TIMEOUT = 3600.0  # seconds per request; more is a typo (or inf), and a wait that long is a hang


def check_timeout(timeout: float, option: str = "--timeout") -> float:
    """A request timeout in seconds: finite, positive and at most an hour (exit 2 otherwise)."""
    if not (math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT):
        raise InputError(
            f"{option} {timeout:g} is not a number of seconds between 0 and {MAX_TIMEOUT:g}", hint=f"e.g. {option} 5"
        )
    return timeout


NATS_SCHEMES = ("nats", "tls", "ws", "wss")


def public_url(url: str) -> str:
    """The URL without user:password@ (never printed); exit 2 when it is not a NATS URL."""
    from mqctl.urls import safe_url, split_url

    parts = split_url(url if "://" in url else f"nats://{url}", "--nats")[0]
    if parts.scheme not in NATS_SCHEMES or not parts.hostname:
        raise InputError(
            f"--nats {safe_url(url)!r} is not a NATS server URL",
            hint="e.g. nats://127.0.0.1:4222 (schemes: " + ", ".join(NATS_SCHEMES) + ")",
        )
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def check_file(path: str | None, option: str) -> str | None:
    """The expanded path of a file option, exit 2 when it is not a file."""
    if path is not None and not Path(path).expanduser().is_file():
        raise InputError(f"{option} {path}: file not found", hint=f"pass a readable file to {option}")
    return str(Path(path).expanduser()) if path else None


def require_nkeys(creds: str | None, nkey: str | None) -> None:
    """nats-py signs --creds/--nkey challenges with the optional `nkeys` package."""
    if creds or nkey:
        try:
            import nkeys  # noqa: F401
        except ImportError:
            raise PreconditionError("--creds/--nkey need the nkeys package", hint="pip install nkeys") from None


def tls_context(ca: str | None, cert: str | None, key: str | None) -> ssl.SSLContext | None:
    """A client TLS context from --tls-ca/--tls-cert/--tls-key, or None when none is given."""
    if not (ca or cert or key):
        return None
    import ssl

    if bool(cert) != bool(key):
        raise InputError("--tls-cert and --tls-key go together", hint="pass both, or neither")
    try:
        context = ssl.create_default_context(cafile=ca)
    except (ssl.SSLError, OSError) as err:
        raise InputError(
            f"--tls-ca {ca}: no CA certificate could be read from it ({getattr(err, 'reason', None) or err})",
            hint="pass a PEM file holding the CA certificate(s) that signed the NATS server's certificate",
        ) from None
    if cert:
        try:
            context.load_cert_chain(cert, key)
        except (ssl.SSLError, OSError) as err:
            raise InputError(
                f"--tls-cert {cert} / --tls-key {key}: not a certificate and its private key "
                f"({getattr(err, 'reason', None) or err})",
                hint="pass the client certificate and its matching private key, both PEM",
            ) from None
    return context


def quiet_tls_close(record: logging.LogRecord) -> bool:
    """A log filter: asyncio's "returning true from eof_received() has no effect when using ssl" is noise."""
    return "eof_received()" not in record.getMessage()
