"""Crash-safe file replacement, backups and edit locks, shared by config edits, migration journals and replay checkpoints."""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import fcntl
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mqctl.errors import InputError, PreconditionError

BOM = "\ufeff"  # a UTF-8 byte order mark: kept on a file that had one, ignored when comparing text
LOCK_WAIT = 30.0  # seconds an edit waits for another one on the same file before giving up (MQCTL_LOCK_WAIT)
_held: dict[Path, int] = {}  # lock files this process holds, with their depth (nested edits of one file)


def replace_atomically(
    path: Path, data: bytes, *, mode: int | None = None, owner: tuple[int, int] | None = None
) -> None:
    """Write `data` to a temp file in the same folder, fsync it, rename it over `path`, fsync the folder.

    A crash at any point leaves either the old file or the new one, never half of one. `mode` and
    `owner` (uid, gid) are given to the new file before the rename, so no reader sees it otherwise.
    """
    path = Path(path)
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if owner is not None:
            keep_owner(Path(temp), owner)
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    directory = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def keep_owner(path: Path, owner: tuple[int, int]) -> None:
    """Give `path` the uid/gid of the file it replaces or copies (root editing milvus:milvus 0600 must not
    leave a file Milvus cannot read); a non-root user can only keep its own, which it already has."""
    if (os.stat(path).st_uid, os.stat(path).st_gid) == owner:
        return
    try:
        os.chown(path, *owner)
    except PermissionError:
        if os.geteuid() == 0:
            raise


def lock_path(path: Path | str) -> Path:
    """The sidecar lock file of a file: `.NAME.mqctl.lock` next to its real path (symlinks followed)."""
    target = Path(os.path.realpath(path))
    return target.with_name(f".{target.name}.mqctl.lock")


