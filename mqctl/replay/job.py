"""The replay job behind `mqctl replay --to-spark`: plan on the driver, read with `milvus_mq`, write.

Everything that can be checked without Spark is checked first (source reachable, channels
known, collection found, output free), so a mistake costs no JVM start-up.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mqctl.errors import InputError, PreconditionError
from mqctl.files import overlap, refuse_overlap
from mqctl.mq.sources import SourceOptions
from mqctl.replay.options import (
    FROM_CHECKPOINT,
    NATS_AUTH_OPTIONS,
    ReplayOptions,
    after_option,
    logs_option,
    parse_bound,
    parse_options,
    ranges_option,
)
from mqctl.replay.planning import ChannelSpan, plan_spans, split_spans
from mqctl.replay.resume import ResumeState
from mqctl.replay.write import write_with_progress

if TYPE_CHECKING:
    from mqctl.mq.woodpecker.storage import S3Access

FORMATS = ("parquet", "json", "orc", "csv")
MODES = ("append", "overwrite", "error")


@dataclass
class ReplayRequest:
    source: SourceOptions
    output: str | None = None
    format: str = "parquet"
    table: str | None = None
    mode: str | None = None  # default: error, or append with a checkpoint
    channels: list[str] = field(default_factory=list)
    collection: str | None = None
    shape: str | None = None  # default: rows with a collection, else messages
    start: str | None = None
    end: str | None = None
    types: str | None = None
    partition_by: list[str] = field(default_factory=list)
    partitions: int | None = None
    master: str = "local[*]"
    remote: str | None = None  # sc://HOST:PORT: a Spark Connect server instead of --master
    ship: bool = True  # send mqctl's runtime to a cluster's executors (see shipping.py)
    spark_conf: dict[str, str] = field(default_factory=dict)
    checkpoint: str | None = None
    milvus: str | None = None
    milvus_token: str | None = None
    etcd: str | None = None  # --from checkpoint: where Milvus keeps its channel checkpoints
    etcd_root: str | None = None


@dataclass
class ChannelResult:
    name: str
    first_id: int
    last_id: int
    planned: int  # messages in the range (estimated for RocksMQ, whose ids have gaps)
    messages: int | None = None  # None when executors could not report (see progress.py)
    rows: int | None = None
    bytes: int | None = None


@dataclass
class ReplayResult:
    source: str
    target: str
    format: str
    mode: str
    shape: str
    collection: str | None
    schema_origin: str | None  # stream | milvus | inferred (rows shape)
    partitions: int
    run: int | None  # replay_run written (with --checkpoint)
    checkpoint: str | None
    written: bool
    messages: int | None
    rows: int | None
    bytes: int | None
    seconds: float
    rows_per_second: float | None
    messages_per_second: float | None
    spark_startup_seconds: float | None
    channels: list[ChannelResult] = field(default_factory=list)


ProgressCallback = Callable[[list[ChannelResult]], None]


def resolved_request(request: ReplayRequest) -> ReplayRequest:
    """The request with defaults filled in and every option checked that needs no I/O."""
    if bool(request.output) == bool(request.table):
        raise InputError("give exactly one target: --output PATH (with --format) or --table NAME")
    if request.format not in FORMATS:
        raise InputError(f"--format {request.format!r} is not one of {', '.join(FORMATS)}")
    shape = request.shape or ("rows" if request.collection else "messages")
    mode = request.mode or ("append" if request.checkpoint else "error")
    if mode not in MODES:
        raise InputError(f"--mode {mode!r} is not one of {', '.join(MODES)}")
    if request.checkpoint and mode != "append":
        raise InputError(
            f"--checkpoint adds each run to the output; --mode {mode} cannot go with it",
            hint="drop --mode (append is implied), or drop --checkpoint",
        )
    from mqctl.replay.session import check_master, check_remote

    check_master(request.master)
    if (request.etcd or request.etcd_root) and request.start != FROM_CHECKPOINT and not request.source.woodpecker:
        raise InputError(
            "--etcd/--etcd-root are read only with --from checkpoint (or --woodpecker, to name its logs)",
            hint="add --from checkpoint, or drop --etcd",
        )
    if request.source.kafka and request.start == FROM_CHECKPOINT:
        raise PreconditionError(
            "replay --from checkpoint from Kafka is not supported yet",
            hint="replay the topics whole, or --from an offset or a time (`mqctl channels checkpoints --kafka` shows "
            "each vchannel's checkpoint offset)",
        )
    if request.remote:
        check_remote(request.remote)
    for text, option, upper in ((request.start, "--from", False), (request.end, "--to", True)):
        if text and text != FROM_CHECKPOINT:
            parse_bound(text, option, upper=upper)  # named as the command line names it
    return dataclasses.replace(request, shape=shape, mode=mode)


def check_no_overlap(source: SourceOptions, paths: dict[str, str | None], *, mutual: bool = True) -> None:
    """Refuse an output or checkpoint that is, holds or lies inside a source folder (resolved, symlinks
    followed): writing there would change Milvus's data; with `mutual`, two of our own folders may not nest
    either."""
    protected = source_folders(source)
    mine = {option: path for option, path in paths.items() if path and "://" not in path}
    for option, path in mine.items():
        refuse_overlap(path, option, protected)
    items = list(mine.items()) if mutual else []
    for i, (option, path) in enumerate(items):
        for other, other_path in items[i + 1 :]:
            if overlap(path, other_path):
                raise InputError(f"{option} {path} and {other} {other_path} overlap", hint="use two separate folders")


@contextlib.contextmanager
def source_options(choice: SourceOptions) -> Iterator[tuple[dict[str, str], str]]:
    """Data source options for the chosen source (a location, not an open source: every executor
    opens its own), and its label for people and checkpoints. A natsmq store gets a private
    nats-server that lives as long as this context."""
    from mqctl.mq.nats.connect import public_url
    from mqctl.mq.nats.server import private_nats_server
    from mqctl.mq.sources import choose_source, resolve_source

    choice = resolve_source(choice)  # a WAL --config derives: as --woodpecker, with the config's endpoint and keys
    kind, location = choose_source(choice)
    timeout = {"timeout": str(choice.timeout)}
    if kind == "kafka":
        yield kafka_options(choice, timeout)
        return
    if kind == "rocksmq":
        path = str(Path(location).expanduser().resolve())
        yield {"rocksmq": path}, f"rocksmq:{path}"
    elif kind == "nats":
        auth = {key: str(value) for key, value in choice.nats_auth().items() if key in NATS_AUTH_OPTIONS and value}
        yield {"nats": location, **auth, **timeout}, public_url(location)
    elif kind == "woodpecker":
        from mqctl.mq.sources import woodpecker_access, woodpecker_log_names
        from mqctl.mq.woodpecker.source import WoodpeckerSource

        path = str(Path(location).expanduser().resolve()) if "://" not in location else location
        names = woodpecker_log_names(choice)
        access = woodpecker_access(choice)
        found = {"woodpecker": path, "woodpecker_logs": logs_option(names)}
        if "://" in path:
            hand_keys_to_executors(access)
            endpoint, region = access.endpoint_url(), access.region
            found.update({"woodpecker_endpoint": endpoint, **({"woodpecker_region": region} if region else {})})
            access = dataclasses.replace(access, access_key=None, secret_key=None)  # the keys the executors will use
        # a missing folder or bucket, a bad URL, refused credentials: one line, before Spark
        WoodpeckerSource(path, names=names, access=access).close()
        yield found, f"woodpecker:{path}"
    else:
        store = str(Path(location).expanduser().resolve())
        with private_nats_server(store) as url:
            yield {"nats": url, **timeout}, f"nats-store:{store}"


def kafka_options(choice: SourceOptions, timeout: dict[str, str]) -> tuple[dict[str, str], str]:
    """The data source options of a Kafka source: its bootstrap, topic prefix, protocol and mechanism, and the SASL
    user and password and TLS files (under the NATS auth option names), as --kafka or the config's kafka.* give them."""
    from mqctl.mq.sources import kafka_topic_prefix

    access = choice.kafka_access()
    auth = {
        key: value
        for key, value in (
            ("user", access.sasl_username),
            ("password", access.sasl_password),
            ("tls_ca", access.ssl_ca),
            ("tls_cert", access.ssl_cert),
            ("tls_key", access.ssl_key),
        )
        if value
    }
    found = {"kafka": access.bootstrap, **auth, **timeout}
    for key, value in (
        ("topic_prefix", kafka_topic_prefix(choice, None)),
        ("security_protocol", access.security_protocol),
        ("sasl_mechanism", access.sasl_mechanism),
    ):
        if value:
            found[key] = value
    return found, f"kafka://{access.bootstrap}"


