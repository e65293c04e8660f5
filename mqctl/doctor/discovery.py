"""Finding the Milvus to examine: the `milvus run standalone` process of this host, read from /proc, or
what the operator names (--pid, --sandbox, --config/--etcd/--milvus/--rocksmq/--nats/--nats-store).

Milvus reads its yaml from `$MILVUSCONF` (relative to its working directory), else `<cwd>/configs`
(paramtable's BaseTable.initConfigsFromLocal); its environment overrides the yaml (`MQ_TYPE` is `mq.type`);
the embedded etcd listens where `etcd.config.path` says, an external one at `etcd.endpoints`. The MQ it
runs now is in its own log (`["try to init mq"] ... [mqType=X]`, written once at start), which is also
where its banner gives the version (`Version: v2.3.5-lite`). A process keeps RocksMQ's files open and its
embedded NATS server listens in the process itself, which tells the MQ when the log cannot be read.
"""

from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mqctl.config.known_keys import KEYS, normalize_key
from mqctl.config.resolve.sources import DEFAULT_ETCD_ROOT
from mqctl.errors import InputError, PreconditionError
from mqctl.host import procfs
from mqctl.secrets import redact

if TYPE_CHECKING:
    from mqctl.config.resolve.resolution import Resolution

INIT_MQ = re.compile(r"try to init mq.*\[mqType=([a-z]*)\]")
BANNER_VERSION = re.compile(r"^Version:\s+v?(\d+\.\d+\.\d+)", re.MULTILINE)
LOG_TAIL_BYTES = 64 << 20  # the part of a log read for the init line and the banner
YAML_ORDER_2_4 = ("milvus.yaml", "_test.yaml", "default.yaml", "user.yaml")  # later wins (2.4+); 2.3 reads the first
DEFAULT_GRPC_PORT, DEFAULT_METRICS_PORT = 19530, 9091
# variables Milvus reads besides its config keys, worth showing in the target
PROCESS_VARIABLES = ("MILVUSCONF", "DEPLOY_MODE", "METRICS_PORT", "MILVUS_RUN_DIR", "ETCD_USE_EMBED", "ETCD_ENDPOINTS")
NOWHERE_HINT = (
    "start Milvus, or point the doctor at one: --pid PID, --sandbox DIR, or --config milvus.yaml "
    "[--etcd URL --milvus URI --rocksmq DIR | --nats URL | --nats-store DIR] for a Milvus elsewhere "
    "(a container's mounted config and volumes, a Helm release's values and port-forwards)"
)


@dataclass
class Request:
    """What the operator said about the Milvus to examine (every field optional: nothing means discover)."""

    pid: int | None = None
    sandbox: str | None = None
    configs: list[str] = field(default_factory=list)
    etcd: str | None = None
    etcd_root: str | None = None
    milvus: str | None = None
    rocksmq: str | None = None
    nats: str | None = None
    nats_store: str | None = None
    milvus_version: str | None = None
    timeout: float = 5.0

    @property
    def names_a_target(self) -> bool:
        return bool(self.configs or self.milvus or self.etcd or self.rocksmq or self.nats or self.nats_store)


@dataclass
class Candidate:
    """One `milvus run standalone` process seen in /proc."""

    pid: int
    cwd: str | None
    command: str


@dataclass
class RunningMQ:
    """The MQ the running Milvus uses now, and the evidence (a log line, an open file, a listening port)."""

    mq: str | None
    evidence: str


@dataclass
class Target:
    """Everything the checks need about one Milvus: where it is, what it reads, what it runs."""

    found_by: str  # discovered | --pid | --sandbox | explicit options
    pid: int | None = None
    cwd: str | None = None
    configs: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # the variables Milvus reads, secrets masked
    etcd: str | None = None
    etcd_embedded: bool | None = None
    etcd_root: str | None = None
    milvus: str | None = None  # gRPC URI
    health_url: str | None = None
    version: str | None = None
    version_from: str | None = None
    mq: RunningMQ | None = None  # what runs now (None: nothing runs or nothing tells)
    next_mq: str | None = None  # what the files/env/etcd on disk now would start
    paths: dict[str, str] = field(default_factory=dict)  # rocksmq, natsmq, localStorage, log
    ports: dict[str, int] = field(default_factory=dict)  # grpc, health, natsmq, listening...
    notes: list[str] = field(default_factory=list)
    _environ: dict[str, str] | None = None  # the whole environment, for the resolver (never printed)
    _fs: Path | None = None  # /proc/PID/root of a Milvus in a container (its paths are read through it)
    _logs: list[Path] = field(default_factory=list)


