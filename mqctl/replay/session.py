"""Starting Spark for a replay: an embedded local Spark by default, any cluster with --master, or a
Spark Connect server with --remote.

Checks what Spark needs before it starts (pyspark, a Java 17+ runtime), so a missing piece is one
clear error rather than a JVM stack trace.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mqctl import interrupts
from mqctl.errors import InputError, PreconditionError

MASTER_PATTERN = re.compile(r"^(local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[.+\]|spark://.+|yarn|k8s://.+|mesos://.+)$")
CONNECT_PATTERN = re.compile(r"^sc://[^/\s]+")
JAVA_HINT = (
    "install a Java 17+ runtime (Debian/Ubuntu: apt-get install openjdk-17-jre-headless; "
    "macOS: brew install openjdk@17) or point JAVA_HOME at one"
)
# Spark's own INFO/WARN lines would bury mqctl's output; errors still show.
LOG4J2_CONFIG = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark: %p %c{1}: %m%n%ex
logger.writer.name = org.apache.spark.sql.execution.datasources.FileFormatWriter
logger.writer.level = off
"""
# FileFormatWriter logs "Aborting job" with the whole Java stack when a write stops: the cause reaches mqctl as
# the write's own exception (one line), and an interrupted replay (Ctrl-C, SIGTERM) has nothing more to say


def is_local(master: str) -> bool:
    return master.startswith("local")


def progress_host(spark: Any) -> str:
    """The address executors can reach this process at (they report progress to it): the
    driver's host on a cluster; with Spark Connect, this host's address towards the server."""
    if not spark.__class__.__module__.startswith("pyspark.sql.connect"):
        master = spark.sparkContext.master
        return "127.0.0.1" if is_local(master) else spark.conf.get("spark.driver.host", "127.0.0.1")
    server = spark.client.host
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((server, 15002))  # no packet is sent: this only picks the outgoing interface
            return str(probe.getsockname()[0])
    except OSError:
        return "127.0.0.1"


def check_master(master: str) -> None:
    """A master Spark can parse: its hosts and ports are checked here, so a missing IPv6 bracket is one line
    rather than a Java stack from SparkContext."""
    from mqctl.urls import check_url

    if not MASTER_PATTERN.match(master):
        raise InputError(
            f"--master {master!r} is not a Spark master URL",
            hint="use local[*], local[N], spark://HOST:PORT, yarn or k8s://https://HOST:PORT",
        )
    scheme, _, rest = master.partition("://")
    if scheme == "spark":  # spark://H1:P1,H2:P2 for standby masters
        for host in rest.split(","):
            check_url(f"spark://{host}", "--master")
    elif scheme == "k8s":
        check_url(rest if "://" in rest else f"https://{rest}", "--master")
    elif scheme == "mesos":
        check_url(master, "--master")


def check_remote(remote: str) -> None:
    from mqctl.urls import check_url

    if not CONNECT_PATTERN.match(remote):
        raise InputError(f"--remote {remote!r} is not a Spark Connect URL", hint="use sc://HOST:PORT")
    check_url(remote, "--remote")


def parse_spark_conf(items: list[str]) -> dict[str, str]:
    """`K=V` pairs from --spark-conf."""
    conf = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(
                f"--spark-conf {item!r} is not KEY=VALUE", hint="e.g. --spark-conf spark.executor.memory=4g"
            )
        conf[key.strip()] = value
    return conf


