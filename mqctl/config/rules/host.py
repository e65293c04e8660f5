"""`config validate --check-host`: checks of this machine for an embedded MQ (port, store, disk)."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

from mqctl.backends import BACKENDS, go_parse_int
from mqctl.config.resolve.resolution import Resolution
from mqctl.config.rules.catalog import finding
from mqctl.findings import Finding

NATS = BACKENDS["natsmq"]
NATS_PORT_KEY, NATS_STORE_KEY = str(NATS.port_key), str(NATS.store_key)


def _existing_ancestor(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _is_rotational(path: Path) -> bool | None:
    """True when the disk holding `path` spins (from /sys); None when unknown."""
    try:
        device = os.stat(path).st_dev
        base = Path(f"/sys/dev/block/{os.major(device)}:{os.minor(device)}")
        for candidate in (base / "queue" / "rotational", base.resolve().parent / "queue" / "rotational"):
            if candidate.exists():
                return candidate.read_text().strip() == "1"
    except OSError:
        return None
    return None


def host_checks(res: Resolution) -> list[Finding]:
    """Checks of this machine for an embedded MQ: port free, store writable, disk space and kind."""
    found = []
    mq = res.effective_mq
    if mq == "natsmq":
        port = go_parse_int(res.value(NATS_PORT_KEY))
        if port is not None and 1 <= port <= 65535:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                try:
                    sock.bind(("127.0.0.1", port))
                except OSError:
                    found.append(
                        finding(
                            "HOST201",
                            f"port {port} is already in use on this host",
                            res.origin(NATS_PORT_KEY),
                            key=NATS_PORT_KEY,
                            hint="stop what listens there (a running Milvus holds it) or pick another port",
                        )
                    )
    store_key = BACKENDS[mq].store_key if mq in BACKENDS else None
    store = res.value(store_key) if store_key else None
    if store_key is None or not store:
        return found
    origin = res.origin(store_key)
    existing = _existing_ancestor(Path(store))
    if not os.access(existing, os.W_OK):
        found.append(
            finding(
                "HOST202",
                f"{store_key} {res.value(store_key)}: {existing} is not writable",
                origin,
                key=store_key,
                hint="fix ownership/permissions or choose another directory",
            )
        )
    if mq == "natsmq":
        limit = go_parse_int(res.value("natsmq.server.maxFileStore"))
        free = shutil.disk_usage(existing).free
        if limit is not None and free < limit:
            found.append(
                finding(
                    "HOST203",
                    f"free disk at {existing} is {free} bytes, below maxFileStore {limit}",
                    res.origin("natsmq.server.maxFileStore"),
                    key="natsmq.server.maxFileStore",
                    hint="free space, or lower natsmq.server.maxFileStore",
                )
            )
    if _is_rotational(existing):
        found.append(
            finding(
                "HOST204",
                f"{existing} is on a rotational disk",
                origin,
                key=store_key,
                hint="put the MQ store on an SSD",
            )
        )
    return found