def is_standalone(argv: list[str]) -> bool:
    """`.../milvus run standalone` (the binary's own name, then the two words)."""
    return len(argv) >= 3 and os.path.basename(argv[0]) == "milvus" and argv[1:3] == ["run", "standalone"]


def candidates(root: Path = procfs.PROC) -> list[Candidate]:
    """Every live `milvus run standalone` process this user can see."""
    found = []
    for pid in procfs.process_ids(root):
        argv = procfs.process_cmdline(pid, root)
        if argv is None or not is_standalone(argv) or procfs.process_state(pid, root) in (None, "Z"):
            continue
        cwd = procfs.process_cwd(pid, root)
        found.append(Candidate(pid, str(cwd) if cwd else None, " ".join(argv)))
    return found


def choose_process(request: Request, root: Path = procfs.PROC) -> int | None:
    """The pid to examine: --pid, else the one standalone found; None when the operator named a target
    by its files and URLs. No process: exit 3; several: exit 2, listing them."""
    if request.pid is not None:
        argv = procfs.process_cmdline(request.pid, root)
        if argv is None or procfs.process_state(request.pid, root) in (None, "Z"):
            raise PreconditionError(f"--pid {request.pid}: no such process", hint=NOWHERE_HINT)
        if not is_standalone(argv):
            raise InputError(
                f"--pid {request.pid} runs `{' '.join(argv)[:120]}`, not `milvus run standalone`",
                hint="pass the pid of the Milvus standalone process (`pgrep -af 'milvus run standalone'`)",
            )
        return request.pid
    if request.names_a_target:
        return None
    found = candidates(root)
    if not found:
        raise PreconditionError("no Milvus standalone (`milvus run standalone`) runs on this host", hint=NOWHERE_HINT)
    if len(found) > 1:
        listed = "; ".join(f"pid {c.pid} in {c.cwd or '?'}" for c in found)
        raise InputError(
            f"{len(found)} Milvus standalone processes run here: {listed}", hint="choose one with --pid PID"
        )
    return found[0].pid


def on_host(path: Path, fs: Path | None) -> Path:
    """A path as the process sees it, as this process reads it (through /proc/PID/root for a container)."""
    return fs / path.relative_to("/") if fs is not None and path.is_absolute() else path


def config_files(cwd: Path | None, environ: dict[str, str], fs: Path | None = None) -> list[Path]:
    """The yaml files Milvus reads, in its merge order: `$MILVUSCONF` or `<cwd>/configs`, milvus.yaml first.
    Without its working directory a relative folder cannot be found: none."""
    folder = Path(environ.get("MILVUSCONF") or "configs")
    if not folder.is_absolute():
        if cwd is None:
            return []
        folder = cwd / folder
    folder = on_host(folder, fs)
    return [folder / name for name in YAML_ORDER_2_4 if (folder / name).is_file()]


def log_files(pid: int, root: Path = procfs.PROC, fs: Path | None = None) -> list[Path]:
    """The regular files a process writes its stdout and stderr to (Milvus's log when no log.file is set)."""
    found: list[Path] = []
    for fd in (1, 2):
        target = procfs.open_files(pid, root).get(fd)
        path = on_host(Path(target), fs) if target and target.startswith("/") else None
        if path is not None and path.is_file() and path not in found:
            found.append(path)
    return found


def read_tail(path: Path, limit: int = LOG_TAIL_BYTES) -> str:
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(size - limit, 0))
            return handle.read().decode(errors="replace")
    except OSError:
        return ""


def mq_from_logs(logs: list[Path]) -> RunningMQ | None:
    """The last `try to init mq ... [mqType=X]` line of the logs (Milvus writes it once, at start)."""
    for log in logs:
        lines = [m for m in INIT_MQ.finditer(read_tail(log))]
        if lines:
            last = lines[-1]
            return RunningMQ(last.group(1) or None, f"{log}: {last.group(0)[:160]}")
    return None