def hand_keys_to_executors(access: S3Access) -> None:
    """The keys a config names for its bucket, for the executors: through the environment Spark's workers
    inherit (local mode), never through a data source option (those show in plans and the Spark UI); keys
    already in the environment stay. On a cluster the executors' environment must hold them. The driver then reads
    (checks, plans) with the environment's keys as its executors do, as for an explicit s3:// --woodpecker."""
    import os

    if access.access_key and access.secret_key and not os.environ.get("AWS_ACCESS_KEY_ID"):
        os.environ["AWS_ACCESS_KEY_ID"] = access.access_key
        os.environ["AWS_SECRET_ACCESS_KEY"] = access.secret_key


def source_folders(choice: SourceOptions) -> list[tuple[Path, str]]:
    """The folders a replay reads (RocksMQ's topics and its `<path>_meta_kv` metadata, a natsmq store): no
    output of the replay may be, hold or lie inside one of them."""
    from mqctl.mq.sources import choose_source

    kind, location = choose_source(choice)
    if kind == "rocksmq":
        folder = Path(location).expanduser()
        return [(folder, "the RocksMQ folder"), (Path(f"{folder}_meta_kv"), "RocksMQ's metadata folder")]
    if kind == "nats-store":
        return [(Path(location).expanduser(), "the natsmq store")]
    if kind == "woodpecker" and "://" not in location:
        return [(Path(location).expanduser(), "the Woodpecker folder")]
    return []


