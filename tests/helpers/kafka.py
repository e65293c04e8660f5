"""A real Apache Kafka broker for the tests: a single node in KRaft combined mode (broker and controller in one
JVM, no ZooKeeper) on free 127.0.0.1 ports, from the broker jars of Maven Central.

The jars are resolved once by Maven (tests/kafka_broker/pom.xml, `dependency:copy-dependencies`) into
~/.cache/mqctl/kafka-<version>/libs; `.ci/run` does it before the tests, and a developer's first run does it here
(under a file lock, so two xdist workers do not resolve at once). The broker is stopped by its PID.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from mqctl.host.ports import free_ports

POM = Path(__file__).resolve().parents[1] / "kafka_broker" / "pom.xml"
HEAP = "-Xmx320m"  # a single-node test broker holds a few MB; the JVM's default would take a quarter of the RAM


def kafka_version() -> str:
    """The broker version the pom pins."""
    found = re.search(r"<kafka.version>([^<]+)</kafka.version>", POM.read_text())
    if found is None:
        raise RuntimeError(f"{POM}: no <kafka.version>")
    return found.group(1)


def libs_dir() -> Path:
    return Path.home() / ".cache" / "mqctl" / f"kafka-{kafka_version()}" / "libs"


def resolve_jars(timeout: float = 600) -> Path:
    """The folder of the broker's jars, resolved from Maven Central the first time (a `complete` marker tells a
    finished resolution from one that was cut short)."""
    libs = libs_dir()
    done = libs.parent / "complete"
    if done.exists():
        return libs
    libs.parent.mkdir(parents=True, exist_ok=True)
    with open(libs.parent / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return libs
        mvn = shutil.which("mvn")
        if mvn is None:
            raise RuntimeError("Maven (mvn) is needed once to fetch the Kafka broker's jars; apt-get install maven")
        shutil.rmtree(libs, ignore_errors=True)
        run = subprocess.run(
            [mvn, "-q", "-B", "-f", str(POM), "dependency:copy-dependencies", "-DincludeScope=runtime"]
            + [f"-DoutputDirectory={libs}"],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if run.returncode != 0:
            raise RuntimeError(f"mvn could not fetch the Kafka broker's jars:\n{(run.stdout + run.stderr)[-3000:]}")
        done.write_text(kafka_version())
    return libs


def _java() -> list[str]:
    java = shutil.which("java")
    if java is None:
        raise RuntimeError("a Java 17+ runtime is needed for the Kafka broker")
    return [java, HEAP, "-Xms32m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]


def _cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes in URL-safe base64 without padding (what `kafka-storage random-uuid`
    prints); like Kafka's own Uuid.randomUuid, never one starting with `-`, which the tool's argument parser would
    take for an option."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _properties(work: Path, port: int, controller: int, extra: dict[str, str]) -> Path:
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(work / "data"),
        "num.partitions": "1",  # what Milvus's auto-created topics get (one partition per pchannel)
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "log.retention.check.interval.ms": "1000",  # retention tests see deleted segments within seconds
        "log.initial.task.delay.ms": "0",  # ... from the start (the first check otherwise waits 30 s)
        **extra,
    }
    path = work / "server.properties"
    path.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    return path


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _wait_ready(bootstrap: str, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    """Until the broker answers a metadata request (its port opens a little before it serves)."""
    from confluent_kafka.admin import AdminClient

    port = int(bootstrap.rpartition(":")[2])
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the Kafka broker exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        if _listening(port):
            admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
            with contextlib.suppress(Exception):
                if admin.list_topics(timeout=2).brokers:
                    return
        time.sleep(0.2)
    raise RuntimeError(f"the Kafka broker did not start within {timeout:.0f} s:\n{log.read_text()[-3000:]}")


@contextlib.contextmanager
def running_kafka(work: Path, extra: dict[str, str] | None = None, timeout: float = 90) -> Iterator[str]:
    """A formatted KRaft storage dir in `work` and a broker on it; yields its bootstrap (127.0.0.1:PORT)."""
    libs = resolve_jars()
    work.mkdir(parents=True, exist_ok=True)
    port, controller = free_ports(2)
    config = _properties(work, port, controller, extra or {})
    classpath = f"{libs}/*"
    log = work / "broker.log"
    quiet = "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"
    fmt = subprocess.run(
        _java()
        + [quiet, "-cp", classpath, "kafka.tools.StorageTool", "format"]
        + ["-t", _cluster_id(), "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if fmt.returncode != 0:
        raise RuntimeError(f"kafka-storage format failed:\n{(fmt.stdout + fmt.stderr)[-3000:]}")
    with open(log, "wb") as sink:
        proc = subprocess.Popen(
            _java() + [quiet, "-cp", classpath, "kafka.Kafka", str(config)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C in a terminal running pytest stops pytest, which stops the broker
        )
    bootstrap = f"127.0.0.1:{port}"
    try:
        _wait_ready(bootstrap, proc, log, timeout)
        yield bootstrap
    finally:
        stop(proc.pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)


def stop(pid: int, grace: float = 15) -> None:
    """SIGTERM (the broker shuts down cleanly), SIGKILL after `grace` seconds."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            finished, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if finished:
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def produce(bootstrap: str, topic: str, messages: list[tuple[bytes, dict[str, str]]]) -> None:
    """Write messages as Milvus 2.3–2.5 does (pkg/mq/msgstream/mqwrapper/kafka/kafka_producer.go): the payload as
    the record's value, the properties as headers, partition 0, zstd (kafka_client.go's producer config); the
    topic is auto-created as Milvus relies on."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "compression.codec": "zstd", "linger.ms": 2})
    for payload, properties in messages:
        producer.produce(topic, value=payload, partition=0, headers=list(properties.items()))
    left = producer.flush(30)
    assert left == 0, f"{left} records not delivered to {topic}"


FIXTURE_26_PREFIX = "wal26-"  # the fixture's topics again, as 2.6 messages (properties in headers)


def publish_fixture(bootstrap: str) -> dict[str, int]:
    """The RocksMQ fixture's topics (real Milvus 2.3.5 messages) under their own names, and the 2.6 form of their
    messages (tests/helpers/woodpecker_wal.py `envelope`) under FIXTURE_26_PREFIX + name; returns topic -> count."""
    from tests.helpers.woodpecker_wal import fixture_logs, fixture_topics

    written = {}
    for topic, payloads in fixture_topics().items():
        produce(bootstrap, topic, [(payload, {}) for payload in payloads])
        written[topic] = len(payloads)
    for log in fixture_logs():
        if log.messages:
            produce(bootstrap, FIXTURE_26_PREFIX + log.channel, log.messages)
            written[FIXTURE_26_PREFIX + log.channel] = len(log.messages)
    return written
