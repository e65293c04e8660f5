"""Run the binary on CI_SAMPLE plus a seeded sample and write the fixture the quick test reads.

PYTHONPATH=. python -m tests.conformance.record [--count N] [--seed S] [--dir SANDBOX]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from tests.conformance.compare import BASE, FIXTURE, MILVUS_VERSION, SANDBOX_DIR
from tests.conformance.runner import Worker
from tests.conformance.variants import (
    CI_SAMPLE,
    RECORD_COUNT,
    RECORD_SEED,
    render,
    sample,
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=RECORD_COUNT)
    parser.add_argument("--seed", type=int, default=RECORD_SEED)
    parser.add_argument("--dir", default=None, help="a sandbox folder to reuse")
    args = parser.parse_args()
    worker = Worker(Path(args.dir or tempfile.mkdtemp(prefix="mqctl-conformance-")))
    variants = list(dict.fromkeys([*CI_SAMPLE, *sample(args.seed, args.count)]))
    records = []
    try:
        for variant in variants:
            run = worker.run(render(worker.base, variant))
            print(f"{variant.name}: {run.outcome.as_dict()} ({run.seconds} s)", flush=True)
            records.append({"params": variant.params(), "binary": run.outcome.as_dict(), "seconds": run.seconds})
    finally:
        worker.close()
    BASE.write_text(worker.base.replace(str(worker.box.dir), SANDBOX_DIR))
    FIXTURE.write_text(
        json.dumps(
            {
                "milvus": MILVUS_VERSION,
                "base": BASE.name,
                "seed": args.seed,
                "ci_sample": len(CI_SAMPLE),
                "variants": records,
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
