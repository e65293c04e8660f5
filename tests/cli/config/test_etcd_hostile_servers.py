"""An etcd endpoint that drips its answer or answers nonsense: every command that reads etcd ends within
its deadline with one error line naming the endpoint (exit 3), never a hang or an internal error."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.files import write_yaml
from tests.helpers.paths import FIXTURES


class Server:
    """A loopback HTTP server answering every request with `answer(sock)`; stops itself after 60 s."""

    def __init__(self, answer):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.answer = answer
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        deadline = time.monotonic() + 60
        while not self.stop.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._handle, args=(conn, deadline), daemon=True).start()

    def _handle(self, conn, deadline):
        with conn:
            conn.settimeout(2)
            try:
                conn.recv(65536)
                self.answer(conn, lambda: self.stop.is_set() or time.monotonic() > deadline)
            except OSError:
                pass

    def close(self):
        self.stop.set()
        self.thread.join(timeout=5)
        self.sock.close()


def drip(conn, stopped):
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{")
    while not stopped():
        conn.sendall(b" ")
        time.sleep(0.2)


def body(payload: bytes):
    def answer(conn, _stopped):
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
            % (len(payload), payload)
        )

    return answer


ANSWERS = {
    "drips": drip,
    "a list": body(b"[1,2,3]"),
    "undecodable keys": body(json.dumps({"kvs": [{"key": "%%%not base64", "value": "eA=="}]}).encode()),
    "kvs not a list": body(json.dumps({"kvs": 7}).encode()),
}


@pytest.fixture(params=list(ANSWERS))
def hostile_etcd(request):
    server = Server(ANSWERS[request.param])
    yield request.param, server.url
    server.close()


def commands(config: str, url: str) -> list[list[str]]:
    rocksmq = str(FIXTURES / "rocksmq" / "rdb_data")
    return [
        ["config", "explain", config, "--etcd", url],
        ["config", "get", config, "mq.type", "--etcd", url],
        ["channels", "checkpoints", "--rocksmq", rocksmq, "--etcd", url],
        ["retention", "show", "--rocksmq", rocksmq, "--config", config, "--etcd", url],
    ]


def test_every_etcd_reading_command_ends_with_one_error_line(hostile_etcd, tmp_path):
    kind, url = hostile_etcd
    config = str(write_yaml(tmp_path, f"mq:\n  type: rocksmq\nrocksmq:\n  path: {FIXTURES / 'rocksmq' / 'rdb_data'}\n"))
    for argv in commands(config, url):
        started = time.monotonic()
        result = run_cli(*argv, "--json", timeout=60)
        took = time.monotonic() - started
        assert result.code == 3, (kind, argv, result.stdout, result.stderr)
        error = result.json()["error"]
        assert error["kind"] == "precondition" and "internal" not in error["message"], (kind, argv, error)
        assert url.removeprefix("http://") in error["message"], error
        assert took < 30, (kind, argv, took)
