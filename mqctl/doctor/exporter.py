"""`mqctl exporter`: the doctor's examination served as Prometheus metrics on /metrics, so the hazards it finds
(retention closing on an unflushed checkpoint, a WAL disk filling, forceDeny left on) are watched before they
hurt rather than found after.

A scrape never reads Milvus itself: it is answered from the last examination, and a new examination runs only
when the last is older than the interval (one at a time, however many scrapes arrive), so a busy Prometheus
cannot load Milvus, etcd or the MQ. A failing examination does not fail the scrape: `mqctl_source_up` says
which source failed, and the families of the sources that answered are still served.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from mqctl.doctor.metrics import COUNTER, FamiliesCollector, Family, families
from mqctl.doctor.verdict import Report
from mqctl.errors import InputError, MqctlError, PreconditionError

DEFAULT_LISTEN = "127.0.0.1:9851"


@dataclass(frozen=True)
class Listen:
    host: str
    port: int

    @property
    def shown(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_listen(text: str) -> Listen:
    """HOST:PORT, [IPv6]:PORT or :PORT (127.0.0.1); a bad one is exit 2 with the form expected."""
    host, _, port = text.strip().rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(
            f"--listen {text!r} is not HOST:PORT",
            hint=f"e.g. --listen {DEFAULT_LISTEN} (0.0.0.0:PORT to be scraped from other hosts)",
        )
    return Listen(host, int(port))


class CachedExamination:
    """The families of the last examination, read again only once they are older than `interval` seconds."""

    def __init__(self, examine: Callable[[], Report], interval: float, monotonic: Callable[[], float] = time.monotonic):
        self.examine = examine
        self.interval = interval
        self.monotonic = monotonic
        self.lock = threading.Lock()
        self.reads = 0
        self.failures = 0
        self.read_at: float | None = None
        self.last_error: str | None = None
        self.last_exception: Exception | None = None  # the first read's InputError stops the exporter at start
        self.cached: list[Family] = []

    def refresh(self) -> None:
        """Examine now; an error becomes `mqctl_source_up{source="doctor"} 0` with its message kept."""
        started = self.monotonic()
        try:
            report = self.examine()
        except MqctlError as err:
            self._failed(err.one_line(), started, err)
            return
        except Exception as err:  # a source fails in a way no check foresaw: one scrape says so, the next retries
            self._failed(f"{type(err).__name__}: {err}", started, err)
            return
        produced = families(report)
        up = next(f for f in produced if f.name == "mqctl_source_up")
        up.add(1, "doctor")
        self.cached, self.last_error, self.last_exception = produced, None, None
        self.reads += 1
        self.read_at = self.monotonic()

    def _failed(self, message: str, started: float, err: Exception) -> None:
        up = Family(
            "mqctl_source_up", "1 when the source was read in the last examination, 0 when it failed", ("source",)
        )
        up.add(0, "doctor")
        duration = Family("mqctl_scrape_duration_seconds", "Seconds the last examination took (every source read)", ())
        duration.add(round(self.monotonic() - started, 3))
        self.cached, self.last_error, self.last_exception = [up, duration], message, err
        self.reads += 1
        self.failures += 1
        self.read_at = self.monotonic()

    def families(self) -> list[Family]:
        """What a scrape answers: the cache, refreshed first when stale (one refresh for concurrent scrapes)."""
        with self.lock:
            if self.read_at is None or self.monotonic() - self.read_at >= self.interval:
                self.refresh()
            age = self.monotonic() - (self.read_at or self.monotonic())
            own = [
                Family("mqctl_exporter_reads", "Examinations run (each reads every source once)", (), kind=COUNTER),
                Family("mqctl_exporter_read_failures", "Examinations that failed as a whole", (), kind=COUNTER),
                Family("mqctl_exporter_cache_age_seconds", "Age of the examination this scrape is answered from", ()),
            ]
            own[0].add(self.reads)
            own[1].add(self.failures)
            own[2].add(round(age, 3))
            return [*self.cached, *own]


class Exporter:
    """The HTTP endpoint (prometheus_client's server on a daemon thread) over a CachedExamination."""

    def __init__(self, cache: CachedExamination, listen: Listen) -> None:
        self.cache = cache
        self.listen = listen
        self.server: object | None = None

    def start(self) -> None:
        """Bind and serve; a port in use or a host that is not here is exit 3, said in one line."""
        from prometheus_client import CollectorRegistry, start_http_server

        registry = CollectorRegistry(auto_describe=False)
        registry.register(FamiliesCollector(self.cache.families))  # type: ignore[arg-type]
        try:
            self.server, _thread = start_http_server(self.listen.port, addr=self.listen.host, registry=registry)
        except OSError as err:
            raise PreconditionError(
                f"cannot listen on {self.listen.shown}: {err.strerror or err}",
                hint="choose another --listen HOST:PORT (is another exporter running?)",
            ) from None

    def stop(self) -> None:
        server = self.server
        if server is not None:
            server.shutdown()  # type: ignore[attr-defined]
            server.server_close()  # type: ignore[attr-defined]
            self.server = None

    def serve_until(self, stopped: threading.Event) -> None:
        """Serve until `stopped` is set or a stopping signal (Ctrl-C, SIGTERM) unwinds the main thread."""
        try:
            while not stopped.wait(0.5):
                pass
        finally:
            self.stop()
