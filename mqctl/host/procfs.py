"""What Linux /proc tells about local processes: who listens on a port, with which environment, and who
uses a folder.

Used to recognise Milvus behind a URL (it must not be edited under it), to read the environment it
really runs with (variables such as MQ_TYPE override its yaml), and to refuse a store a running server
uses. Off Linux, or for a remote host, nothing is known and callers say so.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from mqctl.sorting import ascii_int

LOOPBACK = ("127.0.0.1", "localhost", "::1", "0.0.0.0")


def listening_pid(url: str, default_port: int | None) -> int | None:
    """The pid of the local process listening on a loopback URL's port, when visible in /proc."""
    try:
        parts = urlsplit(url if "://" in url else f"tcp://{url}")
        if parts.hostname not in LOOPBACK:
            return None
        port = parts.port or default_port
    except ValueError:  # not a URL (a bracket missing, a port that is no number): no process serves it
        return None
    if port is None:
        return None
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A = LISTEN
                    inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return None
    for proc in Path("/proc").iterdir():
        pid = ascii_int(proc.name)
        if pid is None:
            continue
        try:
            if any(os.readlink(fd) in inodes for fd in (proc / "fd").iterdir()):
                return pid
        except OSError:
            continue
    return None


def process_name(pid: int) -> str:
    """The short name of a process (its `comm`), or "?" when it cannot be read."""
    with contextlib.suppress(OSError):
        return (Path("/proc") / str(pid) / "comm").read_text().strip()
    return "?"


def process_environ(pid: int, root: Path = Path("/proc")) -> dict[str, str] | None:
    """The environment a process was started with; None when it cannot be read."""
    try:
        raw = (root / str(pid) / "environ").read_bytes()
    except OSError:
        return None
    return dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)


CONFIG_SUFFIXES = (".conf", ".cfg", ".json", ".yaml", ".yml")


def processes_using(
    path: Path,
    *,
    server_prefix: str = "",
    serves: Callable[[Path, str, str], bool] | None = None,
    writers_only: bool = False,
) -> list[str]:
    """'pid (name)' of every process with a file open below path, naming it on its command line, or naming
    it in a config file given on its command line (an idle server keeps no store file open); from Linux
    /proc, unreadable ones skipped. A config file counts when it has a usual suffix, or any name for a
    program called `server_prefix*` (a nats-server's -c FILE). `serves(proc, name, path)` adds what only
    the caller knows (Milvus reads its store from milvus.yaml).

    The calling process tree (this process and the ones that started it: shell, sudo, timeout, a test
    runner) is skipped whole, its open files as well as its command lines: `sudo mqctl ... --nats-store
    DIR` names the store itself, and a parent that happens to hold a file of the store is not its user.

    `writers_only`, for a caller that only reads (a copy of the store): a file open for reading and another
    mqctl naming the path are no hazard to it; what writes (a file open for writing, a server given the
    path, a Milvus serving it) still is. Two inspections of one store at a time do not refuse each other."""
    users = []
    prefix = str(path)
    callers = calling_tree()

    def below(target: str) -> bool:
        return target == prefix or target.startswith(prefix + os.sep)

    for proc in Path("/proc").iterdir():
        pid = ascii_int(proc.name)
        if pid is None or pid in callers:
            continue
        try:
            fds = [fd for fd in (proc / "fd").iterdir() if not writers_only or _open_for_writing(proc, fd.name)]
            targets = [os.readlink(fd) for fd in fds]
            name = (proc / "comm").read_text().strip()
            argv = process_cmdline(pid) or []
            skip_named = writers_only and _is_mqctl(argv)
            named = [] if skip_named else [a for a in _named_paths(proc, argv) if os.path.exists(a)]
        except OSError:
            continue
        configs = [
            arg
            for arg in named
            if os.path.isfile(arg)
            and ((server_prefix and name.startswith(server_prefix)) or arg.endswith(CONFIG_SUFFIXES))
        ]
        if (
            any(below(t) for t in targets + named)
            or any(mentions_path(config, prefix) for config in configs)
            or (serves is not None and serves(proc, name, prefix))
        ):
            users.append(f"{proc.name} ({name})")
    return users


