"""A real Milvus 2.3.5 standalone (PyPI package ``milvus``) in a folder, for rehearsals and tests.

The package re-renders ``<DIR>/configs/milvus.yaml`` from its template on every start, which
would undo any migration edit. So the config is rendered once, at the first ``up``, and later
starts run ``<DIR>/bin/milvus run standalone`` directly (working directory DIR, the same
environment as the package), so that the file in DIR is the one Milvus reads. Every listener
(gRPC ports, embedded etcd client and peer, metrics, natsmq) gets a free port so several
sandboxes can run side by side.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from mqctl.errors import InputError, PreconditionError

STATE_FILE = "sandbox.json"
CONFIG_REL = "configs/milvus.yaml"
ETCD_CONFIG_REL = "configs/etcd.yaml"
LOG_REL = "logs/milvus-stdout.log"
STDERR_REL = "logs/milvus-stderr.log"
PID_REL = "run/sandbox.pid"
NATS_STORE_REL = "data/natsmq"
SUPPORTED_MQ = ("rocksmq", "natsmq")
DEMO_COLLECTIONS = {"demo_docs": 3000, "demo_events": 1200}  # name -> rows inserted by --seed
DEMO_DIM = 8

# Port keys of the package's template, plus the listeners the template leaves fixed.
TEMPLATE_PORT_KEYS = ("proxy_port", "proxy_internal_port", "root_coord_port", "query_coord_port", "query_node_port",
                      "index_coord_port", "index_node_port", "data_coord_port", "data_node_port", "etcd_port")
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

    def migrate_fill(self) -> dict:
        """What `mqctl migrate --sandbox DIR` takes from here (MigrateOptions field names)."""
        return {"configs": [self.config], "milvus": self.uri, "etcd": self.etcd, "stop_cmd": self.stop_cmd,
                "start_cmd": self.start_cmd, "log_file": self.log, "health_url": self.health_url}


class Sandbox:
    """One sandbox folder: its ports (fixed at creation), process and files."""

    def __init__(self, directory: str | os.PathLike):
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
        state_path = self.dir / STATE_FILE
        try:
            return json.loads(state_path.read_text())["ports"]
        except FileNotFoundError:
            raise PreconditionError(f"{self.dir} is not a sandbox (no {STATE_FILE} in it)",
                                    hint=f"create one with `mqctl sandbox up --dir {self.dir}`") from None
        except (OSError, ValueError, KeyError) as err:
            raise PreconditionError(f"{self.dir} is not a sandbox ({state_path}: {err})",
                                    hint=f"create one with `mqctl sandbox up --dir {self.dir}`") from err

    # --- facts for users ----------------------------------------------------
    def info(self) -> SandboxInfo:
        ports = self.ports
        me = [sys.executable, "-m", "mqctl", "sandbox"]
        return SandboxInfo(
            dir=str(self.dir),
            uri=f"http://127.0.0.1:{ports['proxy_port']}",
            config=str(self.config_path),
            log=str(self.log_path),
            etcd=f"http://127.0.0.1:{ports['etcd_port']}",
            health_url=f"http://127.0.0.1:{ports['metrics_port']}/healthz",
            stop_cmd=shlex.join([*me, "down", "--dir", str(self.dir)]),
            start_cmd=shlex.join([*me, "up", "--dir", str(self.dir)]),
            running=self.healthy(),
            mq=self.effective_mq(),
            pid=self.pid(),
        )

    def effective_mq(self) -> str | None:
        """The MQ Milvus will start on, as the `mqctl config` resolver sees this config."""
        from mqctl.config.resolve import resolve

        return resolve([str(self.config_path)], mode="standalone", milvus_version="2.3.5", env={}).effective_mq

    # --- process -------------------------------------------------------------
    def pid(self) -> int | None:
        """The Milvus pid if that process is alive and is this sandbox's milvus binary."""
        try:
            pid = int((self.dir / PID_REL).read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            return None
        if not cmdline or not cmdline[0].endswith(b"/milvus") or str(self.dir).encode() not in cmdline[0]:
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

    def create(self, mq: str) -> None:
        """Render the config once with the package, then point every listener at a free port."""
        try:
            import milvus
        except ImportError as err:
            raise PreconditionError("the `milvus` package (embedded Milvus 2.3.5) is not installed",
                                    hint="pip install 'mqctl[sandbox]' (Linux x86_64)") from err
        ports = free_ports(len(TEMPLATE_PORT_KEYS) + len(EXTRA_PORT_KEYS))
        port_map = dict(zip(TEMPLATE_PORT_KEYS + EXTRA_PORT_KEYS, ports))
        self.dir.mkdir(parents=True, exist_ok=True)
        server_config = milvus.MilvusServerConfig(data_dir=str(self.dir),
                                                  **{k: port_map[k] for k in TEMPLATE_PORT_KEYS})
        server_config.resolve()  # writes configs/milvus.yaml and glog.conf
        # The package's own helper that unpacks the Milvus binary and its libraries into DIR/bin.
        milvus._initialize_data_files(str(self.dir))  # noqa: SLF001 - no public equivalent
        (self.dir / "run").mkdir(exist_ok=True)
        self._write_etcd_config(port_map)
        self._finish_config(port_map, mq)
        (self.dir / STATE_FILE).write_text(json.dumps({"milvus": milvus.__version__, "ports": port_map}, indent=2))

    def _write_etcd_config(self, ports: dict[str, int]) -> None:
        # The embedded etcd would listen on 2379/2380 whatever `etcd.endpoints` says; its own
        # config file (Milvus key `etcd.config.path`) moves both listeners.
        client, peer = f"http://127.0.0.1:{ports['etcd_port']}", f"http://127.0.0.1:{ports['etcd_peer_port']}"
        (self.dir / ETCD_CONFIG_REL).write_text(
            f"name: default\nlisten-client-urls: {client}\nadvertise-client-urls: {client}\n"
            f"listen-peer-urls: {peer}\ninitial-advertise-peer-urls: {peer}\ninitial-cluster: default={peer}\n")

    def _finish_config(self, ports: dict[str, int], mq: str) -> None:
        from ruamel.yaml import YAML

        yaml = YAML()
        yaml.preserve_quotes = True
        doc = yaml.load(self.config_path.read_text())
        doc["etcd"]["config"] = {"path": str(self.dir / ETCD_CONFIG_REL)}
        nats = doc["natsmq"]["server"]
        nats["port"] = ports["natsmq_port"]
        nats["storeDir"] = str(self.nats_store_dir)
        nats["monitor"]["logFile"] = str(self.dir / "logs" / "nats.log")
        doc["mq"]["type"] = mq
        with self.config_path.open("w") as handle:
            yaml.dump(doc, handle)

    def start(self, timeout: float = 180) -> None:
        """Start the binary on the config in DIR (as the package would) and wait for health."""
        proc = self.launch()
        from mqctl.migrate.hooks import wait_until

        def started() -> bool:
            if proc.poll() is not None:
                raise PreconditionError(f"sandbox Milvus exited with code {proc.returncode} while starting",
                                        hint=f"see {self.log_path} and {self.dir / STDERR_REL}")
            return self.healthy()

        if not wait_until(started, timeout):
            raise PreconditionError(f"sandbox Milvus not healthy after {timeout:.0f} s",
                                    hint=f"see {self.log_path}; `mqctl sandbox down --dir {self.dir}` stops it")

    def launch(self) -> subprocess.Popen:
        """Run the binary on the config in DIR (as the package would) and return at once."""
        bin_dir = self.dir / "bin"
        env = {**os.environ, "DEPLOY_MODE": "STANDALONE", "METRICS_PORT": str(self.ports["metrics_port"]),
               "MILVUS_RUN_DIR": str(self.dir / "run"),
               "LD_LIBRARY_PATH": ":".join([str(bin_dir), os.environ.get("LD_LIBRARY_PATH", "")])}
        busy = [f"{name}={port}" for name, port in self.ports.items() if not port_is_free(port)]
        if busy:
            raise PreconditionError(f"sandbox {self.dir}: ports in use by another program: {', '.join(busy)}",
                                    hint="stop that program, or create a new sandbox in another --dir")
        with open(self.log_path, "ab") as out, open(self.dir / STDERR_REL, "ab") as err:
            proc = subprocess.Popen([str(bin_dir / "milvus"), "run", "standalone"], cwd=self.dir, env=env,
                                    stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)
        (self.dir / PID_REL).write_text(str(proc.pid))
        return proc

    def stop(self, timeout: float = 5) -> bool:
        """SIGTERM, wait for the process and its ports to go, SIGKILL after `timeout`. True if it was running.

        Milvus 2.3.5 standalone's graceful stop hangs in the query node once the coordinators
        are gone, and it never closes RocksMQ cleanly anyway (the package itself kills after
        1 s); data that was flushed is safe.
        """
        from mqctl.migrate.hooks import wait_until

        pid = self.pid()
        if pid is None:
            return False
        os.kill(pid, signal.SIGTERM)
        if not wait_until(lambda: self.pid() is None, timeout):
            os.kill(pid, signal.SIGKILL)
            wait_until(lambda: self.pid() is None, 10)
        wait_until(lambda: all(port_is_free(p) for p in self.ports.values()), 15)
        return True


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


def up(directory: str, *, mq: str | None = None, seed: bool = False, timeout: float = 180) -> SandboxInfo:
    """Create (first time) and start the sandbox in `directory`; idempotent when it already runs."""
    if mq is not None and mq not in SUPPORTED_MQ:
        raise InputError(f"--mq {mq}: the sandbox runs on {' or '.join(SUPPORTED_MQ)}")
    box = Sandbox(directory)
    if not box.exists():
        if box.dir.exists() and any(box.dir.iterdir()):
            raise InputError(f"{box.dir} exists, is not empty and is not a sandbox",
                             hint="pass an empty or new folder to --dir")
        box.create(mq or "rocksmq")
    elif mq is not None and box.effective_mq() != mq:
        raise InputError(f"sandbox {box.dir} runs on {box.effective_mq()}, not {mq}",
                         hint=f"switch it with `mqctl migrate --sandbox {box.dir} --to {mq}`, or use a new --dir")
    if not box.healthy():
        if box.pid() is not None:
            box.stop()
        box.start(timeout=timeout)
    info = box.info()
    if seed:
        info.seeded = seed_demo(info.uri)
    return info


def down(directory: str, timeout: float = 5) -> SandboxInfo:
    box = Sandbox(directory)
    box.ports  # noqa: B018 - refuses a folder that is not a sandbox
    box.stop(timeout)
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
                batch = [{"id": i, "tag": i % 7, "vector": [rng.random() for _ in range(DEMO_DIM)]}
                         for i in range(start, min(start + 1000, rows))]
                client.insert(name, batch)
            client.delete(name, filter="id % 10 == 0")  # every tenth row, so deletes are in the MQ too
            expected[name] = count_rows(client, name)
    finally:
        client.close()
    return expected
