"""The exporter's scrape cost on the RocksMQ fixture: one cold scrape (an examination runs), then N scrapes served
from the cache, over HTTP on 127.0.0.1; and the exporter process's resident memory before and after them.

Goals (issue #32): under 100 ms from the cache, under 2 s cold, memory flat over 1,000 scrapes; also the memory
over --reads scrapes that each run a new examination.
Run: python bench/exporter.py [--scrapes N] [--config milvus.yaml --rocksmq DIR ...]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1


def scrape(url: str) -> float:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as answer:
        answer.read()
    return time.perf_counter() - start


def start(target: list[str], interval: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "mqctl", "exporter", *target, "--listen", f"127.0.0.1:{port}", "--interval", interval],
        stderr=subprocess.DEVNULL,
        env=env,
    )
    url = f"http://127.0.0.1:{port}/metrics"
    started = time.perf_counter()
    while True:
        try:
            scrape(url)
            return proc, url
        except OSError:
            if proc.poll() is not None or time.perf_counter() - started > 60:
                raise SystemExit("the exporter did not start") from None
            time.sleep(0.05)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scrapes", type=int, default=1000)
    parser.add_argument("--reads", type=int, default=200, help="scrapes that each run an examination (--interval ~0)")
    parser.add_argument("target", nargs="*", help="the exporter's target options (default: the RocksMQ fixture)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="mqctl-bench-exporter-"))
    target = args.target
    if not target:
        config = folder / "milvus.yaml"
        sample = (REPO / "sample-configs" / "milvus-2.3-standalone-rocksmq.yaml").read_text()
        config.write_text(sample.replace("localhost:2379", f"127.0.0.1:{free_port()}"))
        target = ["--config", str(config), "--rocksmq", str(REPO / "tests/fixtures/rocksmq/rdb_data")]
    proc, url = start(target, "3600")
    try:
        # the first read ran at start-up; time one cold examination with the doctor's own measure
        cold = next(float(line.split()[-1]) for line in urllib.request.urlopen(url).read().decode().splitlines()
                    if line.startswith("mqctl_scrape_duration_seconds "))  # fmt: skip
        for _ in range(50):  # warm-up
            scrape(url)
        before = rss_kib(proc.pid)
        times = [scrape(url) for _ in range(args.scrapes)]
        after = rss_kib(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    times.sort()
    proc, url = start(target, "0.001")  # every scrape runs a new examination
    try:
        for _ in range(20):
            scrape(url)
        read_before = rss_kib(proc.pid)
        reads = [scrape(url) for _ in range(args.reads)]
        read_after = rss_kib(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    print(f"cold examination       {cold * 1000:8.1f} ms (goal < 2000)")
    print(f"cached scrape median   {statistics.median(times) * 1000:8.2f} ms over {args.scrapes} (goal < 100)")
    print(f"cached scrape p99      {times[int(len(times) * 0.99) - 1] * 1000:8.2f} ms")
    print(
        f"exporter RSS           {before} KiB before, {after} KiB after {args.scrapes} scrapes ({after - before:+d} KiB)"
    )
    print(f"examination median     {statistics.median(reads) * 1000:8.1f} ms over {args.reads} scrapes that each read")
    print(f"exporter RSS           {read_before} KiB before, {read_after} KiB after {args.reads} reads "
          f"({read_after - read_before:+d} KiB)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
