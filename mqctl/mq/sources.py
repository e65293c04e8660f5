"""Choosing and opening the one MQ source a command reads: --rocksmq, --nats, --nats-store, --woodpecker, --kafka
or --config."""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mqctl.backends import BACKENDS, EMBEDDED, port_of
from mqctl.errors import InputError, PreconditionError
from mqctl.mq.model import MQSource

if TYPE_CHECKING:
    from mqctl.config.resolve.resolution import Resolution
    from mqctl.mq.kafka.connect import KafkaAccess
    from mqctl.mq.nats.client import JetStreamSource
    from mqctl.mq.woodpecker.meta import WoodpeckerMeta
    from mqctl.mq.woodpecker.storage import S3Access

ROCKSMQ, NATSMQ = BACKENDS["rocksmq"], BACKENDS["natsmq"]
CLUSTER_PREFIX_KEY = "msgChannel.chanNamePrefix.cluster"  # the first part of every channel name


@dataclass
class SourceOptions:
    """What the user passed; exactly one source, or --config to derive it."""

    rocksmq: Path | None = None
    nats: str | None = None
    nats_store: Path | None = None
    woodpecker: str | None = None  # the local `wp` folder, a directory copy of the bucket, or s3://BUCKET/PREFIX
    s3_endpoint: str | None = None  # --s3-endpoint: the MinIO/S3 endpoint of an s3:// --woodpecker
    kafka: str | None = None  # --kafka: a bootstrap list, HOST:PORT[,HOST:PORT...]
    security_protocol: str | None = None  # Kafka: plaintext, ssl, sasl_plaintext, sasl_ssl
    sasl_mechanism: str | None = None  # Kafka: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512...
    topic_prefix: str | None = None  # Kafka: only the topics whose names start with it (a cluster's chanNamePrefix)
    config: list[Path] = field(default_factory=list)
    user: str | None = None
    password: str | None = None
    token: str | None = None
    creds: str | None = None
    nkey: str | None = None
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    timeout: float = 5.0
    # --woodpecker: Woodpecker's etcd meta names its logs after their pchannels (not one of the source options:
    # each command declares --etcd/--etcd-root itself)
    etcd: str | None = None
    etcd_root: str | None = None
    # the endpoint, region and keys --config names for its Woodpecker bucket (set by resolve_source when --config
    # derives the WAL; an explicit s3:// --woodpecker reaches keys through the environment)
    s3_access: S3Access | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        from mqctl.mq.nats.connect import check_timeout

        check_timeout(self.timeout)

    @property
    def explicit(self) -> list[str]:
        return [
            name
            for name, value in (
                ("--rocksmq", self.rocksmq),
                ("--nats", self.nats),
                ("--nats-store", self.nats_store),
                ("--woodpecker", self.woodpecker),
                ("--kafka", self.kafka),
            )
            if value
        ]

    def nats_auth(self) -> dict[str, Any]:
        return {
            "user": self.user,
            "password": self.password,
            "token": self.token,
            "creds": self.creds,
            "nkey": self.nkey,
            "tls_ca": self.tls_ca,
            "tls_cert": self.tls_cert,
            "tls_key": self.tls_key,
            "timeout": self.timeout,
        }

    def kafka_access(self, resolution: Resolution | None = None) -> KafkaAccess:
        """How to reach the Kafka of --kafka (with --user/--password as SASL and --tls-* as TLS), or the one the
        config's kafka.* settings describe."""
        from mqctl.mq.kafka.connect import KafkaAccess, access_from_config

        if self.kafka:
            return KafkaAccess(
                self.kafka,
                security_protocol=self.security_protocol,
                sasl_mechanism=self.sasl_mechanism,
                sasl_username=self.user,
                sasl_password=self.password,
                ssl_ca=self.tls_ca,
                ssl_cert=self.tls_cert,
                ssl_key=self.tls_key,
                timeout=self.timeout,
            )
        return access_from_config(resolution if resolution is not None else load_config(self.config), self.timeout)


