"""Benchmark the Woodpecker reader at scale against the plainest reads of the same files (issue 33, item 1, the
folder part; issue 29, class 3).

- Listing: a local-layout WAL of N segments (default 20,000, one small finalized segment each, in one log) listed
  as `channels list --woodpecker` lists it (`WoodpeckerSource.list_channels` without message times) vs a bare
  walk of the folders reading every `data.log` and computing one CRC over it.
- A finalized segment of 32 MiB (about 64-KiB entries in 2-MiB blocks) read by `read_local_segment` (every record
  and block CRC, the structural checks, the entries decoded) vs reading the file and computing one CRC over it.

The segments are written by tests/helpers/woodpecker_segments.py (the cited layout). Figures only; the scaling
itself is asserted by tests/mq/woodpecker/test_linear_cost.py, by counting work.

Usage: python bench/woodpecker_scale.py [--segments 20000] [--segment-mib 32]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--segments", type=int, default=20_000)
    parser.add_argument("--segment-mib", type=int, default=32)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wp-bench-") as work:
        listing(Path(work), args.segments)
        segment_read(Path(work), args.segment_mib)


if __name__ == "__main__":
    main()
