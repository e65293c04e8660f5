"""Run the binary on CI_SAMPLE, a seeded sample of the MQ matrix and the value forms, and write the fixture
the quick test reads.

PYTHONPATH=. python -m tests.helpers.conformance.record [--count N] [--seed S] [--dir SANDBOX] [--new-only]

--new-only keeps the outcomes already recorded for the same variants and base file, and runs only the others.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from tests.helpers.conformance.compare import BASE, FIXTURE, MILVUS_VERSION, SANDBOX_DIR
from tests.helpers.conformance.runner import Worker
from tests.helpers.conformance.variants import (
    CI_SAMPLE,
    ETCD_ENDPOINT,
    RECORD_COUNT,
    RECORD_SEED,
    VALUE_VARIANTS,
    Variant,
    recorded_variants,
)

FORMAT = 2  # 2: value-form parameters (written, section, env, etcd) beside the MQ matrix's


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=RECORD_COUNT)
    parser.add_argument("--seed", type=int, default=RECORD_SEED)
    parser.add_argument("--dir", default=None, help="a sandbox folder to reuse")
    parser.add_argument("--new-only", action="store_true", help="run only variants the fixture does not hold")
    args = parser.parse_args()
    kept: dict[Variant, dict] = {}
    if args.new_only and FIXTURE.exists():
        kept = {Variant(**r["params"]): r for r in json.loads(FIXTURE.read_text())["variants"]}
    worker = Worker(Path(args.dir or tempfile.mkdtemp(prefix="mqctl-conformance-")))
    if not kept:  # kept outcomes were recorded on the base file already there
        BASE.write_text(worker.base.replace(str(worker.box.dir), SANDBOX_DIR))
    records = []
    try:
        for variant in recorded_variants(args.seed, args.count):
            if variant in kept:
                records.append(kept[variant])
                continue
            run = worker.run_variant(variant)
            print(f"{variant.name}: {run.outcome.as_dict()} ({run.seconds} s)", flush=True)
            records.append({"params": variant.params(), "binary": run.outcome.as_dict(), "seconds": run.seconds})
            _write(records, args.seed, kept)  # after each run: a later --new-only goes on from here
    finally:
        worker.close()
    _write(records, args.seed, kept)


def _write(records: list[dict], seed: int, kept: dict[Variant, dict]) -> None:
    """The fixture: what was run, then what was kept and not yet reached (nothing recorded is lost)."""
    reached = {Variant(**r["params"]) for r in records}
    rest = [r for v, r in kept.items() if v not in reached]
    FIXTURE.write_text(
        json.dumps(
            {
                "format": FORMAT,
                "milvus": MILVUS_VERSION,
                "base": BASE.name,
                "seed": seed,
                "ci_sample": len(CI_SAMPLE),
                "value_variants": len(VALUE_VARIANTS),
                "etcd_endpoint": ETCD_ENDPOINT,
                "variants": records + rest,
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
