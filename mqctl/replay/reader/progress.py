"""Live progress of a replay: executors report counts to a small collector on the driver.

Spark's own metrics say nothing about MQ messages, and accumulators only arrive when a task
ends. So each partition sends JSON lines (`key`, `channel`, `messages`, `rows`, `bytes`, `done`)
over TCP to the collector the job started; the last line of a partition carries its final counts,
which make the summary. Reporting never fails a read: an unreachable collector is ignored.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time
from dataclasses import dataclass


@dataclass
class PartitionCounts:
    channel: str
    messages: int = 0
    rows: int = 0
    bytes: int = 0
    done: bool = False


class ProgressCollector:
    """Counts per partition, fed by the executors; latest report of a partition wins (a retried
    task starts again from zero)."""

    def __init__(self, host: str = "127.0.0.1"):
        self._lock = threading.Lock()
        self.partitions: dict[str, PartitionCounts] = {}
        collector = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                for line in self.rfile:
                    try:
                        report = json.loads(line)
                        counts = PartitionCounts(
                            str(report["channel"]),
                            int(report["messages"]),
                            int(report["rows"]),
                            int(report["bytes"]),
                            bool(report["done"]),
                        )
                    except (ValueError, KeyError, TypeError):
                        continue
                    with collector._lock:
                        collector.partitions[str(report["key"])] = counts

        self._server = socketserver.ThreadingTCPServer((host, 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="replay-progress", daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}"

    def per_channel(self) -> dict[str, PartitionCounts]:
        """Counts summed per channel (`done` when every reported partition of it is done)."""
        with self._lock:
            reports = list(self.partitions.values())
        totals: dict[str, PartitionCounts] = {}
        for report in reports:
            total = totals.setdefault(report.channel, PartitionCounts(report.channel, done=True))
            total.messages += report.messages
            total.rows += report.rows
            total.bytes += report.bytes
            total.done = total.done and report.done
        return totals

    def finished(self) -> int:
        with self._lock:
            return sum(1 for report in self.partitions.values() if report.done)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class ProgressReporter:
    """Executor side: counts one partition and sends them every `interval` seconds and at the end."""

    def __init__(self, address: str | None, key: str, channel: str, interval: float = 0.5):
        self.counts = PartitionCounts(channel)
        self._key = key
        self._interval = interval
        self._next = time.monotonic()
        self._sock: socket.socket | None = None
        if address:
            host, _, port = address.rpartition(":")
            try:
                self._sock = socket.create_connection((host, int(port)), timeout=2)
            except (OSError, ValueError):
                self._sock = None

    def add(self, messages: int, rows: int, size: int) -> None:
        self.counts.messages += messages
        self.counts.rows += rows
        self.counts.bytes += size
        if self._sock is not None and time.monotonic() >= self._next:
            self._send()
            self._next = time.monotonic() + self._interval

    def finish(self) -> None:
        self.counts.done = True
        if self._sock is not None:
            self._send()
            self._sock.close()
            self._sock = None

    def _send(self) -> None:
        if self._sock is None:
            return
        line = json.dumps(
            {
                "key": self._key,
                "channel": self.counts.channel,
                "messages": self.counts.messages,
                "rows": self.counts.rows,
                "bytes": self.counts.bytes,
                "done": self.counts.done,
            }
        )
        try:
            self._sock.sendall(line.encode() + b"\n")
        except OSError:
            self._sock = None