def load_config(files: list[Path]) -> Resolution:
    """The `mqctl config` resolution of the given files (effective MQ and values with Milvus defaults)."""
    from mqctl.config.resolve.resolution import resolve

    return resolve(list[Path | str](files))


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class DerivedSource:
    """Where --config says the MQ lives on this host."""

    kind: str  # rocksmq | nats | nats-store | woodpecker | kafka
    location: str
    reason: str
    access: S3Access | None = field(default=None, repr=False)  # woodpecker in a bucket: endpoint and keys


def derive_source(resolution: Resolution) -> DerivedSource:
    """The local source of the effective MQ: rocksmq.path; or the embedded NATS on 127.0.0.1 when it
    listens (Milvus runs), else natsmq.server.storeDir (Milvus stopped); or Woodpecker's folder or bucket
    (woodpecker/location.py)."""
    mq = resolution.effective_mq
    files = ", ".join(resolution.files)
    if mq is None and resolution.panic:
        raise InputError(
            f"mq.type {resolution.mq_type!r} ({resolution.where('mq.type')}): Milvus would not start "
            f"with this config: it panics `{resolution.panic}` at startup",
            hint="fix the config; `mqctl config validate` says how",
        )
    if mq == "woodpecker":
        from mqctl.mq.woodpecker.location import woodpecker_location

        found = woodpecker_location(resolution)
        return DerivedSource("woodpecker", found.location, found.reason, found.access)
    if mq == "kafka":
        from mqctl.mq.kafka.connect import BROKER_LIST_KEY, access_from_config

        access = access_from_config(resolution)
        return DerivedSource("kafka", access.bootstrap, f"{BROKER_LIST_KEY} from {resolution.where(BROKER_LIST_KEY)}")
    if mq not in EMBEDDED:
        raise PreconditionError(
            f"{files}: the effective MQ is {mq or 'none'}; mqctl channels/retention read "
            f"{', '.join(EMBEDDED)}, kafka and woodpecker only",
            hint="see `mqctl config explain` for why",
        )
    if mq == ROCKSMQ.name:
        key = ROCKSMQ.store_key or ""
        return DerivedSource("rocksmq", _store_path(resolution, key), f"{key} from {resolution.where(key)}")
    port_key, store_key, default_port = NATSMQ.port_key or "", NATSMQ.store_key or "", NATSMQ.default_port or 0
    port_text = resolution.value(port_key) or str(default_port)
    parsed = port_of(NATSMQ.name, port_text)
    port = parsed if parsed is not None and parsed < 65536 else default_port
    if port > 0 and _listening(port):
        return DerivedSource("nats", f"nats://127.0.0.1:{port}", f"{port_key} {port} is listening (Milvus runs)")
    return DerivedSource(
        "nats-store",
        _store_path(resolution, store_key),
        f"{store_key} from {resolution.where(store_key)}"
        f" (nothing listens on port {port}"
        + ("" if str(port) == port_text else f", the default for {port_text!r}")
        + ")",
    )


def _store_path(resolution: Resolution, key: str) -> str:
    """The store folder `key` names; a key written empty (`storeDir: ~`) names none."""
    path = resolution.value(key)
    if not path:
        raise InputError(
            f"{key} is empty ({resolution.where(key)}), so the config names no store to read",
            hint="set it to the store's folder, or pass --rocksmq or --nats-store explicitly",
        )
    return path


def choose_source(options: SourceOptions, resolution: Resolution | None = None) -> tuple[str, str]:
    """(kind, location) of the one source: kind is rocksmq, nats, nats-store or woodpecker. An explicit option wins;
    otherwise --config derives it (and a derived path must exist on this host)."""
    explicit = options.explicit
    if len(explicit) > 1:
        raise InputError(
            f"choose one source, not {' and '.join(explicit)}",
            hint="pass exactly one of --rocksmq PATH, --nats URL, --nats-store DIR, --woodpecker PATH|s3://BUCKET/PREFIX, "
            "--kafka HOST:PORT (or --config FILE)",
        )
    local_woodpecker = options.woodpecker is not None and "://" not in options.woodpecker
    if options.s3_endpoint and (local_woodpecker or not (options.woodpecker or options.config)):
        raise InputError(
            "--s3-endpoint is where an s3:// --woodpecker is read", hint="add --woodpecker s3://BUCKET/PREFIX"
        )
    if explicit:
        kind = explicit[0].lstrip("-")
        locations = {
            "rocksmq": options.rocksmq,
            "nats": options.nats,
            "nats-store": options.nats_store,
            "woodpecker": options.woodpecker,
            "kafka": options.kafka,
        }
        return kind, str(locations[kind])
    if not options.config:
        raise InputError(
            "no MQ source given",
            hint="pass --rocksmq PATH, --nats URL, --nats-store DIR, --kafka HOST:PORT, or --config FILE to derive it",
        )
    derived = derive_source(resolution if resolution is not None else load_config(options.config))
    return derived.kind, _on_this_host(derived)


