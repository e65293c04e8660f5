"""Benchmark the Woodpecker reader at scale against the plainest reads of the same files (issue 33, item 1, the
folder part; issue 29, class 3).

- Listing: a local-layout WAL of N segments (default 20,000, one small finalized segment each, in one log) listed
  as `channels list --woodpecker` lists it (`WoodpeckerSource.list_channels` without message times) vs a bare
  walk of the folders reading every `data.log` and computing one CRC over it.
- A finalized segment of 32 MiB (about 64-KiB entries in 2-MiB blocks) read by `read_local_segment` (every record
  and block CRC, the structural checks, the entries decoded) vs reading the file and computing one CRC over it.

The segments are written by tests/helpers/woodpecker_segments.py (the cited layout). Figures only; the scaling
itself is asserted by tests/mq/woodpecker/test_linear_cost.py, by counting work.

S3 part (`--s3`; issue 33, item 1): a WAL in moto's S3 server (`moto_server`, a process of its own on 127.0.0.1),
read by mqctl in this process as the commands read it, against a bare boto3 client doing the same reads (one
listing, the same objects, whole, READ_AHEAD at once) and against raw loopback throughput (one TCP socket on
127.0.0.1, 64 MiB sent and received).
- Objects: the two finalized segments upstream's Woodpecker v0.1.37 wrote through the Go reference writer into
  moto's S3 (tests/fixtures/upstream/woodpecker-v0.1.37-minio, `python -m tests.helpers.upstream_writer`),
  replicated under new segment ids 0..N-1 of one log (`--s3-segments`, default 700: about 5,900 objects). Writing
  thousands of segments through the writer itself (a Go build, an etcd, Woodpecker's sync per entry) would take
  far longer than the reading it serves to measure; each copy is byte for byte what upstream wrote, and
  Woodpecker numbers entries per segment, so the copies form a valid log.
- Bytes: a second WAL of `--s3-mib` MiB (default 512) in 8-MiB block objects (64-KiB entries), written by
  tests/helpers/woodpecker_segments.py (the cited layout), for the full read against loopback.
Timed: `channels list` (WoodpeckerSource.list_channels and its data warnings), `channels woodpecker`
(woodpecker_report), `peek --limit 100` from the last 16 segments (the newest messages), and a full read
(iter_messages over every segment, what a replay partition reads); peak RSS of a full read and of a listing at two
WAL sizes, each in a child process.

Usage: python bench/woodpecker_scale.py [--segments 20000] [--segment-mib 32] [--only folder|s3]
       [--s3-segments 700] [--s3-mib 512]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import zlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mqctl.mq.woodpecker.storage import READ_AHEAD  # noqa: E402
from tests.helpers import woodpecker_segments as w  # noqa: E402


def best_of(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def bare_walk(root: Path) -> int:
    total = 0
    for folder, _, names in os.walk(root):
        if "data.log" in names:
            with open(os.path.join(folder, "data.log"), "rb") as f:
                total ^= zlib.crc32(f.read())
    return total


def listing(root: Path, segments: int) -> None:
    from mqctl.mq.woodpecker.source import WoodpeckerSource

    data = w.local_segment(root / "seed", [w.messages(2)])
    for number in range(segments):
        folder = root / "wal" / "1" / str(number)
        folder.mkdir(parents=True)
        (folder / "data.log").write_bytes(data)

    def mqctl_list() -> None:
        with WoodpeckerSource(root / "wal") as source:
            source.list_channels(message_times=False)

    ours, bare = best_of(mqctl_list, 3), best_of(lambda: bare_walk(root / "wal"), 3)
    print(f"list {segments:,} segments: mqctl {ours:.2f} s, bare walk+CRC {bare:.2f} s, ratio {ours / bare:.1f}x")


def segment_read(root: Path, mib: int) -> None:
    from mqctl.mq.woodpecker.segment_files import read_local_segment

    entry = w.message(b"x" * (64 << 10), {"_t": "2", "_v": "1", "_tt": "1"})
    per_block, blocks = 32, max(1, (mib << 20) // ((64 << 10) * 32))
    folder = root / "big" / "1" / "0"
    w.local_segment(folder, [[entry] * per_block for _ in range(blocks)])
    size = (folder / "data.log").stat().st_size

    def bare() -> int:
        return zlib.crc32((folder / "data.log").read_bytes())

    def ours() -> None:
        segment = read_local_segment(folder, 1, 0)
        assert not segment.problems and len(segment.entries) == per_block * blocks

    mine, plain = best_of(ours, 3), best_of(bare, 3)
    print(
        f"read a {size / (1 << 20):.0f} MiB finalized segment: mqctl {mine:.2f} s, bare read+CRC {plain:.2f} s, "
        f"ratio {mine / plain:.1f}x"
    )


# --- S3 ------------------------------------------------------------------------------------------------------
UPSTREAM = REPO / "tests" / "fixtures" / "upstream" / "woodpecker-v0.1.37-minio" / "wal" / "files" / "wp" / "1"
BUCKET = "bench-wal"
KEYS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """moto's S3 server as a process of its own (not sharing this process's interpreter with the reader)."""
    from tests.helpers.servers import free_port

    port = free_port()
    process = subprocess.Popen(
        [str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(url, timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def boto(url: str) -> Any:
    import boto3
    from botocore.config import Config

    config = Config(max_pool_connections=READ_AHEAD + 1, retries={"max_attempts": 2})
    return boto3.client("s3", endpoint_url=url, region_name="us-east-1", config=config, **KEYS)


def upload(url: str, objects: Iterable[tuple[str, bytes]]) -> tuple[int, int]:
    client = boto(url)
    count = size = 0
    with ThreadPoolExecutor(READ_AHEAD) as pool:
        for data in pool.map(
            lambda item: client.put_object(Bucket=BUCKET, Key=item[0], Body=item[1]) and item[1], objects
        ):
            count, size = count + 1, size + len(data)
    return count, size


def replicated(prefix: str, segments: int) -> Iterator[tuple[str, bytes]]:
    """Upstream's two finalized segments, copied under segment ids 0..segments-1 of log 1 (write.lock left out)."""
    sources = [UPSTREAM / "0", UPSTREAM / "1"]
    files = [{p.name: p.read_bytes() for p in folder.iterdir() if p.name != "write.lock"} for folder in sources]
    for number in range(segments):
        for name, data in files[number % 2].items():
            yield f"{prefix}/1/{number}/{name}", data