def version_from_logs(logs: list[Path]) -> str | None:
    for log in logs:
        found = BANNER_VERSION.findall(read_tail(log))
        if found:
            return str(found[-1])
    return None


def mq_from_process(
    pid: int, paths: dict[str, str], nats_port: int | None, root: Path = procfs.PROC
) -> RunningMQ | None:
    """The MQ a running Milvus holds open: files under rocksmq.path, or its embedded NATS listening."""
    if nats_port and nats_port in procfs.listening_ports(pid, root):
        return RunningMQ("natsmq", f"pid {pid} listens on natsmq.server.port {nats_port} (its embedded NATS server)")
    rocks = paths.get("rocksmq")
    if rocks:
        prefix = os.path.realpath(rocks)
        for target in procfs.open_files(pid, root).values():
            if target == prefix or target.startswith(prefix + os.sep):
                return RunningMQ("rocksmq", f"pid {pid} holds {target} open (under rocksmq.path)")
    return None


def masked_env(environ: dict[str, str]) -> dict[str, str]:
    """The variables Milvus reads as config keys (and its own few), with secret values masked."""
    known = {normalize_key(spec.key) for spec in KEYS}
    shown = {}
    for name, value in sorted(environ.items()):
        if name in PROCESS_VARIABLES or normalize_key(name) in known or name.startswith(("MQ_", "ROCKSMQ_", "NATSMQ_")):
            shown[name] = redact(value, name.lower().replace("_", "."))
    return shown


def data_paths(res: Resolution, base: Path | None) -> dict[str, str]:
    """Where the MQs and local storage of this config live (relative paths from Milvus's working directory)."""
    found = {}
    for name, key in (
        ("rocksmq", "rocksmq.path"),
        ("natsmq", "natsmq.server.storeDir"),
        ("localStorage", "localStorage.path"),
    ):
        value = res.value(key)
        if value:
            path = Path(value).expanduser()
            found[name] = str(base / path if base is not None and not path.is_absolute() else path)
    return found


def etcd_of(res: Resolution, fs: Path | None = None) -> tuple[str | None, bool]:
    """(client URL, embedded) of the etcd this config makes Milvus use. The embedded one listens where its
    own config file (`etcd.config.path`) says, by default on 127.0.0.1:2379."""
    embedded = (res.value("etcd.use.embed") or "false").strip().lower() == "true"
    if embedded:
        config = res.value("etcd.config.path")
        if config:
            with contextlib.suppress(OSError):
                for line in on_host(Path(config), fs).read_text().splitlines():
                    key, _, value = line.partition(":")
                    if key.strip() == "listen-client-urls" and value.strip():
                        return value.strip().split(",")[0].strip(), True
        return "http://127.0.0.1:2379", True
    endpoint = (res.value("etcd.endpoints") or "localhost:2379").split(",")[0].strip()
    return (endpoint if "://" in endpoint else f"http://{endpoint}"), False


def int_or_none(text: str | None) -> int | None:
    with contextlib.suppress(TypeError, ValueError):
        return int(str(text).strip())
    return None


