"""Where Woodpecker segment files live, read-only: a local folder (the `wp` folder or a directory copy of the
bucket) or an S3/MinIO bucket and prefix (`s3://BUCKET/PREFIX`). Both list the segments below their root, as
`<logId>/<segId>` holding `data.log` (local layout) or `N.blk`/`m_N.blk`/`footer.blk` (object layout), and hand
segments.py the bytes of one file at a time; the CRC checks, problems and states are segments.py's alone.

The bucket is read with the MinIO Python SDK, list and get only (`list_objects`, `get_object`). Its endpoint is
`--s3-endpoint` or the config's, else env AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, else AWS S3; its credentials
come from the config (minio.accessKeyID/secretAccessKey, with --config), then the SDK's providers: env
AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN, env MINIO_ACCESS_KEY/MINIO_SECRET_KEY, the AWS
credentials file (AWS_SHARED_CREDENTIALS_FILE, AWS_PROFILE), the mc config file's alias MINIO_ALIAS when set,
and, where the environment names one, an IAM web-identity token or container credentials URL. Without any,
requests go unsigned. Secrets never reach an error, a repr or a Spark option. Tested against moto's S3 server,
not yet against MinIO or AWS itself.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast
from urllib.parse import urlparse

from mqctl.errors import InputError, MqctlError, PreconditionError
from mqctl.mq.woodpecker.read_ahead import READ_AHEAD, ReadAhead, read_ahead
from mqctl.mq.woodpecker.s3_url import S3_SCHEME, is_s3_url, parse_s3_url
from mqctl.mq.woodpecker.segment_files import (
    Fetched,
    looks_numeric,
    max_file_bytes,
    misnamed,
    number_of,
    read_regular_file,
    read_regular_range,
    scan_segment_folders,
    segment_layout,
)
from mqctl.mq.woodpecker.segment_model import Segment, UnreadableFile, check_log
from mqctl.mq.woodpecker.segments import (
    MAX_FOOTER_BYTES,
    Data,
    read_local_bytes,
    read_object_files,
    unreadable_segment,
)

if TYPE_CHECKING:
    from minio import Minio

T = TypeVar("T")
AWS_ENDPOINT = "https://s3.amazonaws.com"
READ_CHUNK = 1 << 20  # bytes per read of a body: between two reads a fetch sees its stop event
ENDPOINT_ENV = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
CREDENTIAL_HINT = (
    "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or MINIO_ACCESS_KEY and MINIO_SECRET_KEY, or an AWS "
    "credentials file) to keys that may list and read the bucket"
)
# S3 error codes that mean the credentials were refused or lack a permission
DENIED = {
    "AccessDenied",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "InvalidToken",
    "TokenRefreshRequired",
    "AllAccessDisabled",
    "AccountProblem",
    "InvalidClientTokenId",
}
# every S3 request (the whole listing of the prefix, one object's read) must end within this many seconds,
# whatever the server does: a body that drips a byte at a time, a listing that answers after minutes or repeats
# `IsTruncated=true` with the same token forever (urllib3's read timeout restarts with every byte)
DEFAULT_S3_DEADLINE = 300.0
S3_DEADLINE_ENV = "MQCTL_S3_DEADLINE"


def s3_deadline() -> float:
    """Seconds one S3 request may take in all: MQCTL_S3_DEADLINE, else 300."""
    text = os.environ.get(S3_DEADLINE_ENV, "").strip()
    try:
        value = float(text)
    except ValueError:
        return DEFAULT_S3_DEADLINE
    return value if 0 < value < 1e7 else DEFAULT_S3_DEADLINE


@dataclass(frozen=True)
class SegmentPlace:
    """One segment folder: its layout, ids, where it is (a folder path or an object key prefix) and its files."""

    layout: str  # local | object
    log_id: int
    segment_id: int
    folder: str
    files: frozenset[str]
    problem: str | None = None  # why the folder is not read as a segment (a non-canonical name)


class SegmentFiles(Protocol):
    """Read-only access to the segment files below one root."""

    @property
    def description(self) -> str: ...

    def places(self) -> list[SegmentPlace]: ...

    def read(self, place: SegmentPlace, name: str) -> Data: ...

    def shown(self, place: SegmentPlace, name: str | None = None) -> str: ...


def read_place(files: SegmentFiles, place: SegmentPlace) -> Segment:
    """The segment at `place`, read and checked by segments.py; a misnamed folder or an unreadable data.log is a
    segment without entries whose Problem says why."""
    if place.problem is not None:
        found = unreadable_segment(place.log_id, place.segment_id, place.layout, files.shown(place), place.problem)
        found.state = "misnamed"
        found.problems[0].loses_entries = False
        return found
    if place.layout == "local":
        try:
            data = files.read(place, "data.log")
        except UnreadableFile as err:
            shown = files.shown(place, "data.log")
            return unreadable_segment(place.log_id, place.segment_id, "local", shown, err.what)
        return read_local_bytes(
            data,
            "write.fence" in place.files,
            place.log_id,
            place.segment_id,
            files.shown(place, "data.log"),
        )
    return read_object_files(
        place.files,
        lambda name: files.read(place, name),
        place.log_id,
        place.segment_id,
        lambda name: files.shown(place, name),
    )


def read_all(files: SegmentFiles, each: Callable[[Segment], None] | None = None) -> list[Segment]:
    """Every segment below the root, read in log and segment order, cross-checked across each log (check_log);
    `each(segment)` is called on each as soon as it is read (it may keep only its first and last entry)."""
    places = sorted(files.places(), key=lambda p: (p.log_id, p.segment_id, p.folder))
    read_ahead(files, places)
    found = []
    for place in places:
        segment = read_place(files, place)
        if each is not None:
            each(segment)
        found.append(segment)
    check_log(found)
    return sorted(found, key=lambda s: (s.log_id, s.segment_id))


# --- a local folder ------------------------------------------------------------------------------------------
class LocalFolder:
    """Segments below a folder, found as segment_files.find_segments finds them."""

    def __init__(self, root: Path):
        self.root = root
        self.description = str(root)

    def places(self) -> list[SegmentPlace]:
        return [
            SegmentPlace(layout, log_id, segment_id, str(folder), names, problem)
            for layout, folder, log_id, segment_id, problem, names in scan_segment_folders(self.root)
        ]

    def read(self, place: SegmentPlace, name: str) -> Data:
        """A regular file only, within the size cap (segment_files.read_regular_file): never a FIFO or device."""
        cap = MAX_FOOTER_BYTES if name == "footer.blk" else None
        return read_regular_file(Path(place.folder) / name, cap)

    def shown(self, place: SegmentPlace, name: str | None = None) -> str:
        return str(Path(place.folder) / name) if name is not None else place.folder

    def read_range(self, place: SegmentPlace, name: str, start: int | None, length: int) -> tuple[int, Data]:
        """(the file's size, `length` bytes from `start`, or its last `length` bytes when `start` is None): a local
        data.log's footer and index, one block."""
        return read_regular_range(Path(place.folder) / name, start, length)


# --- an S3/MinIO bucket --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class S3Access:
    """How to reach a bucket: the endpoint URL (None: env, else AWS), credentials given by a config (None: the
    SDK's providers) and the region. The secrets stay out of repr and every message."""

    endpoint: str | None = None
    access_key: str | None = field(default=None, repr=False)
    secret_key: str | None = field(default=None, repr=False)
    region: str | None = None

    def endpoint_url(self) -> str:
        for value in (self.endpoint, *(os.environ.get(name) for name in ENDPOINT_ENV)):
            if value:
                return value
        return AWS_ENDPOINT


def _client(access: S3Access) -> tuple[Minio, str, bool]:
    """A MinIO client for the endpoint (with few retries and bounded timeouts, so an unreachable endpoint fails in
    seconds), the endpoint as shown, and whether its requests are signed (credentials were found)."""
    import certifi
    import urllib3
    from minio import Minio
    from minio.credentials.providers import (
        AWSConfigProvider,
        ChainedProvider,
        EnvAWSProvider,
        EnvMinioProvider,
        IamAwsProvider,
        MinioClientConfigProvider,
        Provider,
        StaticProvider,
    )

    url = access.endpoint_url()
    parsed = urlparse(url if "://" in url else f"https://{url}")
    fix = "give the endpoint as http(s)://HOST[:PORT] (--s3-endpoint, or env AWS_ENDPOINT_URL)"
    try:
        port = parsed.port
    except ValueError:
        raise InputError(f"S3 endpoint {url!r}: the port is not a number", hint=fix) from None
    if parsed.scheme not in ("http", "https") or not parsed.hostname or parsed.path.strip("/") or parsed.query:
        raise InputError(f"S3 endpoint {_shown_endpoint(url)!r} is not http(s)://HOST[:PORT]", hint=fix)
    if parsed.username or parsed.password:
        raise InputError(
            f"S3 endpoint {_shown_endpoint(url)!r} carries credentials",
            hint="drop them from the URL and set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY instead",
        )
    host = parsed.hostname if port is None else f"{parsed.hostname}:{port}"
    if ":" in parsed.hostname:  # IPv6
        host = f"[{parsed.hostname}]" + (f":{port}" if port is not None else "")
    providers: list[Provider] = []
    if access.access_key and access.secret_key:
        providers.append(StaticProvider(access.access_key, access.secret_key))
    providers += [EnvAWSProvider(), EnvMinioProvider(), AWSConfigProvider()]
    if os.environ.get("MINIO_ALIAS"):  # mc's own default alias `s3` holds placeholder keys: only one named
        providers.append(MinioClientConfigProvider())
    iam_env = (
        "AWS_WEB_IDENTITY_TOKEN_FILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    )
    if any(os.environ.get(name) for name in iam_env):
        providers.append(IamAwsProvider())
    chain = ChainedProvider(providers)
    found: Provider | None = chain
    try:
        chain.retrieve()  # the provider that answers is kept, and asked again when its keys expire
    except ValueError:
        found = None  # no credentials anywhere: unsigned requests (a public bucket)
    except Exception as err:  # an IAM endpoint that fails: say so, without its reply
        raise PreconditionError(f"cannot get S3 credentials ({type(err).__name__})", hint=CREDENTIAL_HINT) from None
    http = urllib3.PoolManager(
        timeout=urllib3.Timeout(connect=10, read=60),
        maxsize=READ_AHEAD + 1,  # the fetches ahead and one direct read
        cert_reqs="CERT_REQUIRED",
        ca_certs=os.environ.get("SSL_CERT_FILE") or certifi.where(),
        retries=urllib3.Retry(total=2, backoff_factor=0.2, status_forcelist=[500, 502, 503, 504]),
    )
    region = access.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None
    try:
        client = Minio(host, secure=parsed.scheme == "https", region=region, http_client=http, credentials=found)
    except ValueError as err:
        raise InputError(f"S3 endpoint {_shown_endpoint(url)!r}: {err}", hint=fix) from None
    return client, f"{parsed.scheme}://{host}", found is not None


def _shown_endpoint(url: str) -> str:
    """The endpoint fit to print: without any `user:password@`."""
    return re.sub(r"//[^/@]*@", "//", url)


_OBJECT_REPR = re.compile(r"<[^<>]*object at 0x[0-9a-f]+>:?\s*|\w+Connection\(host=[^)]*\):\s*")


class S3Prefix:
    """Segments below `s3://BUCKET/PREFIX`, read through the MinIO SDK (list and get only).

    Listed once (`places`); each object fetched once, ahead of the reader once told what is read next (read_ahead.py)."""

    def __init__(self, url: str, access: S3Access | None = None):
        self.url = parse_s3_url(url)
        self.access = access or S3Access()
        self.client, self.endpoint, self.signed = _client(self.access)
        self.description = str(self.url)
        self.ahead = ReadAhead(self._get)

    def _key(self, *parts: str) -> str:
        return "/".join(part for part in (self.url.prefix, *parts) if part)

    @contextlib.contextmanager
    def _calling(self, what: str) -> Iterator[None]:
        """Every SDK error as one line (exit 2 for a missing bucket, 3 for the rest), never with a secret."""
        try:
            yield
        except (MqctlError, UnreadableFile):
            raise
        except Exception as err:
            raise self._failure(err, what) from None

    def _bounded(self, what: str, call: Callable[[threading.Event], T]) -> T:
        """call(stop) in a daemon thread, waited for at most s3_deadline() seconds in all: past it, one line
        (exit 3) and `stop` is set so the call gives up at its next chunk or key; the thread cannot outlive the
        process."""
        deadline = s3_deadline()
        stop, done = threading.Event(), threading.Event()
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["value"] = call(stop)
            except BaseException as err:  # handed to the caller's thread
                box["error"] = err
            finally:
                done.set()

        threading.Thread(target=run, name="mqctl-s3", daemon=True).start()
        if not done.wait(deadline):
            stop.set()
            raise PreconditionError(
                f"{what} at {self.endpoint}: no whole answer within {deadline:g} s",
                hint=f"the server is stuck or too slow (a body that drips, a listing that never ends); {S3_DEADLINE_ENV}"
                " sets the deadline in seconds",
            )
        if "error" in box:
            raise box["error"]
        return cast(T, box["value"])

    def _failure(self, err: Exception, what: str) -> MqctlError:
        failure = self._described(err, f"{what} at {self.endpoint}")
        if self.signed or isinstance(failure, InputError):
            return failure
        return PreconditionError(
            f"{failure.message}; no S3 credentials were found, so the request went unsigned", hint=CREDENTIAL_HINT
        )

    def _described(self, err: Exception, where: str) -> MqctlError:
        import urllib3
        from minio.error import InvalidResponseError, S3Error, ServerError

        if isinstance(err, S3Error):
            if err.code == "NoSuchBucket":
                return InputError(
                    f"{where}: bucket {self.url.bucket!r} does not exist",
                    hint="check the bucket (minio.bucketName) and the endpoint (--s3-endpoint or AWS_ENDPOINT_URL)",
                )
            if err.code in DENIED:
                return PreconditionError(f"{where}: access denied ({err.code})", hint=CREDENTIAL_HINT)
            if err.code == "NoSuchKey":
                return PreconditionError(
                    f"{where}: the object is gone (deleted while read?)", hint="run the command again"
                )
            return PreconditionError(f"{where}: S3 error {err.code}: {err.message}")
        if isinstance(err, ServerError):
            return PreconditionError(f"{where}: the server answered HTTP {err.status_code}", hint="try again later")
        if isinstance(err, InvalidResponseError):
            return PreconditionError(
                f"{where}: the endpoint does not answer as S3 does",
                hint="check --s3-endpoint (or AWS_ENDPOINT_URL): it must be the S3 API port of MinIO, not its console",
            )
        reason = getattr(err, "reason", None) or err
        if isinstance(reason, urllib3.exceptions.ResponseError):  # retries used up on 5xx answers
            return PreconditionError(f"{where}: the server keeps failing ({reason})", hint="try again later")
        if isinstance(err, (urllib3.exceptions.HTTPError, OSError)):
            errno = re.search(r"\[Errno -?\d+\][^'\")]*", str(reason))
            text = errno.group(0).strip() if errno else _OBJECT_REPR.sub("", str(reason)).strip()
            return PreconditionError(
                f"{where}: cannot reach the endpoint: {text or type(reason).__name__}",
                hint="check --s3-endpoint (or AWS_ENDPOINT_URL) and that the server runs and is reachable from here",
            )
        return PreconditionError(f"{where}: {type(err).__name__}")

    def _names(self) -> list[str]:
        prefix = self._key() + "/" if self.url.prefix else ""
        what = f"listing {self.description}"

        def listing(stop: threading.Event) -> list[str]:
            names = []
            for item in self.client.list_objects(self.url.bucket, prefix, recursive=True):
                if stop.is_set():
                    break
                names.append(str(item.object_name))
            return names

        with self._calling(what):
            return self._bounded(what, listing)

    def places(self) -> list[SegmentPlace]:
        """`<logId>/<segId>/<file>` keys below the prefix, grouped into segments (the listing of a folder copy)."""
        folders: dict[str, set[str]] = {}
        for key in self._names():
            folder, _, name = key.rpartition("/")
            folders.setdefault(folder, set()).add(name)
        found = []
        for folder in sorted(folders):
            parts = folder.split("/")
            if len(parts) < 2 or not looks_numeric(parts[-1]) or not looks_numeric(parts[-2]):
                continue
            names = folders[folder]
            layout = segment_layout(names)
            if layout is None:
                continue
            problem = misnamed(parts[-2], parts[-1])
            found.append(
                SegmentPlace(layout, number_of(parts[-2]), number_of(parts[-1]), folder, frozenset(names), problem)
            )
        return found

    def read(self, place: SegmentPlace, name: str) -> Data:
        """The object's bytes, within the size cap (segment_files.max_file_bytes, MAX_FOOTER_BYTES for footer.blk) and the
        deadline; an object past the cap is an UnreadableFile (a Problem of its segment), not a MemoryError."""
        key = f"{place.folder}/{name}"
        ahead = self.ahead.take(key)
        if ahead is not None:
            return ahead.result()
        return self._get(key, name)

    def _get(self, key: str, name: str) -> Data:
        what = f"reading {S3_SCHEME}{self.url.bucket}/{key}"
        cap = MAX_FOOTER_BYTES if name == "footer.blk" else max_file_bytes()

        def fetch(stop: threading.Event) -> Data:
            response: Any = self.client.get_object(self.url.bucket, key)
            try:
                length = response.headers.get("Content-Length")
                if length is not None and length.isdigit() and int(length) > cap:
                    raise UnreadableFile(f"{name} holds {length} bytes, more than the {cap}-byte cap: not read")
                # the announced length is allocated once (one copy of the object in memory); without one, grown
                announced = int(length) if length is not None and length.isdigit() else None
                data = Fetched(announced or 0)
                got = 0
                while not stop.is_set():
                    # Never more than the announced rest: urllib3 2.x reads that ask past the end of a body cost
                    # more CPU per byte (docs/benchmarks.md, "Reads that stop at the announced length"). Once the
                    # announced bytes are in, one more read finds the end, or a body longer than announced, which
                    # the reader then reports as before.
                    wanted = READ_CHUNK if announced is None or got >= announced else min(READ_CHUNK, announced - got)
                    chunk = response.read(wanted)
                    if not chunk:
                        break
                    if got + len(chunk) > cap:
                        raise UnreadableFile(f"{name} holds more than the {cap}-byte cap: not read")
                    data[got : got + len(chunk)] = chunk
                    got += len(chunk)
                del data[got:]
                if not stop.is_set():
                    data.checksum_blocks(name)  # here, in the fetching thread (a read-ahead one)
                return data
            finally:
                response.close()
                response.release_conn()

        with self._calling(what):
            return self._bounded(what, fetch)

    def shown(self, place: SegmentPlace, name: str | None = None) -> str:
        key = f"{place.folder}/{name}" if name is not None else place.folder
        return f"{S3_SCHEME}{self.url.bucket}/{key}"


def open_segment_files(location: str | Path, access: S3Access | None = None) -> SegmentFiles:
    """A LocalFolder, or an S3Prefix for an `s3://` URL (other URL schemes are refused)."""
    text = str(location)
    if is_s3_url(text):
        return S3Prefix(text, access)
    if "://" in text:
        scheme = text.split("://", 1)[0]
        raise InputError(
            f"{scheme}:// is not a Woodpecker location mqctl reads",
            hint="give a folder, or s3://BUCKET/PREFIX for MinIO/S3 (with --s3-endpoint for MinIO)",
        )
    return LocalFolder(Path(text).expanduser())
