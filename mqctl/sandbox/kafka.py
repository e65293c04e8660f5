"""A real Apache Kafka broker for `mqctl sandbox up --mq kafka` (and the tests): one node in KRaft combined mode
(broker and controller in one JVM, no ZooKeeper) on 127.0.0.1 ports, from the broker jars of Maven Central.

The jars are resolved once by Maven (kafka-broker.pom.xml beside this module, `dependency:copy-dependencies`) into
~/.cache/mqctl/kafka-<version>/libs, under a file lock so that two processes do not resolve at once. The broker is
stopped by its PID. Without a Java runtime, or without Maven before the jars are cached, starting one is refused in
one line saying how to fix it (or to pass `--kafka HOST:PORT` of a running broker).
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

from mqctl.errors import PreconditionError

POM = Path(__file__).resolve().with_name("kafka-broker.pom.xml")
HEAP = "-Xmx320m"  # a single-node broker holding a sandbox's topics; the JVM's default would take a quarter of the RAM
KAFKA_PID_REL = "run/kafka.pid"
KAFKA_DIR_REL = "data/kafka"  # the broker's properties, its KRaft storage and log
KAFKA_PORT_KEYS = ("kafka_port", "kafka_controller_port")
NO_JAVA_HINT = "install a Java 17+ runtime (apt-get install openjdk-17-jre-headless), or pass --kafka HOST:PORT"


def kafka_version() -> str:
    """The broker version the pom pins."""
    found = re.search(r"<kafka.version>([^<]+)</kafka.version>", POM.read_text())
    if found is None:
        raise PreconditionError(f"{POM}: no <kafka.version>", hint="reinstall mqctl")
    return found.group(1)


def libs_dir() -> Path:
    return Path.home() / ".cache" / "mqctl" / f"kafka-{kafka_version()}" / "libs"


def resolve_jars(timeout: float = 600) -> Path:
    """The folder of the broker's jars, resolved from Maven Central the first time (a `complete` marker tells a
    finished resolution from one that was cut short)."""
    import fcntl

    libs = libs_dir()
    done = libs.parent / "complete"
    if done.exists():
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise PreconditionError(
            f"Maven (mvn) is needed once to fetch the Kafka {kafka_version()} broker's jars into {libs.parent}",
            hint="apt-get install maven (it reaches Maven Central), or pass --kafka HOST:PORT of a running broker",
        )
    libs.parent.mkdir(parents=True, exist_ok=True)
    with open(libs.parent / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return libs
        shutil.rmtree(libs, ignore_errors=True)
        run = subprocess.run(
            [mvn, "-q", "-B", "-f", str(POM), "dependency:copy-dependencies", "-DincludeScope=runtime"]
            + [f"-DoutputDirectory={libs}"],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if run.returncode != 0:
            last = (run.stdout + run.stderr).strip().splitlines()[-1:] or ["no output"]
            raise PreconditionError(
                f"mvn could not fetch the Kafka broker's jars: {last[0][:300]}",
                hint="check that Maven Central is reachable (mvn's settings.xml, proxy), or pass --kafka HOST:PORT",
            )
        done.write_text(kafka_version())
    return libs


def java_command() -> list[str]:
    java = shutil.which("java")
    if java is None:
        raise PreconditionError(f"no Java runtime for the Kafka {kafka_version()} broker", hint=NO_JAVA_HINT)
    return [java, HEAP, "-Xms32m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]


def cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes in URL-safe base64 without padding (what `kafka-storage random-uuid`
    prints); like Kafka's own Uuid.randomUuid, never one starting with `-`, which the tool's argument parser would
    take for an option."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def broker_properties(work: Path, port: int, controller: int, extra: dict[str, str]) -> dict[str, str]:
    """server.properties of a single-node broker on 127.0.0.1:`port` with its storage under `work`/data."""
    return {
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
        **extra,
    }


def format_storage(work: Path, settings: dict[str, str], timeout: float = 120) -> Path:
    """Write `work`/server.properties and format its KRaft storage (once: a formatted dir is left as it is)."""
    libs = resolve_jars()
    work.mkdir(parents=True, exist_ok=True)
    config = work / "server.properties"
    config.write_text("".join(f"{key}={value}\n" for key, value in settings.items()))
    if (work / "data" / "meta.properties").exists():
        return config
    fmt = subprocess.run(
        java_command()
        + [_QUIET, "-cp", f"{libs}/*", "kafka.tools.StorageTool", "format", "-t", cluster_id(), "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if fmt.returncode != 0:
        last = (fmt.stdout + fmt.stderr).strip().splitlines()[-1:] or ["no output"]
        raise PreconditionError(f"kafka-storage format failed in {work}: {last[0][:300]}", hint=NO_JAVA_HINT)
    return config


_QUIET = "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"


def launch_broker(config: Path, log: Path) -> subprocess.Popen[bytes]:
    """Start `kafka.Kafka` on `config` in its own session (a Ctrl-C in the terminal does not reach it); returns at
    once."""
    with open(log, "ab") as sink:
        return subprocess.Popen(
            java_command() + [_QUIET, "-cp", f"{resolve_jars()}/*", "kafka.Kafka", str(config)],
            stdout=sink,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def broker_answers(bootstrap: str, timeout: float = 2) -> bool:
    """A broker at `bootstrap` answers a metadata request (a port opens a little before the broker serves)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    from mqctl.mq.kafka.connect import KafkaAccess

    admin = AdminClient(KafkaAccess(bootstrap, timeout=timeout).client_config())
    try:
        return bool(admin.list_topics(timeout=timeout).brokers)
    except KafkaException:
        return False


def wait_ready(bootstrap: str, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    """Until the broker answers; PreconditionError when it exits or does not answer within `timeout`."""
    port = int(bootstrap.rpartition(":")[2])
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise PreconditionError(
                f"the Kafka broker exited with code {proc.returncode} while starting", hint=f"see {log}"
            )
        if _listening(port) and broker_answers(bootstrap):
            return
        time.sleep(0.2)
    raise PreconditionError(f"the Kafka broker did not answer within {timeout:.0f} s", hint=f"see {log}")


def stop_broker(pid: int, grace: float = 15) -> None:
    """SIGTERM (the broker shuts down cleanly), SIGKILL after `grace` seconds; reaps it when it is a child."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            finished, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:  # not a child of this process: watch /proc instead
            if not Path(f"/proc/{pid}").exists() or _zombie(pid):
                return
            finished = 0
        if finished:
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True
