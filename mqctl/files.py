"""Crash-safe file replacement, shared by config edits, migration journals and replay checkpoints."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def replace_atomically(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Write `data` to a temp file in the same folder, fsync it, rename it over `path`, fsync the folder.

    A crash at any point leaves either the old file or the new one, never half of one.
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