def _on_this_host(derived: DerivedSource) -> str:
    """The derived location, which must exist on this host when it is a path."""
    if (
        derived.kind not in ("nats", "kafka")
        and "://" not in derived.location
        and not Path(derived.location).expanduser().exists()
    ):
        hint = "run mqctl on the Milvus host, or pass --rocksmq, --nats-store or --nats explicitly"
        if derived.kind == "woodpecker":
            hint = "run mqctl on the Milvus host, or pass --woodpecker PATH|s3://BUCKET/PREFIX explicitly"
        raise InputError(f"{derived.location} does not exist on this host ({derived.reason})", hint=hint)
    return derived.location


def resolve_source(options: SourceOptions, resolution: Resolution | None = None) -> SourceOptions:
    """The options with the Woodpecker WAL --config derives filled in as --woodpecker is: its folder or s3:// URL
    in `woodpecker`, the config's endpoint, region and keys in `s3_access` (never shown; --s3-endpoint still wins).
    From here on a derived WAL takes every path an explicit one takes. Any other options are returned as given (an
    explicit source wins over --config; the other MQs are derived where they are opened)."""
    if options.explicit or not options.config:
        return options
    resolution = resolution if resolution is not None else load_config(options.config)
    if resolution.effective_mq != "woodpecker":
        return options
    derived = derive_source(resolution)
    return dataclasses.replace(options, woodpecker=_on_this_host(derived), s3_access=derived.access)


@contextlib.contextmanager
def open_source(
    options: SourceOptions, *, resolution: Resolution | None = None, writable_store: bool = False
) -> Iterator[MQSource]:
    """Open the chosen source read-only (a store only `writable_store` for retention apply); closes it after."""
    options = resolve_source(options, resolution)
    kind, location = choose_source(options, resolution)
    if options.topic_prefix is not None and kind != "kafka":
        raise InputError("--topic-prefix chooses Kafka topics", hint="drop it, or read a Kafka with --kafka HOST:PORT")
    if kind == "rocksmq":
        from mqctl.mq.rocksmq.reader import RocksMQSource

        source = RocksMQSource(location)
        try:
            yield source
        finally:
            source.close()
        return
    if kind == "woodpecker":
        with open_woodpecker(options, location) as logs:
            yield logs
        return
    if kind == "kafka":
        from mqctl.mq.kafka.source import KafkaSource

        with KafkaSource(
            options.kafka_access(resolution), topic_prefix=kafka_topic_prefix(options, resolution)
        ) as topics:
            yield topics
        return
    with _open_jetstream(options, kind, location, writable_store) as streams:
        yield streams


def kafka_topic_prefix(options: SourceOptions, resolution: Resolution | None) -> str | None:
    """--topic-prefix; else, when --config names the Kafka, its Milvus's `msgChannel.chanNamePrefix.cluster` (every
    topic Milvus makes starts with it: a Kafka shared with other applications shows only this Milvus's)."""
    if options.topic_prefix is not None or options.kafka or not options.config:
        return options.topic_prefix or None
    resolution = resolution if resolution is not None else load_config(options.config)
    return f"{resolution.value(CLUSTER_PREFIX_KEY) or 'by-dev'}-"