def java_major_version() -> int:
    """The major version of the Java runtime Spark will use; a clear error when there is none."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        raise PreconditionError("no Java runtime found: Spark needs Java 17 or newer", hint=JAVA_HINT)
    try:
        probe = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise PreconditionError(f"cannot run {java}: {err}", hint=JAVA_HINT) from None
    found = re.search(r'version "(\d+)(?:\.(\d+))?', probe.stderr + probe.stdout)
    if not found:
        raise PreconditionError(f"cannot tell the version of {java}", hint=JAVA_HINT)
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major  # "1.8" is Java 8


def _log_config() -> Path:
    """mqctl's log4j2 configuration as a file for the driver JVM (named by content, written once)."""
    digest = hashlib.sha256(LOG4J2_CONFIG.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"mqctl-spark-log4j2-{digest}.properties"
    if not path.exists():
        path.write_text(LOG4J2_CONFIG)
    return path


def ship_runtime(settings: dict[str, str]) -> dict[str, str]:
    """Settings that ship mqctl's runtime archive to every executor and put it first on the Python
    path of every worker before it unpickles anything (Spark's data source worker imports pyarrow
    first thing). The driver's own Python workers, which plan the partitions with the executors'
    Python, find the unpacked copy in the cache by its absolute path, which executors do not have."""
    from mqctl.replay.reader.worker import RUNTIME_DIR
    from mqctl.replay.shipping import runtime_archive

    archive, folder = runtime_archive()
    archives = [item for item in settings.get("spark.archives", "").split(",") if item]
    python_path = _path_list([RUNTIME_DIR, str(folder)], settings.get("spark.executorEnv.PYTHONPATH", ""))
    return {
        "spark.archives": ",".join([*archives, f"{archive}#{RUNTIME_DIR}"]),
        "spark.executorEnv.PYTHONPATH": python_path,
    }


def _path_list(first: list[str], rest: str) -> str:
    return os.pathsep.join([*first, *[item for item in rest.split(os.pathsep) if item and item not in first]])


def start_session(
    master: str = "local[*]",
    conf: dict[str, str] | None = None,
    app_name: str = "mqctl replay",
    *,
    ship: bool = True,
    remote: str | None = None,
) -> Any:
    """A SparkSession with the `milvus_mq` data source registered: an embedded or cluster Spark
    for `master`, or a Spark Connect server for `remote` (sc://HOST:PORT). Off local mode, `ship`
    sends mqctl's runtime to the executors (see shipping.py); without it they need mqctl installed."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise PreconditionError("pyspark is not installed", hint="pip install 'mqctl[spark]'") from None
    if remote:
        return _connect_session(SparkSession, remote, conf or {}, app_name, ship)
    check_master(master)
    major = java_major_version()
    if major < 17:
        raise PreconditionError(f"Java {major} found, but Spark 4 needs Java 17 or newer", hint=JAVA_HINT)
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        **(conf or {}),
    }
    # The Python of all workers, also of the data source's planner on the driver (which reads no
    # Spark setting for it): PySpark takes it from PYSPARK_PYTHON when the context starts.
    python = os.environ.get("PYSPARK_PYTHON")
    if is_local(master):
        python = python or sys.executable  # has mqctl; a cluster's Python is its own business
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    else:
        python = settings.get("spark.pyspark.python", python)  # as spark-submit applies it
        if ship:
            settings.update(ship_runtime(settings))
    settings.setdefault("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={_log_config()}")
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    with _environment("PYSPARK_PYTHON", python):
        spark = builder.getOrCreate()
    interrupts.reclaim()  # SparkContext took SIGINT over: Ctrl-C unwinds as everywhere in mqctl again
    _quiet_accumulator_server(spark.sparkContext)
    spark.sparkContext.setLogLevel("ERROR")
    from mqctl.replay.datasource import register

    register(spark)
    return spark


def _quiet_accumulator_server(context: Any) -> None:
    """PySpark's accumulator server (a socketserver thread in this process) prints a traceback on stderr when
    the JVM's connection to it ends mid-update, as it does when a SIGTERM to the process group stops the JVM
    with mqctl: the command's own one line says it was interrupted, the traceback says nothing more."""
    server = getattr(context, "_accumulatorServer", None)
    if server is not None:
        server.handle_error = lambda _request, _address: None


def _connect_session(session_class: Any, remote: str, conf: dict[str, str], app_name: str, ship: bool) -> Any:
    """A Spark Connect session. The runtime goes as an archive artifact of this session, and its
    Python workers run through the archive's `bin/python`, which puts the runtime on the path."""
    from mqctl.replay.datasource import register
    from mqctl.replay.reader.worker import RUNTIME_DIR

    check_remote(remote)
    builder = session_class.builder.remote(remote).appName(app_name)
    for key, value in {"spark.sql.session.timeZone": "UTC", **conf}.items():
        builder = builder.config(key, value)
    try:
        spark = builder.getOrCreate()
        if ship:
            from mqctl.replay.shipping import runtime_archive

            archive, _ = runtime_archive()
            spark.addArtifacts(f"{archive}#{RUNTIME_DIR}", archive=True)
            spark.conf.set("spark.sql.execution.pyspark.python", f"{RUNTIME_DIR}/bin/python")
    except ImportError as err:
        raise PreconditionError(f"Spark Connect needs {err.name}", hint="pip install 'mqctl[spark]'") from None
    except Exception as err:
        raise PreconditionError(
            f"cannot use the Spark Connect server at {remote}: {str(err).splitlines()[0]}",
            hint="check --remote and that the server runs (sbin/start-connect-server.sh)",
        ) from err
    register(spark)
    return spark


@contextlib.contextmanager
def _environment(name: str, value: str | None) -> Iterator[None]:
    """`name` set to `value` (when not None) for the block only."""
    before = os.environ.get(name)
    if value is not None:
        os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before
