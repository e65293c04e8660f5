"""What Linux /proc tells about local processes: who listens on a port, and with which environment.

Used to recognise Milvus behind a URL (it must not be edited under it) and to read the environment
it really runs with (variables such as MQ_TYPE override its yaml). Off Linux, or for a remote host,
nothing is known and callers say so.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from urllib.parse import urlsplit

LOOPBACK = ("127.0.0.1", "localhost", "::1", "0.0.0.0")


def listening_pid(url: str, default_port: int) -> int | None:
    """The pid of the local process listening on a loopback URL's port, when visible in /proc."""
    parts = urlsplit(url if "://" in url else f"tcp://{url}")
    if parts.hostname not in LOOPBACK:
        return None
    port = parts.port or default_port
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A = LISTEN
                    inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return None
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) in inodes for fd in (proc / "fd").iterdir()):
                return int(proc.name)
        except OSError:
            continue
    return None


def process_name(pid: int) -> str:
    with contextlib.suppress(OSError):
        return (Path("/proc") / str(pid) / "comm").read_text().strip()
    return "?"


def process_environ(pid: int) -> dict[str, str] | None:
    """The environment a process was started with; None when it cannot be read."""
    try:
        raw = (Path("/proc") / str(pid) / "environ").read_bytes()
    except OSError:
        return None
    return dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)