@contextlib.contextmanager
def open_streams(options: SourceOptions, *, writable_store: bool = False) -> Iterator[JetStreamSource]:
    """open_source for the NATS sources only (--nats or --nats-store), which can change stream limits."""
    kind, location = choose_source(options)
    if kind in ("rocksmq", "woodpecker", "kafka"):
        name = {"rocksmq": "RocksMQ", "woodpecker": "Woodpecker", "kafka": "Kafka"}[kind]
        raise InputError(f"this needs NATS streams, not {name}", hint="pass --nats URL or --nats-store DIR")
    with _open_jetstream(options, kind, location, writable_store) as streams:
        yield streams


def woodpecker_log_names(options: SourceOptions) -> dict[int, str]:
    """Log id -> pchannel from Woodpecker's etcd meta when --etcd is given (else none: logs go by their ids)."""
    if not options.etcd:
        if options.etcd_root:
            raise InputError("--etcd-root needs --etcd", hint="add --etcd URL, or drop --etcd-root")
        return {}
    from mqctl.config.resolve.sources import DEFAULT_ETCD_ROOT, EtcdConfig
    from mqctl.mq.woodpecker.source import log_names

    return log_names(EtcdConfig(options.etcd, options.etcd_root or DEFAULT_ETCD_ROOT))


def woodpecker_meta(options: SourceOptions) -> WoodpeckerMeta | None:
    """Woodpecker's etcd record when --etcd is given (log names, and each closed segment's LastEntryId to check the
    files against), else None."""
    if not options.etcd:
        woodpecker_log_names(options)  # --etcd-root alone is refused there
        return None
    from mqctl.config.resolve.sources import DEFAULT_ETCD_ROOT, EtcdConfig
    from mqctl.mq.woodpecker.meta import read_woodpecker_meta

    return read_woodpecker_meta(EtcdConfig(options.etcd, options.etcd_root or DEFAULT_ETCD_ROOT))


def woodpecker_access(options: SourceOptions) -> S3Access:
    """The endpoint and keys of an s3:// Woodpecker location: --s3-endpoint wins over the config's endpoint; the
    config's keys (if --config derived the location) come before the environment's."""
    from mqctl.mq.woodpecker.storage import S3Access
    from mqctl.urls import check_url

    derived = options.s3_access or S3Access()
    access = dataclasses.replace(derived, endpoint=options.s3_endpoint or derived.endpoint)
    origin = "--s3-endpoint" if options.s3_endpoint else "the S3 endpoint (config or env AWS_ENDPOINT_URL)"
    check_url(access.endpoint_url(), origin)  # a missing bracket or a bad port: one line, the password masked
    return access


@contextlib.contextmanager
def open_woodpecker(options: SourceOptions, location: str, *, strict: bool = False) -> Iterator[MQSource]:
    from mqctl.mq.woodpecker.source import WoodpeckerSource

    meta = woodpecker_meta(options)
    with WoodpeckerSource(location, strict=strict, access=woodpecker_access(options), meta=meta) as logs:
        yield logs


@contextlib.contextmanager
def _open_jetstream(
    options: SourceOptions, kind: str, location: str, writable_store: bool
) -> Iterator[JetStreamSource]:
    from mqctl.mq.nats.client import JetStreamSource
    from mqctl.mq.nats.server import private_nats_server

    if kind == "nats":
        with JetStreamSource(location, **options.nats_auth()) as source:
            yield source
        return
    with private_nats_server(location, writable=writable_store) as url:
        with JetStreamSource(url, timeout=options.timeout) as store_source:
            store_source.description = f"nats-store:{Path(location).expanduser()}"
            store_source.store = Path(location)
            yield store_source


@contextlib.contextmanager
def store_copy(options: SourceOptions) -> Iterator[SourceOptions]:
    """The same options over a private copy of --nats-store (removed afterwards): `retention apply` plans and
    rehearses there, so the store itself is touched only once the change is confirmed."""
    from mqctl.mq.nats.server import copy_store, idle_store_root, remove_private

    root = idle_store_root(options.nats_store or "")  # the store is written to next: every user counts
    work = Path(tempfile.mkdtemp(prefix="mqctl-rehearsal-"))
    try:
        yield dataclasses.replace(options, nats_store=copy_store(root, work / "store"))
    finally:
        remove_private(work)
