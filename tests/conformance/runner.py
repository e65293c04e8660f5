"""Start the real Milvus 2.3.5 binary of a sandbox on a config and record what it did.

One sandbox folder per worker: created once (binary, free ports, its own etcd config), then for
each variant only the config is swapped and the data folder emptied, so a run costs one start.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from tests.conformance.classify import Outcome, classify

WAIT_SECONDS = 90  # a healthy 2.3.5 standalone answers within ~10-40 s on a loaded 2-core machine


@dataclass
class Run:
    outcome: Outcome
    seconds: float
    log_tail: str


class Worker:
    """A sandbox folder reused for many runs of the binary."""

    def __init__(self, directory: Path):
        from mqctl.sandbox import server as sandbox

        self.box = sandbox.Sandbox(directory)
        if not self.box.exists():
            self.box.create("rocksmq")
        self.base = (
            self.box.config_path.read_text()
            if not (self.box.dir / "base.yaml").exists()
            else (self.box.dir / "base.yaml").read_text()
        )
        (self.box.dir / "base.yaml").write_text(self.base)  # the rendered file, before any variant

    def run(self, config_text: str, wait: float = WAIT_SECONDS, fresh: bool = True) -> Run:
        """Start the binary on `config_text`, classify, stop it. `fresh` empties the data folder first."""
        box = self.box
        box.stop(timeout=2)
        if fresh:
            shutil.rmtree(box.dir / "data", ignore_errors=True)
            (box.dir / "data").mkdir()
        for log in (box.dir / "logs").glob("milvus-std*.log"):
            log.write_text("")
        box.config_path.write_text(config_text)
        began = time.monotonic()
        proc = box.launch()
        outcome = None
        try:
            while outcome is None:
                exited = proc.poll() is not None
                healthy = not exited and box.healthy()
                timed_out = time.monotonic() - began > wait
                outcome = classify(self.logs(), exited=exited, healthy=healthy, timed_out=timed_out)
                if outcome is None:
                    time.sleep(0.5)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        return Run(outcome, round(time.monotonic() - began, 1), self.logs()[-2000:])

    def logs(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted((self.box.dir / "logs").glob("milvus-std*.log")))

    def close(self) -> None:
        self.box.stop(timeout=2)