def _open_for_writing(proc: Path, fd: str) -> bool:
    """Whether a descriptor was opened for writing (the access mode in /proc/PID/fdinfo/FD's octal flags)."""
    try:
        flags = next(line for line in (proc / "fdinfo" / fd).read_text().splitlines() if line.startswith("flags:"))
    except (OSError, StopIteration):
        return True  # unknown: count it, as before the access mode was read
    return int(flags.split()[1], 8) & os.O_ACCMODE != os.O_RDONLY


def _is_mqctl(args: list[str]) -> bool:
    """An mqctl command line (`mqctl ...` or `python -m mqctl ...`): it reads stores through copies or servers."""
    return any(os.path.basename(arg) == "mqctl" for arg in args[:2]) or any(
        flag == "-m" and module == "mqctl" for flag, module in itertools.pairwise(args)
    )


def calling_tree() -> set[int]:
    """This process and the pids of the processes that started it (shell, sudo, timeout...)."""
    found, pid = {os.getpid()}, os.getppid()
    while pid > 0 and pid not in found:  # pid 1 too: `docker run --init` starts mqctl under tini
        found.add(pid)
        try:
            stat = (Path("/proc") / str(pid) / "stat").read_text()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return found


def _named_paths(proc: Path, argv: list[str]) -> list[str]:
    """The command-line arguments of a process as absolute paths (`--store_dir=DIR` gives DIR)."""
    cwd = os.readlink(proc / "cwd")
    return [os.path.realpath(os.path.join(cwd, arg.split("=", 1)[-1])) for arg in argv]


def mentions_path(config: str, path: str) -> bool:
    """Whether a small config file names `path` itself (not merely a path that starts like it)."""
    try:
        if not os.path.isfile(config) or os.path.getsize(config) > 1 << 20:
            return False
        with open(config, "rb") as handle:
            text = handle.read()
    except OSError:
        return False
    return re.search(rb"(?<![\w./-])" + re.escape(path.encode()) + rb"(?![\w.-])", text) is not None


PROC = Path("/proc")


def process_cmdline(pid: int, root: Path = PROC) -> list[str] | None:
    """A process's argv; None when it is gone or unreadable."""
    try:
        raw = (root / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None
    return [arg for arg in raw.decode(errors="replace").split("\0") if arg] or None


def process_cwd(pid: int, root: Path = PROC) -> Path | None:
    """A process's working directory (relative paths on its command line and in its config start there)."""
    try:
        return Path(os.readlink(root / str(pid) / "cwd"))
    except OSError:
        return None


def process_state(pid: int, root: Path = PROC) -> str | None:
    """The one-letter state of /proc/PID/stat (`Z` for a zombie); None when it is gone."""
    try:
        return (root / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def open_files(pid: int, root: Path = PROC) -> dict[int, str]:
    """fd number -> what it points at (a path, `socket:[inode]`, `pipe:[...]`); empty when unreadable."""
    found: dict[int, str] = {}
    with contextlib.suppress(OSError):
        for fd in (root / str(pid) / "fd").iterdir():
            number = ascii_int(fd.name)
            if number is None:
                continue
            with contextlib.suppress(OSError):
                found[number] = os.readlink(fd)
    return found


def listening_ports(pid: int, root: Path = PROC) -> list[int]:
    """The TCP ports a process listens on (its sockets matched against /proc/net/tcp{,6}), sorted."""
    sockets = {target for target in open_files(pid, root).values() if target.startswith("socket:[")}
    ports: set[int] = set()
    # the tables of the process's own network namespace (a container's), else this one's
    net = root / str(pid) / "net" if (root / str(pid) / "net").is_dir() else root / "net"
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in (net / table).read_text().splitlines()[1:]:
                fields = line.split()
                if len(fields) > 9 and fields[3] == "0A" and f"socket:[{fields[9]}]" in sockets:  # 0A = LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return sorted(ports)


def process_ids(root: Path = PROC) -> list[int]:
    """Every pid under /proc, ascending."""
    try:
        return sorted(pid for entry in root.iterdir() if (pid := ascii_int(entry.name)) is not None)
    except OSError:
        return []


def foreign_root(pid: int, root: Path = PROC) -> Path | None:
    """`/proc/PID/root` when the process sees another filesystem root than this one (a container): its paths
    are then read through that folder. None for a process on this root, or when it cannot be told."""
    where = root / str(pid) / "root"
    try:
        theirs, ours = os.stat(where), os.stat("/")
    except OSError:
        return None
    return None if (theirs.st_dev, theirs.st_ino) == (ours.st_dev, ours.st_ino) else where