def large(work: Path, prefix: str, mib: int) -> Iterator[tuple[str, bytes]]:
    """`mib` MiB of 8-MiB block objects, 4 blocks a segment (64-KiB entries), written by the test helpers."""
    entry = w.message(b"x" * (64 << 10), {"_t": "2", "_v": "1", "_tt": "1"})
    segments = max(1, mib // 32)
    for number in range(segments):
        folder = work / "large" / str(number)
        w.object_segment(folder, [[entry] * 128] * 4)
        for path in sorted(folder.iterdir()):
            yield f"{prefix}/1/{number}/{path.name}", path.read_bytes()
        shutil.rmtree(folder)


def bare_read(url: str, prefix: str, segments: set[int] | None = None) -> tuple[int, int]:
    """One listing, then every object (or those of `segments`) fetched whole, READ_AHEAD at once, in listing order."""
    client = boto(url)
    keys = [
        item["Key"]
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix + "/")
        for item in page.get("Contents", [])
    ]
    if segments is not None:
        keys = [key for key in keys if int(key.split("/")[-2]) in segments]

    def get(key: str) -> int:
        return len(client.get_object(Bucket=BUCKET, Key=key)["Body"].read())

    with ThreadPoolExecutor(READ_AHEAD) as pool:
        return len(keys), sum(pool.map(get, keys))


def loopback_mib_s(mib: int = 64) -> float:
    """Raw loopback: `mib` MiB through one TCP connection on 127.0.0.1, received in 1-MiB reads."""
    server = socket.create_server(("127.0.0.1", 0))
    chunk = b"x" * (1 << 20)

    def send() -> None:
        connection, _ = server.accept()
        with connection:
            for _ in range(mib):
                connection.sendall(chunk)

    thread = threading.Thread(target=send)
    thread.start()
    start = time.perf_counter()
    with socket.create_connection(server.getsockname()) as client:
        got = 0
        while got < mib << 20:
            data = client.recv(1 << 20)
            if not data:
                break
            got += len(data)
    spent = time.perf_counter() - start
    thread.join()
    server.close()
    return got / (1 << 20) / spent


def source(url: str, prefix: str) -> Any:
    from mqctl.mq.woodpecker.source import WoodpeckerSource
    from mqctl.mq.woodpecker.storage import S3Access

    return WoodpeckerSource(f"s3://{BUCKET}/{prefix}", access=S3Access(endpoint=url))


def mqctl_list(url: str, prefix: str) -> int:
    from mqctl.mq.channels import list_channels

    with source(url, prefix) as opened:
        return list_channels(opened).totals.messages


def mqctl_report(url: str, prefix: str) -> int:
    from mqctl.mq.streaming.wal_files import woodpecker_report
    from mqctl.mq.woodpecker.storage import S3Access

    return len(woodpecker_report(f"s3://{BUCKET}/{prefix}", access=S3Access(endpoint=url)).segments)


def mqctl_peek(url: str, prefix: str, start: str) -> int:
    from mqctl.mq.channels import peek

    with source(url, prefix) as opened:
        return len(peek(opened, "1", start=start, limit=100).messages)


