"""mqctl's runtime for Spark executors that have nothing installed: packed once, cached, shipped.

On a cluster the executors are other processes, often on other hosts, whose Python has neither
mqctl nor its dependencies. The `milvus_mq` reader needs, on each executor: mqctl itself, the
protobuf modules of pymilvus (decoding), protobuf, rocksdict, nats-py (with nkeys/pynacl for NKey
auth), pyarrow (Spark's Python data sources hand over Arrow batches), numpy and rich (mqctl's
output helpers, which the readers import), the MinIO SDK with its dependencies (a Woodpecker WAL read
from a bucket) and confluent-kafka with its bundled librdkafka (a Kafka topic). Those packages,
copied from the driver's own environment (native parts included), are packed into one archive
that Spark unpacks on every executor (`spark.archives`, or an archive artifact over Spark
Connect) as the folder `mqctl_runtime`. pyspark is not shipped: it is the cluster's own.

Native parts only load in the same Python minor version on the same platform, so the archive is
keyed by mqctl version (and a digest of its code and its dependencies' versions), Python version
and platform, and cached under the user's cache folder. Executors must run the driver's Python
minor version; the data source checks that and says so (see datasource.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import sysconfig
import tarfile
import tempfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from mqctl.replay.reader.worker import RUNTIME_DIR
from mqctl.replay.reader.worker import RUNTIME_MANIFEST as MANIFEST

# Distributions the executor side of milvus_mq imports; pymilvus only for its generated protobuf modules.
EXECUTOR_DISTRIBUTIONS = (
    "protobuf",
    "rocksdict",
    "nats-py",
    "nkeys",
    "pynacl",
    "cffi",
    "pycparser",
    "pyarrow",
    "numpy",
    "rich",
    "pygments",
    "markdown-it-py",
    "mdurl",
    # a Woodpecker WAL read straight from MinIO/S3: the MinIO SDK and what it imports
    "minio",
    "urllib3",
    "certifi",
    "argon2-cffi",
    "argon2-cffi-bindings",
    "pycryptodome",
    "typing-extensions",
    # a Kafka topic (replay --kafka): confluent-kafka, with the librdkafka its wheel bundles
    "confluent-kafka",
)
PYMILVUS_PARTS = ("pymilvus/__init__.py", "pymilvus/grpc_gen/")
# Never needed at run time: headers, Cython sources, tests, byte code of this machine.
SKIPPED_PARTS = ("/include/", "/tests/", "/__pycache__/")
SKIPPED_SUFFIXES = (".pyc", ".pxd", ".pyx", ".pxi", ".h", ".hpp", ".cc", ".cpp")
# Spark Connect cannot set an executor's PYTHONPATH per session; its workers start through this
# (spark.sql.execution.pyspark.python), which puts the runtime first and runs the host's Python of
# the driver's minor version (the cluster's PYSPARK_PYTHON when it names one).
PYTHON_LAUNCHER = """#!/bin/sh
runtime="$(cd "$(dirname "$0")/.." && pwd)"
export PYTHONPATH="$runtime${{PYTHONPATH:+:$PYTHONPATH}}"
for python in "$PYSPARK_PYTHON" python{minor} python3; do
  case "$python" in ""|*mqctl_runtime/bin/python) continue ;; esac
  command -v "$python" >/dev/null 2>&1 && exec "$python" "$@"
done
echo "mqctl: no python{minor} on $(hostname) to run Spark's Python workers" >&2
exit 127
"""


def runtime_key() -> str:
    """The cache key: mqctl version, Python version, platform, and a digest of what goes in."""
    import mqctl

    digest = hashlib.sha256()
    for dist in ("pymilvus", *EXECUTOR_DISTRIBUTIONS):
        digest.update(f"{dist}=={_version(dist)}\n".encode())
    package = Path(mqctl.__file__).parent
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode() + path.read_bytes())
    python = f"py{sys.version_info.major}.{sys.version_info.minor}"
    return f"mqctl-{mqctl.__version__}-{python}-{sysconfig.get_platform()}-{digest.hexdigest()[:12]}"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mqctl" / "spark-runtime"


def runtime_archive() -> tuple[Path, Path]:
    """The packed runtime for this driver and the same unpacked (the driver's own Python workers,
    which plan the data source's partitions, use that); built on first use, then cached."""
    key = runtime_key()
    archive, folder = cache_dir() / f"{key}.tar.gz", cache_dir() / key
    if not archive.exists() or not (folder / MANIFEST).exists():
        _build(archive, folder)
    return archive, folder


def manifest() -> dict[str, str]:
    """What executors compare against their own interpreter before importing native code."""
    import mqctl

    return {
        "mqctl": mqctl.__version__,
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "platform": sysconfig.get_platform(),
    }


def _build(archive: Path, folder: Path) -> None:
    """Copy the packages into a staging folder and pack it; folder and archive appear atomically."""
    import mqctl

    archive.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mqctl-runtime-", dir=archive.parent) as work:
        stage = Path(work) / RUNTIME_DIR
        package = Path(mqctl.__file__).parent
        shutil.copytree(package, stage / "mqctl", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        _copy_files(stage, "pymilvus", lambda name: name.startswith(PYMILVUS_PARTS))
        for dist in EXECUTOR_DISTRIBUTIONS:
            _copy_files(stage, dist, lambda name: True)
        (stage / MANIFEST).write_text(json.dumps(manifest()))
        launcher = stage / "bin" / "python"
        launcher.parent.mkdir()
        launcher.write_text(PYTHON_LAUNCHER.format(minor=manifest()["python"]))
        launcher.chmod(0o755)
        partial = Path(work) / archive.name
        # Level 1: executors fetch and unpack it once per application; packing time matters more.
        with tarfile.open(partial, "w:gz", compresslevel=1) as tar:
            for path in sorted(stage.iterdir()):
                tar.add(path, arcname=path.name)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(stage, folder)
        os.replace(partial, archive)
    _prune(archive.parent, folder.name.rsplit("-", 1)[0], keep=folder.name)


def _prune(cache: Path, prefix: str, keep: str) -> None:
    """Runtimes of the same mqctl version, Python and platform built from other code: never used again."""
    for entry in cache.glob(f"{prefix}-*"):
        if entry.name not in (keep, f"{keep}.tar.gz"):
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)


def _copy_files(stage: Path, dist: str, wanted: Callable[[str], bool]) -> None:
    """The installed files of one distribution (its RECORD), without metadata and build leftovers."""
    try:
        found = metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        return  # optional on this driver (e.g. nkeys without NKey auth): executors will not need it either
    for file in found.files or ():
        name = str(file).replace(os.sep, "/")
        if (
            name.startswith("..")
            or ".dist-info/" in name
            or not wanted(name)
            or name.endswith(SKIPPED_SUFFIXES)
            or any(part in f"/{name}" for part in SKIPPED_PARTS)
        ):
            continue
        source = Path(file.locate())
        if source.is_file():
            target = stage / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "absent"