def locate(request: Request, root: Path = procfs.PROC) -> Target:
    """The Milvus to examine, with its files, environment, etcd, ports, data paths, version and running MQ."""
    from mqctl.config.resolve.resolution import resolve

    pid = choose_process(request, root) if request.sandbox is None else None
    target = Target("--pid" if request.pid is not None else ("discovered" if pid is not None else "explicit options"))
    version: str | None = None
    if request.sandbox is not None:
        version = _from_sandbox(target, request.sandbox)
        pid = target.pid
    if pid is not None:
        _from_process(target, pid, root)
        version = version_from_logs(target._logs) or version
        if version and target.version_from is None:
            target.version_from = "the banner in its log"
    if request.configs:
        target.configs = [str(Path(c).expanduser()) for c in request.configs]
    if not target.configs:
        if pid is not None:
            raise PreconditionError(
                f"Milvus pid {pid} reads no milvus.yaml this user can see (MILVUSCONF or {target.cwd or '?'}/configs)",
                hint="pass --config FILE with the yaml it reads (a container's mounted config, for instance)",
            )
        if not (request.rocksmq or request.nats or request.nats_store):
            raise InputError(
                "nothing to examine without a config", hint="pass --config FILE (and the MQ, etcd, Milvus)"
            )
    if request.milvus_version:
        version, target.version_from = request.milvus_version, "--milvus-version"
    target.version = version
    seen_by_milvus: dict[str, str] = {}  # data paths as Milvus sees them (inside its container, if any)
    if target.configs:
        res = resolve(target.configs, mode="standalone", milvus_version=version, env=target._environ or {}, role="full")
        base = Path(target.cwd) if target.cwd else None
        seen_by_milvus = data_paths(res, base)
        if target.etcd is None:
            target.etcd, target.etcd_embedded = etcd_of(res, target._fs)
        target.etcd_root = request.etcd_root or res.value("etcd.rootPath") or DEFAULT_ETCD_ROOT
        grpc = int_or_none(res.value("proxy.port")) or DEFAULT_GRPC_PORT
        target.ports.setdefault("grpc", grpc)
        nats_port = int_or_none(res.value("natsmq.server.port"))
        if nats_port and nats_port > 0:  # -1: a random port, known only to the process
            target.ports.setdefault("natsmq", nats_port)
    if pid is not None:
        health = int_or_none((target._environ or {}).get("METRICS_PORT")) or DEFAULT_METRICS_PORT
        target.ports.setdefault("health", health)
        listening = procfs.listening_ports(pid, root)
        if listening:
            target.ports["listening"] = len(listening)
        target.milvus = target.milvus or f"http://127.0.0.1:{target.ports['grpc']}"
        target.health_url = target.health_url or f"http://127.0.0.1:{target.ports['health']}/healthz"
        target.mq = mq_from_logs(target._logs) or mq_from_process(pid, seen_by_milvus, target.ports.get("natsmq"), root)
        if target.mq is None:
            target.notes.append("the MQ Milvus runs now is not known: no `try to init mq` line in its log")
    if target.configs:
        target.paths = {**{k: str(on_host(Path(v), target._fs)) for k, v in seen_by_milvus.items()}, **target.paths}
    if request.etcd:
        target.etcd, target.etcd_embedded = request.etcd, None
    if request.milvus:
        target.milvus = request.milvus
    for name, given in (("rocksmq", request.rocksmq), ("nats-store", request.nats_store)):
        if given:
            target.paths[name] = str(Path(given).expanduser())
    return target


def _from_sandbox(target: Target, directory: str) -> str | None:
    """A `mqctl sandbox` folder: its config, log, ports and etcd; its process when it runs."""
    from mqctl.sandbox.server import Sandbox

    box = Sandbox(directory)
    ports = box.ports  # refuses a folder that is not a sandbox
    target.found_by = "--sandbox"
    target.pid = box.pid()
    target.configs = [str(box.config_path)]
    target.milvus = f"http://127.0.0.1:{ports['proxy_port']}"
    target.health_url = f"http://127.0.0.1:{ports['metrics_port']}/healthz"
    target.ports.update(grpc=ports["proxy_port"], health=ports["metrics_port"])
    target.etcd, target.etcd_embedded = box.etcd_url(), not box.external_etcd
    target._logs = [box.log_path]
    target.paths["log"] = str(box.log_path)
    if target.pid is None:
        target.notes.append(f"the sandbox's Milvus is not running ({box.dir}): its files are examined")
    version = box.state.milvus
    if version:
        target.version_from = "the sandbox's milvus package"
    return version


def _from_process(target: Target, pid: int, root: Path) -> None:
    target.pid = pid
    target._fs = procfs.foreign_root(pid, root)
    if target._fs is not None:
        target.notes.append(
            f"Milvus pid {pid} runs in another filesystem root (a container): its files are read through "
            f"{target._fs}, its ports as this host reaches them"
        )
    cwd = procfs.process_cwd(pid, root)
    target.cwd = str(cwd) if cwd else None
    environ = procfs.process_environ(pid, root)
    if environ is None:
        target.notes.append(
            f"the environment of pid {pid} is not readable by this user: MQ_TYPE and the like are not applied "
            "(run the doctor as Milvus's user or root)"
        )
    else:
        target._environ = environ
        target.env = masked_env(environ)
    if not target.configs:
        target.configs = [str(p) for p in config_files(cwd, environ or {}, target._fs)]
    logs = log_files(pid, root, target._fs)
    target._logs = logs + [log for log in target._logs if log not in logs]
    if target._logs:
        target.paths.setdefault("log", str(target._logs[0]))
