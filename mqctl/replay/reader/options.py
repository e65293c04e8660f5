"""The options of the `milvus_mq` data source, parsed from the plain strings Spark hands over.

Spark passes data source options as a case-insensitive dict of strings, and pickles the data
source to Python workers, so everything here is built from strings and stays picklable.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mqctl.errors import InputError
from mqctl.replay.reader.schema import SHAPES
from mqctl.sorting import ascii_int

if TYPE_CHECKING:
    from mqctl.mq.model import MQSource
    from mqctl.replay.model import ChannelSpan

# Option names of NATS authentication and TLS, the same as `mqctl channels` takes.
NATS_AUTH_OPTIONS = ("user", "password", "token", "creds", "nkey", "tls_ca", "tls_cert", "tls_key")
INSERT_DELETE = frozenset({400, 401})
FROM_CHECKPOINT = "checkpoint"  # --from checkpoint: only what Milvus has not persisted (etcd channel checkpoints)
DEFAULT_MESSAGES_PER_PARTITION = 50_000


@dataclass(frozen=True)
class Bound:
    """One end of the replayed range: a message id / sequence, or a Milvus TSO (from a time too)."""

    kind: str  # "id" | "tso"
    value: int


def parse_bound(text: str, option: str, *, upper: bool) -> Bound:
    """`123` or `id:123` (id/sequence), `3/17` (a Woodpecker segment/entry), `tso:4471...` (Milvus TSO) or an
    ISO-8601 time (UTC if no zone)."""
    from mqctl.mq.decode.messages import TSO_LOGICAL_BITS, datetime_to_tso
    from mqctl.mq.woodpecker.source import parse_position

    raw = text.strip()
    position = parse_position(raw)
    if position is not None:
        return Bound("id", position)
    prefix, _, rest = raw.partition(":")
    whole, number = ascii_int(raw), ascii_int(rest)
    if whole is not None:
        return Bound("id", whole)
    if prefix.lower() in ("id", "seq") and number is not None:
        return Bound("id", number)
    if prefix.lower() == "tso" and number is not None:
        return Bound("tso", number)
    try:
        when = dt.datetime.fromisoformat(raw)
    except ValueError:
        raise InputError(
            f"{option} {text!r} is neither a sequence/id, segment/entry, tso:N nor an ISO-8601 time",
            hint="e.g. 1200, 3/17 (Woodpecker), tso:447112233445566778 or 2024-05-01T12:00:00Z",
        ) from None
    tso = datetime_to_tso(when)
    # An upper time bound includes every TSO of its millisecond.
    return Bound("tso", tso | ((1 << TSO_LOGICAL_BITS) - 1) if upper else tso)


@dataclass
class ReplayOptions:
    """Everything a replay reads from its options; built by `parse_options`."""

    rocksmq: str | None = None
    nats: str | None = None
    woodpecker: str | None = None  # a Woodpecker folder or s3://BUCKET/PREFIX (Milvus 2.6+)
    kafka: str | None = None  # a Kafka bootstrap list (SASL user and password, TLS files: in nats_auth's keys)
    kafka_topic_prefix: str | None = None
    kafka_security_protocol: str | None = None
    kafka_sasl_mechanism: str | None = None
    # the MinIO/S3 endpoint and region of an s3:// woodpecker; its credentials reach executors through their
    # environment (AWS_ACCESS_KEY_ID...), never through an option
    woodpecker_endpoint: str | None = None
    woodpecker_region: str | None = None
    woodpecker_logs: dict[int, str] = field(default_factory=dict)  # log id -> pchannel, from Woodpecker's etcd meta
    nats_auth: dict[str, str] = field(default_factory=dict)
    nats_timeout: float = 5.0  # seconds per NATS request
    channels: list[str] = field(default_factory=list)  # names or globs; empty = every channel
    start: Bound | None = None
    end: Bound | None = None
    ranges: list[tuple[str, int, int]] | None = None  # exact (channel, first, last) pieces, one partition each
    # --from checkpoint: vchannel -> (pchannel, checkpoint position); a vchannel's messages up to its
    # checkpoint are persisted by Milvus and skipped, pchannels without a checkpointed vchannel are not read
    after: dict[str, tuple[str, int]] | None = None
    types: frozenset[int] | None = None  # message type codes; None = all
    collection: str | None = None  # name or id
    shape: str = "messages"
    partitions: int | None = None
    messages_per_partition: int = DEFAULT_MESSAGES_PER_PARTITION
    milvus: str | None = None
    milvus_token: str | None = None
    collection_schema: str | None = None  # JSON from schema.schema_to_json, resolved by the caller
    progress: str | None = None  # host:port of a progress collector (see progress.py)

    @property
    def source_label(self) -> str:
        if self.woodpecker:
            return f"woodpecker:{self.woodpecker}"
        if self.kafka:
            return f"kafka://{self.kafka}"
        return f"rocksmq:{self.rocksmq}" if self.rocksmq else f"nats:{self.nats}"

    def open_source(self) -> MQSource:
        """A fresh MQSource (each partition opens its own: a private read-only reader or connection); exactly one
        of rocksmq, nats and woodpecker is set (parse_options checks it). A Woodpecker source is strict: a corrupt
        segment stops the replay in one line rather than leave its entries out."""
        if self.rocksmq:
            from mqctl.mq.rocksmq.reader import RocksMQSource

            return RocksMQSource(self.rocksmq)
        if self.woodpecker:
            from mqctl.mq.woodpecker.source import WoodpeckerSource
            from mqctl.mq.woodpecker.storage import S3Access

            access = S3Access(endpoint=self.woodpecker_endpoint, region=self.woodpecker_region)
            return WoodpeckerSource(self.woodpecker, names=self.woodpecker_logs, strict=True, access=access)
        if self.kafka:
            from mqctl.mq.kafka.connect import KafkaAccess
            from mqctl.mq.kafka.source import KafkaSource

            auth = self.nats_auth
            kafka = KafkaAccess(
                self.kafka,
                security_protocol=self.kafka_security_protocol,
                sasl_mechanism=self.kafka_sasl_mechanism,
                sasl_username=auth.get("user"),
                sasl_password=auth.get("password"),
                ssl_ca=auth.get("tls_ca"),
                ssl_cert=auth.get("tls_cert"),
                ssl_key=auth.get("tls_key"),
                timeout=self.nats_timeout,
            )
            return KafkaSource(kafka, topic_prefix=self.kafka_topic_prefix)
        from mqctl.mq.nats.client import JetStreamSource

        return JetStreamSource(self.nats or "", **self.nats_auth, timeout=self.nats_timeout)

    def select_channels(self, known: list[str]) -> list[str]:
        """The channels named by `channels` (names or globs), in the order given; every name must exist."""
        if not self.channels:
            return list(known)
        chosen: list[str] = []
        for pattern in self.channels:
            if any(ch in pattern for ch in "*?["):
                matched = [name for name in known if fnmatch.fnmatchcase(name, pattern)]
                if not matched:
                    raise InputError(
                        f"no channel matches {pattern!r} in {self.source_label}",
                        hint=f"known channels: {', '.join(known) or 'none'}",
                    )
            elif pattern in known:
                matched = [pattern]
            else:
                raise InputError(
                    f"unknown channel {pattern!r} in {self.source_label}",
                    hint=f"known channels: {', '.join(known) or 'none'}",
                )
            chosen.extend(name for name in matched if name not in chosen)
        return chosen

    def first_unpersisted(self) -> dict[str, int]:
        """pchannel -> the first position after the earliest checkpoint of its vchannels (--from checkpoint)."""
        starts: dict[str, int] = {}
        for pchannel, position in (self.after or {}).values():
            starts[pchannel] = min(starts.get(pchannel, position + 1), position + 1)
        return starts

    def persisted(self, shard: str | None, message_id: int) -> bool:
        """A message of a vchannel at or before its checkpoint (--from checkpoint): Milvus has it already."""
        checkpoint = (self.after or {}).get(shard or "")
        return checkpoint is not None and message_id <= checkpoint[1]

    def wants(self, type_code: int) -> bool:
        if self.shape == "rows":
            return type_code in INSERT_DELETE and (self.types is None or type_code in self.types)
        return self.types is None or type_code in self.types


def parse_options(options: Mapping[str, object]) -> ReplayOptions:
    """Validate data source options (a dict of strings); every mistake is one clear InputError."""
    opts = {str(k).lower(): str(v) for k, v in dict(options).items() if v is not None}
    rocksmq, nats = opts.get("rocksmq") or None, opts.get("nats") or None
    woodpecker, kafka = opts.get("woodpecker") or None, opts.get("kafka") or None
    if [bool(rocksmq), bool(nats), bool(woodpecker), bool(kafka)].count(True) != 1:
        raise InputError(
            "milvus_mq needs exactly one source: option 'rocksmq' (a RocksMQ directory), 'nats' (a URL), "
            "'woodpecker' (a Woodpecker folder or s3://BUCKET/PREFIX) or 'kafka' (HOST:PORT[,HOST:PORT])",
            hint='e.g. .option("nats", "nats://127.0.0.1:4222") or .option("rocksmq", "/var/lib/milvus/rdb_data")',
        )
    shape = (opts.get("shape") or ("rows" if opts.get("collection") else "messages")).lower()
    if shape not in SHAPES:
        raise InputError(f"option shape {shape!r} is not one of {', '.join(SHAPES)}")
    result = ReplayOptions(
        rocksmq=rocksmq,
        nats=nats,
        woodpecker=woodpecker,
        kafka=kafka,
        kafka_topic_prefix=opts.get("topic_prefix") or None,
        kafka_security_protocol=opts.get("security_protocol") or None,
        kafka_sasl_mechanism=opts.get("sasl_mechanism") or None,
        woodpecker_logs=_parse_logs(opts["woodpecker_logs"]) if opts.get("woodpecker_logs") else {},
        woodpecker_endpoint=opts.get("woodpecker_endpoint") or None,
        woodpecker_region=opts.get("woodpecker_region") or None,
        shape=shape,
        nats_auth={key: opts[key] for key in NATS_AUTH_OPTIONS if opts.get(key)},
        nats_timeout=_positive_float(opts, "timeout") or 5.0,
        channels=_split(opts.get("channels", "")),
        start=parse_bound(opts["from"], "from", upper=False) if opts.get("from") else None,
        end=parse_bound(opts["to"], "to", upper=True) if opts.get("to") else None,
        ranges=_parse_ranges(opts["ranges"]) if opts.get("ranges") else None,
        after=_parse_after(opts["after"]) if opts.get("after") else None,
        types=_parse_types(opts["types"]) if opts.get("types") else None,
        collection=opts.get("collection") or None,
        partitions=_positive_int(opts, "partitions"),
        messages_per_partition=_positive_int(opts, "messages_per_partition") or DEFAULT_MESSAGES_PER_PARTITION,
        milvus=opts.get("milvus") or None,
        milvus_token=opts.get("milvus_token") or None,
        collection_schema=opts.get("collection_schema") or None,
        progress=opts.get("progress") or None,
    )
    if shape == "rows" and not result.collection:
        raise InputError("shape 'rows' needs a collection (option 'collection', a name or an id)")
    if shape == "rows" and result.types is not None and not result.types & INSERT_DELETE:
        raise InputError(
            f"types {opts['types']!r} select no insert or delete message, and rows come only from those",
            hint="add insert and/or delete to the types, or use the messages shape",
        )
    return result


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _positive_int(opts: dict[str, str], key: str) -> int | None:
    if not opts.get(key):
        return None
    value = ascii_int(opts[key].strip())
    if value is None or value < 1:
        raise InputError(f"option {key} {opts[key]!r} is not a positive whole number")
    return value


def _positive_float(opts: dict[str, str], key: str) -> float | None:
    if not opts.get(key):
        return None
    try:
        value = float(opts[key])
    except ValueError:
        value = 0.0
    if value <= 0:
        raise InputError(f"option {key} {opts[key]!r} is not a positive number of seconds")
    return value


def _parse_types(text: str) -> frozenset[int]:
    from mqctl.mq.decode.messages import type_code

    codes = set()
    for name in _split(text):
        code = type_code(name)
        if code is None:
            raise InputError(f"unknown message type {name!r}", hint="e.g. insert, delete, timetick, createcollection")
        codes.add(code)
    return frozenset(codes)


def _parse_ranges(text: str) -> list[tuple[str, int, int]]:
    try:
        return [(str(channel), int(first), int(last)) for channel, first, last in json.loads(text)]
    except (ValueError, TypeError):
        raise InputError(
            'option ranges must be JSON like [["by-dev-rootcoord-dml_0", FIRST_ID, LAST_ID], ...]'
        ) from None


def _parse_logs(text: str) -> dict[int, str]:
    try:
        return {int(log_id): str(name) for log_id, name in json.loads(text).items()}
    except (ValueError, TypeError, AttributeError):
        raise InputError('option woodpecker_logs must be JSON like {"1": "by-dev-rootcoord-dml_0", ...}') from None


def logs_option(names: dict[int, str]) -> str:
    """The `woodpecker_logs` option for log id -> pchannel."""
    return json.dumps({str(log_id): name for log_id, name in sorted(names.items())})


def _parse_after(text: str) -> dict[str, tuple[str, int]]:
    try:
        return {str(vchannel): (str(pchannel), int(position)) for vchannel, pchannel, position in json.loads(text)}
    except (ValueError, TypeError):
        raise InputError(
            'option after must be JSON like [["<vchannel>", "<pchannel>", CHECKPOINT_POSITION], ...]'
        ) from None


def after_option(checkpoints: dict[str, tuple[str, int]]) -> str:
    """The `after` option for vchannel -> (pchannel, checkpoint position)."""
    return json.dumps([[vchannel, pchannel, position] for vchannel, (pchannel, position) in checkpoints.items()])


def ranges_option(pieces: Iterable[ChannelSpan]) -> str:
    """The `ranges` option for pieces (spans of one channel each)."""
    return json.dumps([[piece.channel, piece.first, piece.last] for piece in pieces])
