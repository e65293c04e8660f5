"""Archive the old MQ folders with a checksum manifest, read the archive back, restore it."""

from __future__ import annotations

import hashlib
import os
import tarfile
from pathlib import Path
from typing import IO, Any

from mqctl.errors import PreconditionError

CHUNK = 1 << 20


def _sha256(handle: IO[bytes]) -> str:
    digest = hashlib.sha256()
    for block in iter(lambda: handle.read(CHUNK), b""):
        digest.update(block)
    return digest.hexdigest()


def archive_dirs(dirs: list[Path], backup_dir: Path, name: str) -> dict[str, Any]:
    """`<backup_dir>/mq-<name>.tar.gz` holding `dirs` (absolute paths kept as member names)."""
    backup_dir.mkdir(parents=True, exist_ok=True)
    archive = backup_dir / f"mq-{name}.tar.gz"
    manifest: dict[str, dict[str, Any]] = {}
    tmp = archive.with_name(archive.name + ".tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for folder in dirs:
            tar.add(folder, arcname=str(folder).lstrip("/"), recursive=False)
            for root, subdirs, files in os.walk(folder):
                for sub in sorted(subdirs):
                    path = Path(root) / sub
                    tar.add(path, arcname=str(path).lstrip("/"), recursive=False)
                for file_name in sorted(files):
                    path = Path(root) / file_name
                    with open(path, "rb") as handle:
                        manifest[str(path).lstrip("/")] = {"sha256": _sha256(handle), "bytes": path.stat().st_size}
                    tar.add(path, arcname=str(path).lstrip("/"), recursive=False)
    os.replace(tmp, archive)
    return {
        "archive": str(archive),
        "dirs": [str(d) for d in dirs],
        "files": len(manifest),
        "bytes": sum(m["bytes"] for m in manifest.values()),
        "manifest": manifest,
    }


def verify_archive(archive: Path, manifest: dict[str, dict[str, Any]]) -> None:
    """Read every file back from the archive and compare it with the manifest."""
    seen = set()
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                if not member.isfile():
                    continue
                handle = tar.extractfile(member)  # a regular file's: never None
                expected = manifest.get(member.name)
                if expected is None or handle is None or _sha256(handle) != expected["sha256"]:
                    raise PreconditionError(
                        f"backup {archive}: {member.name} does not match its manifest checksum",
                        hint="the archive is damaged: keep the original folders",
                    )
                seen.add(member.name)
    except (OSError, tarfile.TarError) as err:
        raise PreconditionError(
            f"backup {archive} cannot be read back: {err}", hint="the archive is damaged: keep the original folders"
        ) from None
    missing = sorted(set(manifest) - seen)
    if missing:
        raise PreconditionError(
            f"backup {archive} lacks {len(missing)} file(s), e.g. {missing[0]}",
            hint="the archive is incomplete: keep the original folders",
        )


def restore_archive(archive: Path, manifest: dict[str, dict[str, Any]], dirs: list[str]) -> None:
    """Check the archive, then put its folders back where they were (never over a non-empty folder)."""
    verify_archive(archive, manifest)
    clashes = [d for d in dirs if Path(d).is_dir() and any(Path(d).iterdir())]
    if clashes:
        raise PreconditionError(
            f"cannot restore {archive}: {', '.join(clashes)} exist and are not empty", hint="move them away first"
        )
    with tarfile.open(archive, "r:gz") as tar:
        tar.extractall("/", filter="tar")
