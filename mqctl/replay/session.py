"""Starting Spark for a replay: an embedded local Spark by default, any cluster with --master.

Checks what Spark needs before it starts (pyspark, a Java 17+ runtime), so a missing piece is one
clear error rather than a JVM stack trace.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from mqctl.errors import InputError, PreconditionError

MASTER_PATTERN = re.compile(r"^(local(\[(\*|\d+)(,\d+)?\])?|local-cluster\[.+\]|spark://.+|yarn|k8s://.+|mesos://.+)$")
JAVA_HINT = ("install a Java 17+ runtime (Debian/Ubuntu: apt-get install openjdk-17-jre-headless; "
             "macOS: brew install openjdk@17) or point JAVA_HOME at one")
# Spark's own INFO/WARN lines would bury mqctl's output; errors still show.
LOG4J2_CONFIG = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark: %p %c{1}: %m%n%ex
"""


def is_local(master: str) -> bool:
    return master.startswith("local")


def check_master(master: str) -> None:
    if not MASTER_PATTERN.match(master):
        raise InputError(f"--master {master!r} is not a Spark master URL",
                         hint="use local[*], local[N], spark://HOST:PORT, yarn or k8s://https://HOST:PORT")


def parse_spark_conf(items: list[str]) -> dict[str, str]:
    """`K=V` pairs from --spark-conf."""
    conf = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--spark-conf {item!r} is not KEY=VALUE", hint="e.g. --spark-conf spark.executor.memory=4g")
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


def start_session(master: str = "local[*]", conf: dict[str, str] | None = None, app_name: str = "mqctl replay"):
    """A SparkSession with the `milvus_mq` data source registered."""
    check_master(master)
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise PreconditionError("pyspark is not installed", hint="pip install 'mqctl[spark]'") from None
    major = java_major_version()
    if major < 17:
        raise PreconditionError(f"Java {major} found, but Spark 4 needs Java 17 or newer", hint=JAVA_HINT)
    settings = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                "spark.sql.session.timeZone": "UTC", **(conf or {})}
    if is_local(master):
        # Python workers (also the data source's planner, which reads no Spark setting for it) must
        # be this interpreter, which has mqctl; a cluster's Python is its own business.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    settings.setdefault("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={_log_config()}")
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    from mqctl.replay.datasource import register

    register(spark)
    return spark
