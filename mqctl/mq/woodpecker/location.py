"""Where a Milvus 2.6 config puts its Woodpecker WAL, derived as Milvus does (milvus-io/milvus
`pkg/streaming/walimpls/impls/wp/builder.go` `setCustomWpConfig`, stored commit 023029832c26):

- `woodpecker.storage.type` `minio` (the default, also `default` or empty): the bucket `minio.bucketName` under the
  key prefix `<minio.rootPath>/wp` (`common.WoodpeckerRootPath` is `wp`), at `minio.address` (its host; a port
  written there is dropped, as Go's `net.SplitHostPort` there drops it) and `minio.port`, `https` when
  `minio.useSSL`, with `minio.accessKeyID`/`minio.secretAccessKey` (not with `minio.useIAM`) and `minio.region`;
  Woodpecker then writes `<prefix>/<logId>/<segId>/N.blk` (zilliztech/woodpecker
  `server/storage/objectstorage/writer_impl.go` `getSegmentFileKey`, v0.1.25).
- `local`: the folder `woodpecker.storage.rootPath`, where `default` (the default) means `<localStorage.path>/wp`;
  Woodpecker nests the same prefix below it (`server/processor/segment_processor.go`, v0.1.25: `path.Join(storage
  rootPath, rootPath)`, so `<localStorage.path>/wp/files/wp/<logId>/<segId>/data.log`); segments are found at any
  depth below the folder.
- `service`: a separate Woodpecker service keeps the files where its own config says: not derived.

Defaults of the keys a config leaves out are the stock milvus.yaml's (configs/milvus.yaml: minio.address
`localhost`, port 9000, useSSL false, bucketName `a-bucket`, rootPath `files`, accessKeyID/secretAccessKey
`minioadmin`; localStorage.path `/var/lib/milvus/data/`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mqctl.errors import InputError, PreconditionError
from mqctl.mq.woodpecker.storage import S3Access

if TYPE_CHECKING:
    from mqctl.config.resolve.resolution import Resolution

WOODPECKER_ROOT = "wp"  # milvus pkg/common `WoodpeckerRootPath`
STOCK = {
    "minio.address": "localhost",
    "minio.port": "9000",
    "minio.useSSL": "false",
    "minio.bucketName": "a-bucket",
    "minio.rootPath": "files",
    "minio.accessKeyID": "minioadmin",
    "minio.secretAccessKey": "minioadmin",
    "minio.useIAM": "false",
    "minio.region": "",
    "localStorage.path": "/var/lib/milvus/data/",
    "woodpecker.storage.type": "minio",
    "woodpecker.storage.rootPath": "default",
}


@dataclass(frozen=True)
class WoodpeckerLocation:
    """A folder or an s3:// URL, how to reach it, and which keys said so (for messages)."""

    location: str
    reason: str
    access: S3Access | None = field(default=None)


def _value(resolution: Resolution, key: str) -> str:
    value = resolution.value(key)
    return str(value).strip() if value not in (None, "") else STOCK[key]


def _true(text: str) -> bool:
    return text.strip().lower() in ("true", "1", "yes", "on")


def kept_by_service(resolution: Resolution) -> bool:
    """Whether the config's Woodpecker is a separate service (`woodpecker.storage.type` service), whose files are
    where the service's own config says: not derived."""
    return _value(resolution, "woodpecker.storage.type").lower() == "service"


def woodpecker_location(resolution: Resolution) -> WoodpeckerLocation:
    """The Woodpecker WAL the config's Milvus writes: a local folder or an s3:// URL with its endpoint and keys."""
    storage = _value(resolution, "woodpecker.storage.type").lower()
    type_from = f"woodpecker.storage.type {storage} ({resolution.where('woodpecker.storage.type')})"
    if storage == "local":
        root = _value(resolution, "woodpecker.storage.rootPath")
        if root == "default":
            base = _value(resolution, "localStorage.path").rstrip("/") or "/"
            where = resolution.where("localStorage.path")
            return WoodpeckerLocation(
                f"{base}/{WOODPECKER_ROOT}", f"{type_from}; localStorage.path {base} ({where}) + /{WOODPECKER_ROOT}"
            )
        return WoodpeckerLocation(
            root, f"{type_from}; woodpecker.storage.rootPath ({resolution.where('woodpecker.storage.rootPath')})"
        )
    if kept_by_service(resolution):
        raise PreconditionError(
            f"{type_from}: the WAL is kept by a separate Woodpecker service, where its own config says",
            hint="pass --woodpecker PATH or s3://BUCKET/PREFIX (with --s3-endpoint) of that service's storage",
        )
    if storage not in ("minio", "default", ""):
        raise InputError(f"{type_from}: not a storage type Woodpecker knows (minio, local, service)")
    address = _value(resolution, "minio.address")
    host = address
    if address.count(":") == 1:  # host:port, as net.SplitHostPort splits it
        host = address.split(":", 1)[0]
    elif address.startswith("[") and "]:" in address:
        host = address[: address.index("]") + 1]
    port = _value(resolution, "minio.port")
    if not port.isdigit():
        raise InputError(f"minio.port {port!r} ({resolution.where('minio.port')}) is not a port number")
    scheme = "https" if _true(_value(resolution, "minio.useSSL")) else "http"
    bucket = _value(resolution, "minio.bucketName")
    root = _value(resolution, "minio.rootPath").strip("/")
    prefix = "/".join(part for part in (root, WOODPECKER_ROOT) if part)
    iam = _true(_value(resolution, "minio.useIAM"))
    access = S3Access(
        endpoint=f"{scheme}://{host}:{port}",
        access_key=None if iam else _value(resolution, "minio.accessKeyID"),
        secret_key=None if iam else _value(resolution, "minio.secretAccessKey"),
        region=_value(resolution, "minio.region") or None,
    )
    return WoodpeckerLocation(
        f"s3://{bucket}/{prefix}",
        f"{type_from}; minio.bucketName, minio.rootPath + /{WOODPECKER_ROOT}, minio.address/port/useSSL"
        + (" (credentials from minio.useIAM)" if iam else " and minio.accessKeyID/secretAccessKey"),
        access,
    )
