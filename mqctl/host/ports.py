"""Local TCP ports: picking free ones for servers we start, and telling whether one is taken."""

from __future__ import annotations

import random
import socket
from pathlib import Path

EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LINUX_EPHEMERAL_DEFAULT = (32768, 60999)
# Below 20000 sit many services' defaults (Milvus 19530 and 9091, etcd 2379, NATS 4222, Kafka 9092).
RESTARTABLE_LOWEST = 20000


def free_ports(count: int) -> list[int]:
    """`count` distinct ports the kernel reports free right now (bound together, then released)."""
    socks = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
        return [s.getsockname()[1] for s in socks]
    finally:
        for sock in socks:
            sock.close()


def ephemeral_range(source: Path = EPHEMERAL_RANGE_FILE) -> tuple[int, int]:
    """The kernel's range for `bind(0)` and outgoing connections' source ports (Linux's default if unreadable)."""
    try:
        low, high = (int(field) for field in source.read_text().split())
    except (OSError, ValueError):
        return LINUX_EPHEMERAL_DEFAULT
    return low, high


def restartable_ports(
    count: int, ephemeral: tuple[int, int] | None = None, lowest: int = RESTARTABLE_LOWEST
) -> list[int]:
    """`count` distinct free ports for servers that stop and start again on the same ports (a sandbox).

    Why not `free_ports`: a port from the kernel's ephemeral range may be handed to another program's `bind(0)`
    or to an outgoing connection as its source port while the server is down, and its restart then fails with
    "ports in use". Ports outside that range are only ever taken on purpose. Falls back to `free_ports` when
    the range leaves too few ports outside it.

    Each port is checked without SO_REUSEADDR: the `milvus` package that renders a new sandbox's config binds
    every port that way, and a port an earlier server (ours, Go's, with SO_REUSEADDR) still holds in TIME_WAIT
    passes the lenient check but fails that bind ("set data_coord_port=62726, but bind failed", seen in CI)."""
    low, high = ephemeral or ephemeral_range()
    candidates = [port for port in range(lowest, 65536) if not low <= port <= high]
    random.shuffle(candidates)
    chosen: list[int] = []
    for port in candidates:
        if port_is_free(port, reuse_address=False):
            chosen.append(port)
            if len(chosen) == count:
                return chosen
    return free_ports(count)


def port_is_free(port: int, *, reuse_address: bool = True) -> bool:
    """Nobody listens on `port`. With `reuse_address` (SO_REUSEADDR, as Go's and Java's listeners bind) a
    connection of an earlier listener still in TIME_WAIT does not count; without it, it does."""
    for host in ("127.0.0.1", "0.0.0.0"):  # Milvus listens on all interfaces, etcd and NATS on loopback
        with socket.socket() as sock:
            if reuse_address:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
            except OSError:
                return False
    return True
