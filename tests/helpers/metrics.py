"""Reading Prometheus text back in the tests, with prometheus_client's own parser (what a scraper does)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from tests.helpers.paths import REPO, SAMPLES
from tests.helpers.servers import free_port

T = TypeVar("T")


def samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Every sample by name (a counter's under its _total name): its labels and value."""
    from prometheus_client.parser import text_string_to_metric_families

    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return found


def value(text: str, name: str, **labels: str) -> float:
    """The one sample of `name` whose labels include `labels`."""
    matching = [v for found, v in samples(text).get(name, []) if labels.items() <= found.items()]
    assert len(matching) == 1, f"{name}{labels}: {matching}"
    return matching[0]


def sample_config(folder: Path, sample: str = "milvus-2.3-standalone-rocksmq.yaml", etcd: str = "") -> Path:
    """A shipped sample config with mq.type written out, its natsmq folder in `folder`, and its etcd where none
    answers unless `etcd` is given."""
    folder.mkdir(parents=True, exist_ok=True)
    endpoint = etcd.removeprefix("http://") if etcd else f"127.0.0.1:{free_port()}"
    mq = "natsmq" if "natsmq" in sample else "rocksmq"
    text = (SAMPLES / sample).read_text().replace("localhost:2379", endpoint)
    text = text.replace("/var/lib/milvus/nats", str(folder / "nats-absent"))
    path = folder / "milvus.yaml"
    path.write_text(text.replace("\n  type: default\n", f"\n  type: {mq}\n"))
    return path


def start_exporter(*args: str) -> tuple[subprocess.Popen[str], str]:
    """`python -m mqctl exporter ARGS --listen 127.0.0.1:PORT` from this checkout, as a service manager runs it;
    returns (process, /metrics URL) once it answers."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mqctl", "exporter", *args, "--listen", f"127.0.0.1:{port}"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    if not wait_for_port(port) or proc.poll() is not None:
        proc.kill()
        raise AssertionError(f"the exporter did not listen: {proc.communicate()}")
    return proc, f"http://127.0.0.1:{port}/metrics"


def wait_for_port(port: int, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.05)
    return False


def stop(proc: subprocess.Popen[str]) -> tuple[int, str]:
    """SIGTERM, as a service manager stops it; its exit code and stderr."""
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=15)
    return proc.returncode, err


PROMETHEUS_DIRS = (Path.home() / ".cache" / "mqctl-ci" / "prometheus" / "usr" / "bin",)


def prometheus_tool(name: str) -> str | None:
    """promtool or prometheus: on PATH, else where .ci/run unpacks Debian's `prometheus` package."""
    found = shutil.which(name)
    if found:
        return found
    for folder in PROMETHEUS_DIRS:
        if (folder / name).is_file():
            return str(folder / name)
    return None


def until(condition: Callable[[], T | None], seconds: float = 30, every: float = 0.25) -> T:
    """The first truthy answer of `condition`, polled until `seconds` pass (then the test fails)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = condition()
        if got:
            return got
        time.sleep(every)
    raise AssertionError(f"not within {seconds} s: {getattr(condition, '__name__', condition)}")


@contextlib.contextmanager
def running_prometheus(folder: Path, scraped: str, rules: str) -> Iterator[str]:
    """A real Prometheus (Debian's binary) scraping `scraped` (HOST:PORT) every second and evaluating `rules` (the
    shipped rules, each `for` shortened to 0s so a test need not wait minutes); yields its /api/v1 URL."""
    import re

    binary = prometheus_tool("prometheus")
    if binary is None:
        import pytest

        pytest.skip("prometheus not installed (.ci/run unpacks Debian's prometheus package)")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rules.yml").write_text(re.sub(r"for: \d+m", "for: 0s", rules))
    (folder / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"rule_files: [{json.dumps(str(folder / 'rules.yml'))}]\n"
        f"scrape_configs:\n  - job_name: mqctl\n    static_configs: [{{targets: ['{scraped}']}}]\n"
    )
    port = free_port()
    proc = subprocess.Popen(
        [binary, f"--config.file={folder / 'prometheus.yml'}", f"--storage.tsdb.path={folder / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert wait_for_port(port), "prometheus did not listen"
        yield f"http://127.0.0.1:{port}/api/v1"
    finally:
        proc.kill()
        proc.wait()


def instant(api: str, expr: str) -> list[tuple[dict[str, str], float]]:
    """An instant query through Prometheus's HTTP API: each series' labels and value."""
    import httpx

    answer = httpx.get(f"{api}/query", params={"query": expr}, timeout=5).json()
    return [(r["metric"], float(r["value"][1])) for r in answer["data"]["result"]]


def firing(api: str, alertname: str, **labels: str) -> list[dict[str, Any]]:
    """The alerts named `alertname` firing now whose labels include `labels`."""
    import httpx

    alerts = httpx.get(f"{api}/alerts", timeout=5).json()["data"]["alerts"]
    return [
        a
        for a in alerts
        if a["labels"]["alertname"] == alertname and labels.items() <= a["labels"].items() and a["state"] == "firing"
    ]
