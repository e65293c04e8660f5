"""Startup cost of the CLI: median wall time of `mqctl --help` vs `python -c pass` over 20 runs.

The root help is printed without importing click, typer or rich; the goal is a ratio of at most 2.
Run: python bench/cli_startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time


def median_seconds(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    script = shutil.which("mqctl", path=os.path.dirname(sys.executable)) or shutil.which("mqctl")
    command = [script, "--help"] if script else [sys.executable, "-m", "mqctl", "--help"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)  # warm the file cache
    help_time = median_seconds(command, runs)
    bare_time = median_seconds([sys.executable, "-c", "pass"], runs)
    print(f"mqctl --help    median {help_time * 1000:7.1f} ms over {runs} runs")
    print(f"python -c pass  median {bare_time * 1000:7.1f} ms over {runs} runs")
    print(f"ratio           {help_time / bare_time:7.2f} (goal <= 2)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