def run_replay(
    request: ReplayRequest, *, spark: Any = None, on_progress: ProgressCallback | None = None
) -> ReplayResult:
    """Replay what the request names into its target. `spark`: an existing session to use (its
    master wins over request.master); otherwise one is started and stopped here. A Woodpecker WAL --config derives
    is read as the explicit --woodpecker is (mqctl.mq.sources.resolve_source)."""
    from mqctl.mq.sources import resolve_source

    request = resolved_request(dataclasses.replace(request, source=resolve_source(request.source)))
    output = request.output or ""
    remote = "://" in output  # s3a://, hdfs://...: Spark checks those itself
    if request.table:
        target = f"table:{request.table}"
    else:
        target = output if remote else str(Path(output).expanduser().resolve())
        request = dataclasses.replace(request, output=target)
    check_no_overlap(
        request.source,
        {"--output": None if request.table or remote else target, "--checkpoint": request.checkpoint},
        mutual=False,
    )
    with source_options(request.source) as (options, label):
        options.update(_read_options(request))
        if request.start == FROM_CHECKPOINT:
            options["after"] = after_option(_milvus_checkpoints(request))
        opts = parse_options(options)
        checkpoint = ResumeState.load(request.checkpoint) if request.checkpoint else None
        if checkpoint is not None:
            checkpoint.check_belongs_to(label, target, _selection(request))
        if request.output and not remote and request.mode == "error" and Path(target).exists():
            raise PreconditionError(
                f"output {target} already exists and --mode is error",
                hint="use --mode append or --mode overwrite, or another --output",
            )
        plan = _plan(opts, options, checkpoint)
        unknown = [column for column in request.partition_by if column not in plan.columns]
        if unknown:
            raise InputError(
                f"--partition-by {unknown[0]!r} is not a column of the {opts.shape} shape",
                hint=f"columns: {', '.join(plan.columns)}",
            )
        spans = plan.spans
        result = ReplayResult(
            source=label,
            target=target,
            format=request.format,
            mode=request.mode or "error",
            shape=opts.shape,
            collection=opts.collection,
            schema_origin=plan.schema_origin,
            partitions=len(plan.pieces),
            run=checkpoint.next_run if checkpoint else None,
            checkpoint=request.checkpoint,
            written=False,
            messages=0,
            rows=0,
            bytes=0,
            seconds=0.0,
            rows_per_second=None,
            messages_per_second=None,
            spark_startup_seconds=None,
            channels=[ChannelResult(s.channel, s.first, s.last, s.messages, 0, 0, 0) for s in spans],
        )
        if not spans:
            return result
        own_session = spark is None
        if own_session:
            from mqctl.replay.session import start_session

            started = time.monotonic()
            conf = dict(request.spark_conf)
            if request.table and not request.remote:  # Spark's in-memory catalog forgets the table when the run
                conf.setdefault("spark.sql.catalogImplementation", "hive")  # ends; the next would find its folder
            spark = start_session(request.master, conf, ship=request.ship, remote=request.remote)
            result.spark_startup_seconds = round(time.monotonic() - started, 3)
        try:
            write_with_progress(spark, request, options, result, checkpoint, on_progress)
        finally:
            if own_session:
                spark.stop()
        if checkpoint is not None:
            checkpoint.advanced(label, target, {s.channel: s.last for s in spans}, _selection(request)).save()
        return result


