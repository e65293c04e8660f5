"""Local TCP ports: picking free ones for servers we start, and telling whether one is taken."""

from __future__ import annotations

import socket


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


def port_is_free(port: int) -> bool:
    """Nobody listens on `port` (SO_REUSEADDR as Go's listeners use, so TIME_WAIT does not count)."""
    for host in ("127.0.0.1", "0.0.0.0"):  # Milvus listens on all interfaces, etcd and NATS on loopback
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
            except OSError:
                return False
    return True
