"""A real Spark standalone cluster on this host, from the installed pyspark: a master and workers
bound to 127.0.0.1 on free ports, web UIs off. Used by tests/e2e/test_replay_cluster.py and bench/replay.py.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from mqctl.host.ports import free_ports


def spark_home() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home())


def _wait_for_port(port: int, proc: subprocess.Popen, log: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"Spark process exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"Spark process did not listen on {port} within {timeout:.0f} s:\n{log.read_text()[-3000:]}")


@dataclass
class StandaloneCluster:
    """`bin/spark-class ...Master` and `...Worker` processes; `url` is the spark:// master URL."""

    work: Path
    workers: int = 2
    cores: int = 1
    memory: str = "1g"
    python: str | None = None  # the hosts' PYSPARK_PYTHON (conf/spark-env.sh on a real cluster)
    # Folders the workers (and their executors) see as empty: their own file system differs there,
    # as another host's does (a private mount namespace, `unshare -m`; needs root).
    hidden: list[Path] = field(default_factory=list)
    driver_only_store: Path | None = None  # a store inside `hidden`: the driver sees it, the executors do not
    url: str = ""
    connect_url: str = ""
    processes: list[subprocess.Popen] = field(default_factory=list)

    def start(self) -> StandaloneCluster:
        home = spark_home()
        env = {
            **os.environ,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_HOME": str(home),
            "SPARK_DAEMON_MEMORY": "256m",
            "SPARK_NO_DAEMONIZE": "1",
        }
        env.pop("PYSPARK_PYTHON", None)
        env.pop("PYTHONPATH", None)  # the hosts have no mqctl
        if self.python:
            env["PYSPARK_PYTHON"] = self.python
        self._env = env
        port, webui_port = free_ports(2)
        self.url = f"spark://127.0.0.1:{port}"
        self._launch(
            home,
            env,
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(webui_port),
            ],
            port,
        )
        for n in range(self.workers):
            worker_port, worker_webui_port = free_ports(2)
            self._launch(
                home,
                env,
                f"worker{n}",
                [
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(worker_port),
                    "--webui-port",
                    str(worker_webui_port),
                    "--cores",
                    str(self.cores),
                    "--memory",
                    self.memory,
                    "--work-dir",
                    str(self.work / f"worker{n}"),
                    self.url,
                ],
                worker_port,
                prefix=self._private_mounts(),
            )
        return self

    def start_connect(self, python: str, executor_memory: str = "512m") -> str:
        """A Spark Connect server (sbin/start-connect-server.sh --wait) on this cluster, whose own
        Python workers (they plan a Python data source's reads) run `python`; its sc:// URL."""
        home, (port,) = spark_home(), free_ports(1)
        env = {
            **self._env,
            "SPARK_LOG_DIR": str(self.work / "logs"),
            "SPARK_PID_DIR": str(self.work),
            "SPARK_DAEMON_MEMORY": "512m",
            "PYSPARK_PYTHON": python,
        }
        log = self.work / "connect.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [
                    str(home / "sbin" / "start-connect-server.sh"),
                    "--wait",
                    "--master",
                    self.url,
                    "--conf",
                    f"spark.connect.grpc.binding.port={port}",
                    "--conf",
                    "spark.connect.grpc.binding.address=127.0.0.1",
                    "--conf",
                    "spark.ui.enabled=false",
                    "--conf",
                    f"spark.executor.memory={executor_memory}",
                    "--conf",
                    "spark.driver.memory=512m",
                ],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.processes.append(proc)
        _wait_for_port(port, proc, log, timeout=180)
        self.connect_url = f"sc://127.0.0.1:{port}"
        return self.connect_url

    def _private_mounts(self) -> list[str]:
        """A command prefix that runs the rest with self.hidden covered by empty tmpfs mounts."""
        if not self.hidden:
            return []
        mounts = " && ".join(f"mount -t tmpfs none '{path}'" for path in self.hidden)
        return ["unshare", "-m", "sh", "-c", f'{mounts} && exec "$@"', "sh"]

    def _launch(self, home: Path, env: dict, name: str, args: list[str], port: int, prefix=()) -> None:
        log = self.work / f"{name}.log"
        conf = ["-Dspark.ui.enabled=false", "-Dspark.master.ui.port=0", "-Dspark.worker.ui.port=0"]
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [*prefix, str(home / "bin" / "spark-class"), *args],
                env={**env, "SPARK_DAEMON_JAVA_OPTS": " ".join(conf)},
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.processes.append(proc)
        _wait_for_port(port, proc, log)

    def stop(self) -> None:
        for proc in reversed(self.processes):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)  # spark-class/spark-submit run java as a child
        for proc in self.processes:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.processes.clear()


def bare_python(folder: Path, *packages: str) -> Path:
    """A venv with nothing installed (not even pip): what an executor host's Python has of mqctl;
    `packages` (top-level names) are linked in from this Python's site-packages."""
    import importlib.util

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    if packages:
        site = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        for name in packages:
            spec = importlib.util.find_spec(name)
            assert spec is not None and spec.origin is not None, f"{name} is not installed"
            origin = Path(spec.origin).parent
            (Path(site) / name).symlink_to(origin)
    return python