def mqctl_full_read(url: str, prefix: str) -> int:
    with source(url, prefix) as opened:
        return sum(len(m.data) for m in opened.iter_messages("1"))


def peak_rss_kib(function: str, url: str, prefix: str) -> int:
    """Peak resident memory (VmHWM: of this program only, not of the process it was forked from) of a child process
    running one of the functions above (this file's)."""
    script = (
        f"import sys; sys.path.insert(0, {str(REPO / 'bench')!r}); import woodpecker_scale as b; "
        f"b.{function}({url!r}, {prefix!r}); "
        "print(next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM:')))"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, check=True, capture_output=True, text=True)
    return int(done.stdout.split()[-1])


def ratio_line(what: str, ours: float, bare: float, extra: str = "") -> None:
    print(f"{what}: mqctl {ours:.2f} s, bare boto3 {bare:.2f} s, ratio {ours / bare:.2f}{extra}")


def s3_part(work: Path, segments: int, mib: int) -> None:
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_REGION="us-east-1")
    with moto_server() as url:
        boto(url).create_bucket(Bucket=BUCKET)
        start = time.perf_counter()
        count, size = upload(url, replicated("wp", segments))
        half, _ = upload(url, replicated("half", segments // 4))
        print(
            f"s3: {count:,} objects ({size / (1 << 20):.1f} MiB) in {segments:,} segments, upstream-written segments "
            f"replicated (and {half:,} objects in {segments // 4:,} for the memory comparison); uploaded in "
            f"{time.perf_counter() - start:.0f} s"
        )
        mqctl_list(url, "wp")  # warm both sides once (connections, moto's own first requests)
        bare_read(url, "wp")
        ours, bare = best_of(lambda: mqctl_list(url, "wp"), 2), best_of(lambda: bare_read(url, "wp"), 2)
        ratio_line("channels list (every object read and checked)", ours, bare)
        ours = best_of(lambda: mqctl_report(url, "wp"), 2)
        ratio_line("channels woodpecker", ours, bare)
        newest = set(range(segments - 16, segments))
        assert mqctl_peek(url, "wp", f"{segments - 16}/0") == 100
        ours = best_of(lambda: mqctl_peek(url, "wp", f"{segments - 16}/0"), 5)
        bare_newest = best_of(lambda: bare_read(url, "wp", newest), 5)
        listing_only = best_of(lambda: bare_read(url, "wp", set()), 5)
        ratio_line(
            f"peek --limit 100 from segment {segments - 16} (16 segments)",
            ours,
            bare_newest,
            f"; of which the listing (bare) {listing_only:.2f} s",
        )
        small_rss = peak_rss_kib("mqctl_list", url, "half")
        large_rss = peak_rss_kib("mqctl_list", url, "wp")
        print(
            f"channels list peak RSS: {small_rss / 1024:.0f} MiB at {half:,} objects, {large_rss / 1024:.0f} MiB at "
            f"{count:,} objects"
        )

        start = time.perf_counter()
        count, size = upload(url, large(work, "large", mib))
        print(
            f"s3: {count:,} objects ({size / (1 << 20):.0f} MiB, 8-MiB blocks) uploaded in {time.perf_counter() - start:.0f} s"
        )
        mqctl_full_read(url, "large")
        ours, bare = best_of(lambda: mqctl_full_read(url, "large"), 2), best_of(lambda: bare_read(url, "large"), 2)
        raw = max(loopback_mib_s() for _ in range(3))
        mib_read = size / (1 << 20)
        print(
            f"full read: mqctl {mib_read / ours:.0f} MiB/s, bare boto3 {mib_read / bare:.0f} MiB/s, raw loopback "
            f"{raw:.0f} MiB/s; mqctl/bare {bare / ours:.2f}, mqctl/loopback {mib_read / ours / raw:.2f}"
        )
        _, quarter_size = upload(url, large(work, "quarter", mib // 4))
        rss_quarter = peak_rss_kib("mqctl_full_read", url, "quarter")
        rss = peak_rss_kib("mqctl_full_read", url, "large")
        print(
            f"full read peak RSS: {rss_quarter / 1024:.0f} MiB for {quarter_size / (1 << 20):.0f} MiB read, "
            f"{rss / 1024:.0f} MiB for {mib_read:.0f} MiB read"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--segments", type=int, default=20_000)
    parser.add_argument("--segment-mib", type=int, default=32)
    parser.add_argument("--only", choices=("folder", "s3"))
    parser.add_argument("--s3-segments", type=int, default=700)
    parser.add_argument("--s3-mib", type=int, default=512)
    args = parser.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="wp-bench-") as work:
        if args.only in (None, "folder"):
            listing(Path(work), args.segments)
            segment_read(Path(work), args.segment_mib)
        if args.only in (None, "s3"):
            s3_part(Path(work), args.s3_segments, args.s3_mib)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