def _selection(request: ReplayRequest) -> dict[str, str]:
    """What a checkpoint's positions cover: the same channels, shape, collection and message types."""
    return {
        "channels": ",".join(request.channels),
        "shape": request.shape or "",
        "collection": request.collection or "",
        "types": request.types or "",
    }


def _read_options(request: ReplayRequest) -> dict[str, str]:
    values = {
        "channels": ",".join(request.channels),
        "collection": request.collection,
        "shape": request.shape,
        "from": None if request.start == FROM_CHECKPOINT else request.start,
        "to": request.end,
        "types": request.types,
        "partitions": str(request.partitions) if request.partitions else None,
        "milvus": request.milvus,
        "milvus_token": request.milvus_token,
    }
    return {key: value for key, value in values.items() if value}


def _milvus_checkpoints(request: ReplayRequest) -> dict[str, tuple[str, int]]:
    """--from checkpoint: each vchannel's seek position from etcd (what follows is not persisted yet); on a
    Woodpecker WAL (named with --woodpecker or derived from --config) the 2.6 channel checkpoints (see
    woodpecker.py)."""
    from mqctl.mq.sources import load_config, resolve_source

    resolution = load_config(request.source.config) if request.source.config else None
    source = resolve_source(request.source, resolution)
    if source.woodpecker:
        from mqctl.replay.woodpecker import woodpecker_checkpoints

        return woodpecker_checkpoints(dataclasses.replace(request, source=source))
    from mqctl.mq.checkpoints import seek_positions
    from mqctl.mq.milvus_meta import meta_reader

    return seek_positions(meta_reader(request.etcd, request.etcd_root, resolution).read())


@dataclass
class Plan:
    spans: list[ChannelSpan]  # one per channel: what this run replays
    pieces: list[ChannelSpan]  # one per Spark partition
    schema_origin: str | None
    columns: list[str]  # of the shape being written


def _plan(opts: ReplayOptions, options: dict[str, str], checkpoint: ResumeState | None) -> Plan:
    """Fix the id range of every channel now (a checkpoint records exactly these ends), cut them
    into partitions, and find the collection's schema; pieces and schema go to the data source as
    options."""
    from mqctl.replay.collection import find_schema
    from mqctl.replay.schema import MESSAGE_COLUMNS, ROW_META_COLUMNS, rows_ddl, schema_to_json

    if checkpoint is not None and opts.end is not None and opts.end.kind == "tso":
        raise InputError(
            "--checkpoint needs --to as a sequence/id (or no --to): a time or TSO end is not a position "
            "the next run could resume after"
        )
    source = opts.open_source()
    try:
        spans = plan_spans(source, opts)
        origin, columns = None, [name for name, _ in MESSAGE_COLUMNS]
        if opts.shape == "rows":
            schema, origin = find_schema(source, opts)
            rows_ddl(schema)  # fails now for a type replay cannot represent
            options["collection_schema"] = schema_to_json(schema, origin)
            columns = [f.name for f in schema.fields] + [name for name, _ in ROW_META_COLUMNS]
    finally:
        source.close()
    if checkpoint is not None:
        spans = [
            ChannelSpan(s.channel, start, s.last, s.messages - _skipped(s, start))
            for s in spans
            for start in [checkpoint.start_after(s.channel, s.first)]
            if start <= s.last
        ]
    pieces = split_spans(spans, opts.partitions, opts.messages_per_partition)
    options["ranges"] = ranges_option(pieces)
    return Plan(spans, pieces, origin, columns)


def _skipped(span: ChannelSpan, start: int) -> int:
    """Estimated messages of a span before `start`."""
    width = span.last - span.first + 1
    return min(span.messages, round(span.messages * (start - span.first) / width)) if width > 0 else 0