@contextlib.contextmanager
def edit_lock(path: Path | str, *, wait: float | None = None) -> Iterator[None]:
    """Hold an exclusive advisory lock (flock on the sidecar lock file) while a file is read, changed
    and written, so two mqctl edits of one file run one after the other instead of one losing its
    change. Re-entrant within a process; waits at most `wait` seconds (default: MQCTL_LOCK_WAIT, else
    LOCK_WAIT) for another holder."""
    if wait is None:
        wait = _lock_wait()
    why = not_editable(path)
    if why:
        raise InputError(f"{path}: {why}", hint="pass the config file itself (an edit replaces a regular file)")
    lock = lock_path(path)
    if lock in _held:
        _held[lock] += 1
        try:
            yield
        finally:
            _held[lock] -= 1
        return
    try:  # never through a symlink: a planted `.NAME.mqctl.lock` link must not create or touch its target
        fd = os.open(lock, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise PreconditionError(
                f"the lock file {lock} is a symbolic link; nothing was written",
                location=str(path),
                hint=f"remove {lock} (mqctl creates it as a plain file) and run the command again",
            ) from None
        raise PreconditionError(
            f"cannot create the lock file {lock}: {err.strerror}",
            location=str(path),
            hint=_write_hint(err, lock.parent),
        ) from None
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise PreconditionError(
                        f"another mqctl edit of {path} has held its lock ({lock}) for {wait:g} s; nothing was written",
                        hint="run the command again once it is done (MQCTL_LOCK_WAIT sets how long to wait)",
                    ) from None
                time.sleep(0.02)
        _held[lock] = 1
        try:
            yield
        finally:
            del _held[lock]
    finally:
        os.close(fd)  # closing releases the flock


def not_editable(path: Path | str) -> str | None:
    """Why `path` cannot be edited in place (None: a regular file, through symlinks): an edit replaces the file
    atomically, which only a regular file allows."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return "a symbolic link to a missing file" if os.path.islink(path) else "no such file"
    except OSError as err:
        if err.errno == errno.ELOOP:
            return "a symbolic link loop, not a file"
        return f"cannot be read: {err.strerror}"
    kind = special_file_kind(info.st_mode)
    return f"is {kind}, not a config file" if kind else None


def special_file_kind(mode: int) -> str | None:
    """What a stat mode that is not a regular file is ("a named pipe (FIFO)"...), None for a regular file: such a
    path is never opened for reading, where a FIFO would block and a device would never end."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a named pipe (FIFO)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    for test, what in kinds:
        if test(mode):
            return what
    return None if stat.S_ISREG(mode) else "not a regular file"


def _lock_wait() -> float:
    text = os.environ.get("MQCTL_LOCK_WAIT", "")
    try:
        return max(0.0, float(text)) if text else LOCK_WAIT
    except ValueError:
        raise InputError(
            f"MQCTL_LOCK_WAIT={text!r} is not a number of seconds", hint="e.g. MQCTL_LOCK_WAIT=60"
        ) from None


def _write_hint(err: OSError, folder: Path) -> str:
    if err.errno in (errno.EROFS,):
        return f"{folder} is on a read-only file system: edit a writable copy and put it in place"
    if err.errno in (errno.EACCES, errno.EPERM):
        return (
            f"this user may not write in {folder} (an edit writes a lock, a backup and the new file there): "
            "run as a user who may, or edit a copy and put it in place"
        )
    if err.errno == errno.ENOSPC:
        return f"free space on the file system of {folder}"
    return "check the folder"


def write_error(err: OSError, path: Path | str) -> PreconditionError:
    """An OSError while backing up or replacing a file, as one line with the fix (exit 3)."""
    folder = Path(os.path.realpath(path)).parent
    return PreconditionError(
        f"cannot write next to {path}: {err.strerror}; nothing was changed",
        location=str(path),
        hint=_write_hint(err, folder),
    )


def backup_stamp() -> str:
    """The UTC time in a backup's name (microseconds, so two backups in one second do not collide)."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")


def backup_copy(path: Path | str) -> Path:
    """A timestamped copy next to the file (mode, owner and times kept)."""
    target = Path(os.path.realpath(path))
    backup = target.with_name(f"{target.name}.{backup_stamp()}.bak")
    try:
        # a new file, never through a symlink: a planted link at the backup's name must not redirect the copy
        fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as out, target.open("rb") as source:
            shutil.copyfileobj(source, out)
        shutil.copystat(target, backup)
        keep_owner(backup, _owner(target))
    except OSError as err:
        with contextlib.suppress(OSError):
            backup.unlink(missing_ok=True)
        raise write_error(err, path) from None
    return backup


def _owner(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_uid, info.st_gid


def atomic_write(
    path: Path, text: str, *, bom: bool = False, expected: str | None = None, backup: Path | None = None
) -> Path:
    """Under the file's edit lock: check it still holds `expected`, back it up next to itself (unless
    `backup` was taken already), then replace it atomically, keeping its mode and owner. Returns the backup."""
    target = Path(os.path.realpath(path))
    with edit_lock(target):
        if expected is not None:
            current = target.read_bytes().decode("utf-8")
            if current.lstrip(BOM) != expected:
                raise PreconditionError(
                    f"{path} changed while the edit was prepared; nothing was written", hint="run the command again"
                )
        backup = backup or backup_copy(target)
        info = target.stat()
        try:
            replace_atomically(
                target,
                ((BOM if bom else "") + text).encode("utf-8"),
                mode=stat.S_IMODE(info.st_mode),
                owner=(info.st_uid, info.st_gid),
            )
        except OSError as err:
            raise write_error(err, path) from None
    return backup


def overlap(path: Path | str, folder: Path | str) -> str | None:
    """How `path` overlaps `folder` once both are resolved (symlinks followed, `..` removed): "is", "is inside"
    or "holds"; None when neither contains the other. A path that does not exist yet resolves through its
    nearest existing parent, so a symlinked parent still counts."""
    mine, theirs = Path(os.path.realpath(path)), Path(os.path.realpath(folder))
    if mine == theirs:
        return "is"
    if theirs in mine.parents:
        return "is inside"
    if mine in theirs.parents:
        return "holds"
    return None


def refuse_overlap(path: Path | str, option: str, protected: list[tuple[Path, str]]) -> None:
    """Refuse an output path (`option` names it) that is, lies inside or holds a folder mqctl reads or Milvus
    owns: writing there (or `--mode overwrite` emptying it) would destroy the data. `protected`: (folder, what)."""
    for folder, what in protected:
        how = overlap(path, folder)
        if how:
            raise InputError(
                f"{option} {path} {how} {what} {folder}; writing there would change or delete that data",
                hint=f"choose a {option} outside {folder}",
            )


_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")  # Hadoop's Path: a scheme is what stands before the first ':'
_LOCAL_HOSTS = ("", "localhost")


@dataclass(frozen=True)
class WriteTarget:
    """Where a path or URL that Spark (Hadoop's Path) or mqctl writes to really lands. `local`: the resolved
    local path (symlinks followed, `..` removed) for a plain path or a `file:` URL, None for another filesystem;
    `scheme`/`bucket`/`key` for an object store URL (s3, s3a, s3n, gs, ...); `spark`: the form to hand to Spark,
    which names the same place without ambiguity."""

    given: str
    local: Path | None
    scheme: str
    bucket: str
    key: str
    spark: str


def write_target(text: str, option: str) -> WriteTarget:
    """Resolve an output as Spark resolves it: `file:/X`, `file:///X`, `file://localhost/X` and `file:rel` are the
    local X (a guard that compared the URL as a string would miss them and let `--mode overwrite` empty a source
    folder); a plain path is local (resolved here, as before); any other scheme is another filesystem."""
    match = _SCHEME.match(text)
    if match is None or len(match.group(1)) == 1:  # no scheme (a one-letter "scheme" would be a drive letter)
        local = Path(os.path.realpath(Path(text).expanduser()))
        return WriteTarget(text, local, "", "", "", str(local))
    scheme = match.group(1).lower()
    rest = text[match.end() :]
    if scheme == "file":
        if rest.startswith("//"):
            host, slash, path = rest[2:].partition("/")
            if host.lower() not in _LOCAL_HOSTS:
                raise InputError(
                    f"{option} {text!r} names host {host!r}; a file: URL can only name this host",
                    hint=f"write {option} file:///PATH or a plain path",
                )
            rest = slash + path
        if not rest:
            raise InputError(f"{option} {text!r} names no path", hint=f"write {option} file:///PATH")
        local = Path(os.path.realpath(Path(rest).expanduser()))
        return WriteTarget(text, local, "file", "", "", f"file://{local}")
    bucket, _, key = rest.lstrip("/").partition("/") if rest.startswith("//") else ("", "", rest)
    return WriteTarget(text, None, scheme, bucket, key.strip("/"), text)


def local_file_option(text: str, option: str) -> Path:
    """A path mqctl itself writes (a resume file, a follow checkpoint folder), given plainly or as a `file:` URL:
    the resolved local path. Another scheme is refused, never taken as a folder named `s3:` under the working
    directory."""
    target = write_target(text, option)
    if target.local is None:
        raise InputError(
            f"{option} {text!r}: mqctl writes this itself and only to a local path",
            hint=f"give {option} a local path (or a file:/// URL; a shared folder mounted here works too)",
        )
    return target.local
