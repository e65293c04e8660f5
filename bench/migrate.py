"""Time a full sandbox migration (RocksMQ -> natsmq) at a chosen size: per step, mqctl's own time, the time
spent waiting on Milvus, and the write-denied window (from stop-writes until resume-writes).

Without --rows the sandbox gets the rehearsal's demo data (`sandbox up --seed`: 2 collections, 3,780 rows
with deletes). With --rows N it gets N random float vectors of --dim dimensions, spread over --collections
collections (each with --partitions partitions), inserted through pymilvus in batches of --batch rows and
left unflushed, as a live deployment's newest data is; each collection has a FLAT index and is loaded.
Seeding is not timed. The migration runs as `mqctl migrate --sandbox DIR --to natsmq --yes --json` in a
subprocess; the figures come from its journal:

- seconds: the step's wall time; Milvus wait: what the step journaled as `milvus_wait_seconds` (forceDeny
  taking effect, FlushAll, stop, start, loading and counting); own: the difference, mqctl's share;
- window: from the start of stop-writes to the end of resume-writes (writes are denied in between);
- with --probe, a writer sends a zero-row insert every 0.2 s during the migration (refused as invalid when
  Milvus lets it through, so nothing is written) and reports what it saw: denied, open or down, and the
  window it felt.

    python bench/migrate.py                              # the rehearsal's 3,780 rows
    python bench/migrate.py --rows 1000000 --dim 128     # 1M rows, dim 128
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # mqctl of this checkout

OVERHEAD_GOAL_SECONDS = 2.0
WINDOW_GOAL_OVER_STOP_START = 5.0  # issue #33: the window <= Milvus's stop + start + 5 s


def mqctl(*args: str, timeout: float = 7200) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mqctl", *args], capture_output=True, text=True, check=False, timeout=timeout
    )


def seed(uri: str, rows: int, dim: int, collections: int, partitions: int, batch: int) -> dict[str, int]:
    """`rows` random vectors over `collections` x `partitions`, unflushed; returns collection -> rows."""
    import numpy as np
    from pymilvus import DataType, MilvusClient

    client = MilvusClient(uri=uri, timeout=600)
    rng = np.random.default_rng(20261126)
    seeded: dict[str, int] = {}
    began = time.monotonic()
    try:
        for c in range(collections):
            name = f"bench_{c}"
            schema = client.create_schema(auto_id=False)
            schema.add_field("id", DataType.INT64, is_primary=True)
            schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
            index = client.prepare_index_params()
            index.add_index("vector", index_type="FLAT", metric_type="L2")
            client.create_collection(name, schema=schema, index_params=index)  # created loaded, as a served one
            names = ["_default"] + [f"p{p}" for p in range(1, partitions)]
            for partition in names[1:]:
                client.create_partition(name, partition)
            share = rows // collections + (1 if c < rows % collections else 0)
            for n, start in enumerate(range(0, share, batch)):
                count = min(batch, share - start)
                vectors = rng.random((count, dim), dtype=np.float32)
                data = [{"id": start + i, "vector": vectors[i]} for i in range(count)]
                client.insert(name, data, partition_name=names[n % len(names)])
                done = sum(seeded.values()) + start + count
                print(f"\rseeding: {done:,} / {rows:,} rows ({time.monotonic() - began:.0f} s)", end="", flush=True)
            seeded[name] = share
    finally:
        client.close()
    print()
    return seeded


class Probe(threading.Thread):
    """Sends a zero-row insert to a collection every `interval` seconds, as a writer would, and records how
    Milvus answers: `denied` (forceDeny), `open` (the rate limiter let it through; the empty insert is then
    refused as invalid, so nothing is written) or `down` (no answer)."""

    def __init__(self, uri: str, collection: str, interval: float = 0.2):
        super().__init__(daemon=True)
        self.uri, self.collection, self.interval = uri, collection, interval
        self.results: list[tuple[float, str]] = []  # (monotonic time, state)
        self.stopping = threading.Event()

    def run(self) -> None:
        from mqctl.milvus.client import write_probe
        from mqctl.milvus.rpc import MilvusGrpc

        client = MilvusGrpc(self.uri, timeout=2)
        while not self.stopping.is_set():
            try:
                state = write_probe(client, self.collection)
            except Exception:
                state = "down"
            self.results.append((time.monotonic(), state))
            self.stopping.wait(self.interval)
        client.close()

    def timeline(self, origin: float) -> list[tuple[float, float, str]]:
        """(from, to, state) runs, in seconds since `origin`."""
        runs: list[tuple[float, float, str]] = []
        for t, state in self.results:
            if runs and runs[-1][2] == state:
                runs[-1] = (runs[-1][0], t - origin, state)
            else:
                runs.append((t - origin, t - origin, state))
        return runs

    def felt_window(self) -> float | None:
        """From the first insert not let through to the first one let through for good."""
        refused = [t for t, state in self.results if state != "open"]
        if not refused:
            return None
        reopened = next((t for t, state in self.results if state == "open" and t > refused[-1]), refused[-1])
        return reopened - refused[0]


def when(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def report(journal: dict[str, Any], total: float) -> dict[str, Any]:
    steps = {s["name"]: s for s in journal["steps"]}
    denied_from, denied_to = when(steps["stop-writes"]["started"]), when(steps["resume-writes"]["finished"])
    window = (denied_to - denied_from).total_seconds()
    print(f"{'step':<14} {'seconds':>8} {'Milvus wait':>12} {'own':>7}  in window")
    waited = 0.0
    rows = []
    for s in journal["steps"]:
        seconds = s["seconds"] or 0.0
        wait = s["evidence"].get("milvus_wait_seconds") or 0.0
        waited += wait
        inside = s["started"] and denied_from <= when(s["started"]) and when(s["finished"]) <= denied_to
        rows.append({"step": s["name"], "seconds": seconds, "milvus_wait": wait, "in_window": bool(inside)})
        print(f"{s['name']:<14} {seconds:8.2f} {wait:12.2f} {seconds - wait:7.2f}  {'yes' if inside else ''}")
    in_window = [r for r in rows if r["in_window"]]
    window_wait = sum(r["milvus_wait"] for r in in_window)
    stop_start = sum(r["seconds"] for r in rows if r["step"] in ("stop", "start"))
    print(f"write-denied window (stop-writes start -> resume-writes end): {window:6.2f} s")
    print(f"  of which waiting on Milvus:                                {window_wait:6.2f} s")
    print(f"  Milvus's stop + start:                                     {stop_start:6.2f} s")
    print(
        f"  over stop + start:                                         {window - stop_start:6.2f} s "
        f"(goal <= {WINDOW_GOAL_OVER_STOP_START:.0f} s)"
    )
    refresh = steps["preflight"]["evidence"].get("refresh_wait_seconds")
    if refresh is not None:
        print(f"before stop-writes, writes open, waited for Milvus's config re-read: {refresh:.2f} s (in preflight)")
    print(f"total (wall, incl. Python start-up):  {total:6.2f} s")
    print(f"waiting on Milvus:                    {waited:6.2f} s")
    print(f"mqctl's own overhead:                 {total - waited:6.2f} s (goal < {OVERHEAD_GOAL_SECONDS:.0f} s)")
    return {
        "steps": rows,
        "window": round(window, 2),
        "stop_start": round(stop_start, 2),
        "total": round(total, 2),
        "overhead": round(total - waited, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=0, help="rows to seed (0: the rehearsal's demo data)")
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--collections", type=int, default=1)
    parser.add_argument("--partitions", type=int, default=1, help="partitions per collection (incl. _default)")
    parser.add_argument("--batch", type=int, default=20_000, help="rows per insert call")
    parser.add_argument("--probe", action="store_true", help="measure the window a writer feels")
    parser.add_argument("--external-etcd", action="store_true", help="the production topology (etcd source)")
    parser.add_argument("--dir", help="sandbox folder (kept); default: a temporary one, removed")
    parser.add_argument("--json-out", help="write the figures to this file")
    args = parser.parse_args()
    parent = Path(tempfile.mkdtemp(prefix="mqctl-bench-")) if args.dir is None else None
    folder = Path(args.dir) if args.dir else parent / "sandbox"  # type: ignore[operator]
    probe = None
    try:
        up = ["sandbox", "up", "--dir", str(folder), "--json"] + (["--seed"] if not args.rows else [])
        up += ["--external-etcd"] if args.external_etcd else []
        started = mqctl(*up)
        if started.returncode:
            print(started.stderr, file=sys.stderr)
            return 3
        info = json.loads(started.stdout)
        seeded = info["seeded"] or seed(info["uri"], args.rows, args.dim, args.collections, args.partitions, args.batch)
        if args.probe:
            probe = Probe(info["uri"], sorted(seeded)[0])
            probe.start()
            time.sleep(1)
        print(f"collections: {', '.join(f'{k}={v:,}' for k, v in seeded.items())} rows")
        load_before = load_average()
        print(f"load average before the migration: {load_before}")
        began = time.monotonic()
        result = mqctl("migrate", "--sandbox", str(folder), "--to", "natsmq", "--yes", "--json")
        total = time.monotonic() - began
        if probe is not None:
            time.sleep(1)
            probe.stopping.set()
            probe.join()
        if result.returncode:
            print(result.stderr, file=sys.stderr)
            return 3
        figures = report(json.loads(result.stdout), total)
        load_after = load_average()
        print(f"load average after the migration:  {load_after}")
        figures.update(load_before=load_before, load_after=load_after)
        if probe is not None:
            runs = probe.timeline(began)
            print("what a writer saw (seconds since the migration started):")
            for start, end, state in runs:
                print(f"  {start:7.2f} - {end:7.2f}  {state}")
            felt = probe.felt_window()
            if felt is not None:
                figures["felt_window"] = round(felt, 2)
                figures["probe"] = [[round(a, 2), round(b, 2), s] for a, b, s in runs]
                print(f"window a writer felt (first refused -> let through for good): {felt:6.2f} s")
        figures.update(
            rows=sum(seeded.values()),
            dim=args.dim if args.rows else 8,
            collections=len(seeded),
            date=dt.date.today().isoformat(),
            cores=os.cpu_count(),
        )
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(figures, indent=2) + "\n")
        return 0 if figures["overhead"] < OVERHEAD_GOAL_SECONDS else 1
    finally:
        if probe is not None:
            probe.stopping.set()
        mqctl("sandbox", "down", "--dir", str(folder))
        if parent is not None:
            shutil.rmtree(parent, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
