"""Upstream's code runs here, not only its bytes: the reference writer (tests/reference/writer) is built with Go
from the pinned modules (Woodpecker, Milvus pkg/v2, from the Go module proxy, cached under ~/.cache/mqctl-go),
writes a WAL into a temporary folder and a bucket on moto's S3 server, and mqctl must read that as the new
manifest says; the new manifest must equal the committed one (same entries, ids, time ticks, module sums), so
the committed fixtures are what this writer writes. A cold build takes a few minutes, so one line is built (the
2.6 line: it runs Milvus's own wp adapter) and written once per storage (no crash variants);
MQCTL_UPSTREAM_LINES=all builds every line of tests/helpers/upstream_writer.py."""

from __future__ import annotations

import os

import pytest

from tests.helpers import upstream_writer as upstream
from tests.helpers.cli import run_cli
from tests.helpers.paths import IN_CI

pytestmark = [pytest.mark.slow, pytest.mark.etcd]

if upstream.go_binary() is None:
    if IN_CI:
        pytest.fail("no `go` on PATH: CI=true on a machine that has Go (.ci/run) must build the reference writer")
    pytest.skip("no `go` on PATH: the reference writer cannot be built on this machine", allow_module_level=True)

LINES = upstream.LINES if os.environ.get("MQCTL_UPSTREAM_LINES") == "all" else upstream.LINES[:1]


def comparable(manifest: dict) -> dict:
    """A manifest less what differs between runs of the same writer (nothing it records does today)."""
    return {k: v for k, v in manifest.items() if k != "notes"} | {"notes": sorted(manifest.get("notes") or [])}


@pytest.mark.parametrize("line", LINES, ids=[line.name for line in LINES])
def test_the_rebuilt_writer_writes_what_mqctl_reads_as_its_manifest(tmp_path, line):
    pytest.importorskip("moto.server", reason="moto[server] of .[test]")
    folders = upstream.generate(tmp_path / "out", (line,), upstream.VARIANTS[:1], hazards=())
    assert [f.name for f in folders] == [f"{line.name}-{storage}" for storage in upstream.STORAGES]
    for folder in folders:
        manifest = upstream.manifest(folder)
        committed = upstream.manifest(upstream.UPSTREAM_FIXTURES / folder.name)
        assert comparable(manifest) == comparable(committed)
        entries = manifest["logs"][0]["entries"]
        result = run_cli(
            "channels", "peek", str(manifest["logs"][0]["log_id"]), "--woodpecker", str(upstream.wal_path(folder)),
            "--limit", "1000", "--json",
        )  # fmt: skip
        assert result.code == 0, result.stderr
        messages = result.json()["messages"]
        assert [(m["position"], m["type"], m["tso"], m.get("pks") or None) for m in messages] == [
            (f"{e['segment_id']}/{e['entry_id']}", e["type"], e["time_tick"], e.get("primary_keys")) for e in entries
        ]


def test_the_bulk_variant_fills_upstream_blocks_to_their_flush_size(tmp_path):
    """The writer's bulk variant (bench/woodpecker_scale.py's WAL): inserts appended asynchronously through
    Woodpecker v0.1.37's own client fill each block object to the flush size it is configured with (2,000,000 bytes,
    tests/reference/writer/bulk.go), and mqctl reads the bucket's copy whole, without a warning."""
    pytest.importorskip("moto.server", reason="moto[server] of .[test]")
    line = next(line for line in upstream.LINES if line.tags == "woodpecker_direct")
    binary = upstream.build(line, tmp_path)
    flags = {"-entries": "30", "-entry-bytes": "300000"}
    folder = upstream.write(binary, tmp_path / "bulk", "minio", ("bulk",), flags)
    manifest = upstream.manifest(folder)
    assert (manifest["variant"], manifest["woodpecker"], manifest["entries"]) == ("bulk", "v0.1.37", 33)
    assert manifest["segments"] == 1 and manifest["rows"] == 30 * ((300_000 - 256) // (8 + 4 * 128))
    (segment,) = {p.parent for p in upstream.wal_path(folder).rglob("footer.blk")}
    sizes = {int(p.stem): p.stat().st_size for p in segment.glob("*.blk") if p.stem.isdigit()}
    # a block is uploaded once its entries reach the flush size (so never more than one entry past it); a sync on
    # the interval (200 ms) may upload a part-filled one between the appends (the first two, the last, one between)
    full = [size for size in sizes.values() if size >= 2_000_000]
    assert len(full) >= 3 and max(sizes.values()) < 2_000_000 + 310_000, sizes
    assert sum(full) >= 0.6 * manifest["payload_bytes"], sizes
    result = run_cli("channels", "woodpecker", str(upstream.wal_path(folder)), "--json")
    assert result.code == 0, result.stderr
    (read,) = result.json()["segments"]
    assert (read["state"], read["entries"], read["problems"]) == ("finalized", 33, [])
