"""`mqctl exporter` as an operator runs it: a real process serving /metrics on 127.0.0.1 over a real nats-server
holding the natsmq fixture, scraped over HTTP; the cache between scrapes, a source going down mid-run, a port in
use, SIGTERM."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.helpers.metrics import sample_config, start_exporter, stop, value
from tests.helpers.paths import FIXTURES, REPO
from tests.helpers.servers import free_port, start_nats


@pytest.fixture(scope="module")
def nats_milvus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, subprocess.Popen[bytes]]]:
    """A live nats-server over a copy of the natsmq fixture's store, and a natsmq config naming it."""
    folder = tmp_path_factory.mktemp("exporter")
    store = folder / "store"
    shutil.copytree(FIXTURES / "natsmq" / "store", store)
    server, url = start_nats(folder, store_dir=store)
    config = sample_config(folder / "cfg", "milvus-2.3-standalone-natsmq.yaml")
    try:
        yield url, config, server
    finally:
        server.kill()
        server.wait()


def test_scrapes_are_answered_from_one_read_with_the_channels_numbers(nats_milvus, cli):
    url, config, _ = nats_milvus
    proc, metrics = start_exporter(
        "--config", str(config), "--nats", url, "--milvus-version", "2.3.5", "--interval", "600"
    )
    try:
        texts = []
        for _ in range(10):  # a scrape every 100 ms: the cache holds, Milvus's MQ is read once
            answer = httpx.get(metrics, timeout=10)
            assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
            texts.append(answer.text)
            time.sleep(0.1)
        assert value(texts[-1], "mqctl_exporter_reads_total") == 1
        assert value(texts[-1], "mqctl_source_up", source="mq") == 1
        assert value(texts[-1], "mqctl_source_up", source="doctor") == 1
        listed = cli("channels", "list", "--nats", url, "--json").json()["channels"]
        assert listed
        for channel in listed:
            labels = {"mq": "natsmq", "channel": channel["name"]}
            assert value(texts[-1], "mqctl_channel_messages", **labels) == channel["messages"]
            assert value(texts[-1], "mqctl_channel_bytes", **labels) == channel["bytes"]

        busy, _ = start_exporter_on_taken_port(metrics, config, url)
        assert busy.returncode == 3 and "cannot listen on 127.0.0.1:" in busy.stderr
        assert len(busy.stderr.strip().splitlines()) == 1
    finally:
        code, err = stop(proc)
    assert code == 0 and "stopped: interrupted (SIGTERM)" in err, err


def start_exporter_on_taken_port(metrics: str, config: Path, url: str) -> tuple[subprocess.CompletedProcess[str], str]:
    port = metrics.split(":")[2].split("/")[0]
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    args = ["exporter", "--config", str(config), "--nats", url, "--listen", f"127.0.0.1:{port}"]
    done = subprocess.run(
        [sys.executable, "-m", "mqctl", *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    return done, port


def test_bad_options_stop_before_serving(tmp_path, cli):
    bad_listen = cli("exporter", "--rocksmq", str(FIXTURES / "rocksmq" / "rdb_data"), "--listen", "localhost")
    assert bad_listen.code == 2 and "is not HOST:PORT" in bad_listen.stderr
    missing = cli("exporter", "--config", str(tmp_path / "none.yaml"), "--listen", f"127.0.0.1:{free_port()}")
    assert missing.code == 2 and "none.yaml" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1
    assert cli("exporter", "--rocksmq", "x", "--interval", "0").code == 2
