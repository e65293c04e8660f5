"""The replay job behind `mqctl replay --to-spark`: plan on the driver, read with `milvus_mq`, write.

Everything that can be checked without Spark is checked first (source reachable, channels
known, collection found, output free), so a mistake costs no JVM start-up.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mqctl.errors import InputError, PreconditionError
from mqctl.files import WriteTarget, local_file_option, overlap, refuse_overlap, write_target
from mqctl.mq.sources import SourceOptions
from mqctl.replay.model import (
    FORMATS,
    MODES,
    ChannelResult,
    ChannelSpan,
    ProgressCallback,
    ReplayRequest,
    ReplayResult,
)
from mqctl.replay.reader.options import (
    FROM_CHECKPOINT,
    NATS_AUTH_OPTIONS,
    ReplayOptions,
    after_option,
    logs_option,
    parse_bound,
    parse_options,
    ranges_option,
)
from mqctl.replay.reader.planning import plan_spans, split_spans
from mqctl.replay.resume import ResumeState
from mqctl.replay.write import write_with_progress

if TYPE_CHECKING:
    from mqctl.config.resolve.resolution import Resolution
    from mqctl.mq.woodpecker.storage import S3Access


def resolved_request(request: ReplayRequest) -> ReplayRequest:
    """The request with defaults filled in and every option checked that needs no I/O."""
    if bool(request.output) == bool(request.table):
        raise InputError("give exactly one target: --output PATH (with --format) or --table NAME")
    if request.format not in FORMATS:
        raise InputError(f"--format {request.format!r} is not one of {', '.join(FORMATS)}")
    shape = request.shape or ("rows" if request.collection else "messages")
    mode = request.mode or ("append" if request.resume_file else "error")
    if mode not in MODES:
        raise InputError(f"--mode {mode!r} is not one of {', '.join(MODES)}")
    if request.resume_file and mode != "append":
        raise InputError(
            f"--resume-file adds each run to the output; --mode {mode} cannot go with it",
            hint="drop --mode (append is implied), or drop --resume-file",
        )
    from mqctl.replay.session import check_master, check_remote

    check_master(request.master)
    if (request.etcd or request.etcd_root) and request.start != FROM_CHECKPOINT and not request.source.woodpecker:
        raise InputError(
            "--etcd/--etcd-root are read only with --from checkpoint (or --woodpecker, to name its logs)",
            hint="add --from checkpoint, or drop --etcd",
        )
    if request.remote:
        check_remote(request.remote)
    for text, option, upper in ((request.start, "--from", False), (request.end, "--to", True)):
        if text and text != FROM_CHECKPOINT:
            parse_bound(text, option, upper=upper)  # named as the command line names it
    return dataclasses.replace(request, shape=shape, mode=mode)


def check_no_overlap(source: SourceOptions, paths: dict[str, str | None], *, mutual: bool = True) -> None:
    """Refuse an output or checkpoint that is, holds or lies inside a source folder (resolved as Spark resolves
    it: a plain path, `file:` URLs of every form, symlinks followed, `..` removed) or a source bucket prefix (an
    s3/s3a/s3n output over an s3:// WAL): writing there, and `--mode overwrite` above all, would change or delete
    the data being read. With `mutual`, two of our own folders may not nest either."""
    targets = {option: write_target(path, option) for option, path in paths.items() if path}
    protected = source_folders(source)
    local = {option: target.local for option, target in targets.items() if target.local is not None}
    for option, path in local.items():
        refuse_overlap(path, option, protected)
    for option, target in targets.items():
        if target.local is None:
            _refuse_bucket_overlap(target, option, source)
    items = list(local.items()) if mutual else []
    for i, (option, path) in enumerate(items):
        for other, other_path in items[i + 1 :]:
            if overlap(path, other_path):
                raise InputError(f"{option} {path} and {other} {other_path} overlap", hint="use two separate folders")


_S3_SCHEMES = ("s3", "s3a", "s3n")


def table_folders(request: ReplayRequest) -> dict[str, str]:
    """Where a `--table` replay on a local master writes besides the table: Spark's warehouse and its Hive metastore
    (`./spark-warehouse` and `./metastore_db` in the working directory unless the conf names a warehouse), checked
    against the sources as an output is: run from inside a source folder, they would be written there."""
    if not request.table or request.remote or not request.master.startswith("local"):
        return {}
    warehouse = request.spark_conf.get("spark.sql.warehouse.dir", "spark-warehouse")
    return {"--table (Spark's warehouse)": warehouse, "--table (Spark's metastore_db)": "metastore_db"}


def _refuse_bucket_overlap(target: WriteTarget, option: str, source: SourceOptions) -> None:
    """An object-store output in the bucket and under (or above) the prefix of the s3:// WAL being read."""
    from mqctl.mq.sources import choose_source

    kind, location = choose_source(source)
    if kind != "woodpecker" or target.scheme not in _S3_SCHEMES:
        return
    read = write_target(location, "--woodpecker")
    if read.scheme not in _S3_SCHEMES or read.bucket != target.bucket:
        return
    mine, theirs = target.key.split("/") if target.key else [], read.key.split("/") if read.key else []
    shorter = min(len(mine), len(theirs))
    if mine[:shorter] == theirs[:shorter]:
        raise InputError(
            f"{option} {target.given} overlaps the Woodpecker WAL {location}; writing there would change or delete it",
            hint=f"choose a {option} outside s3://{read.bucket}/{read.key}",
        )


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
    if request.resume_file:
        resume_file = str(local_file_option(request.resume_file, "--resume-file"))
        request = dataclasses.replace(request, resume_file=resume_file)
    written = write_target(request.output, "--output") if request.output else None
    if written is None:
        target = f"table:{request.table}"
    else:
        target = written.spark
        request = dataclasses.replace(request, output=target)
    paths: dict[str, str | None] = {"--output": request.output, "--resume-file": request.resume_file}
    check_no_overlap(request.source, {**paths, **table_folders(request)}, mutual=False)
    with source_options(request.source) as (options, label):
        options.update(_read_options(request))
        if request.start == FROM_CHECKPOINT:
            options["after"] = after_option(_milvus_checkpoints(request))
        opts = parse_options(options)
        resume = ResumeState.load(request.resume_file) if request.resume_file else None
        if resume is not None:
            resume.check_belongs_to(label, target, _selection(request))
        if written is not None and written.local is not None and request.mode == "error" and written.local.exists():
            raise PreconditionError(
                f"output {target} already exists and --mode is error",
                hint="use --mode append or --mode overwrite, or another --output",
            )
        plan = _plan(opts, options, resume)
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
            run=resume.next_run if resume else None,
            resume_file=request.resume_file,
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
            write_with_progress(spark, request, options, result, resume, on_progress)
        finally:
            if own_session:
                spark.stop()
        if resume is not None:
            resume.advanced(label, target, {s.channel: s.last for s in spans}, _selection(request)).save()
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
        from mqctl.replay.reader.woodpecker import woodpecker_checkpoints

        return woodpecker_checkpoints(dataclasses.replace(request, source=source))
    from mqctl.mq.checkpoints import seek_positions
    from mqctl.mq.milvus_meta import meta_reader

    found = seek_positions(meta_reader(request.etcd, request.etcd_root, resolution).read())
    if source.kafka or (resolution is not None and not source.explicit and resolution.effective_mq == "kafka"):
        _check_kafka_retained(source, resolution, found)
    return found


def _check_kafka_retained(
    source: SourceOptions, resolution: Resolution | None, found: dict[str, tuple[str, int]]
) -> None:
    """Refuse a checkpoint whose next offset the topic no longer holds: its retention deleted records Milvus had
    not persisted, which no replay can give back (on Kafka every offset holds one of Milvus's records, so the gap
    is counted exactly)."""
    from mqctl.mq.sources import open_source

    with open_source(source, resolution=resolution) as topics:
        known = {info.name for info in topics.list_channels(message_times=False)}
        for vchannel, (pchannel, position) in sorted(found.items()):
            bounds = topics.id_range(pchannel) if pchannel in known else None
            if bounds is None or bounds[0] <= position + 1:
                continue
            raise PreconditionError(
                f"data lost: vchannel {vchannel}: channel checkpoint {position} precedes the first retained offset "
                f"{bounds[0]} of topic {pchannel}: offsets {position + 1}..{bounds[0] - 1} that Milvus had not "
                "persisted are gone (the topic's retention fired)",
                hint="replay what is left with --from an offset or a time; `mqctl channels checkpoints --kafka` "
                "names the lost messages",
            )


@dataclass
class Plan:
    spans: list[ChannelSpan]  # one per channel: what this run replays
    pieces: list[ChannelSpan]  # one per Spark partition
    schema_origin: str | None
    columns: list[str]  # of the shape being written


def _plan(opts: ReplayOptions, options: dict[str, str], resume: ResumeState | None) -> Plan:
    """Fix the id range of every channel now (a checkpoint records exactly these ends), cut them
    into partitions, and find the collection's schema; pieces and schema go to the data source as
    options."""
    from mqctl.replay.reader.collection import find_schema
    from mqctl.replay.reader.schema import MESSAGE_COLUMNS, ROW_META_COLUMNS, rows_ddl, schema_to_json

    if resume is not None and opts.end is not None and opts.end.kind == "tso":
        raise InputError(
            "--resume-file needs --to as a sequence/id (or no --to): a time or TSO end is not a position "
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
    if resume is not None:
        spans = [
            ChannelSpan(s.channel, start, s.last, s.messages - _skipped(s, start))
            for s in spans
            for start in [resume.start_after(s.channel, s.first)]
            if start <= s.last
        ]
    pieces = split_spans(spans, opts.partitions, opts.messages_per_partition)
    options["ranges"] = ranges_option(pieces)
    return Plan(spans, pieces, origin, columns)


def _skipped(span: ChannelSpan, start: int) -> int:
    """Estimated messages of a span before `start`."""
    width = span.last - span.first + 1
    return min(span.messages, round(span.messages * (start - span.first) / width)) if width > 0 else 0
