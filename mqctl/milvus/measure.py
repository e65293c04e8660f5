"""Search and query latency and insert throughput of a running Milvus, measured on scratch collections mqctl
creates and drops: the figures a user compares before and after switching the MQ (the NATS announcement
reports search 23.55 ms on RocksMQ vs 20.17 ms on NATS and query 7.2 vs 6.74 ms at 100M vectors, and
RocksMQ ahead for messages under 64 KB). User collections are never read or written.

An insert of `size` payload bytes into a one-shard collection travels as one insert message on one DML
channel, so insert throughput by payload size is the MQ's publish path as Milvus drives it.
"""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from mqctl.errors import InputError, PreconditionError
from mqctl.milvus.client import Client, MilvusTarget, connect, wait_loaded
from mqctl.milvus.protos import import_pymilvus

SCRATCH_PREFIX = "mqctl_measure_"  # every collection this module creates is named so, and dropped after
PAYLOAD_FIELD_MAX = 65_535  # Milvus's VARCHAR max_length
ROW_PAYLOAD_MAX = 32 * 1024  # payload bytes per row; a larger insert carries more rows
PAYLOAD_DIM = 8  # the payload collection's vector (Milvus 2.3 wants one in every collection)
KB = 1024

# The NATS announcement (Zhen Ye, "Optimizing Data Communication: Milvus Embraces NATS Messaging", zilliz.com,
# 2023-11-24), M1 Pro, 16 GB: (RocksMQ, NATS). Tables 1 and 2 there.
ANNOUNCED_LATENCY_MS = {"search mean": (23.55, 20.17), "query mean": (7.2, 6.74)}  # 100M vectors, averages
ANNOUNCED_PUBSUB_SECONDS_PER_OP = {  # pub/sub of random packets, seconds per op (50 ops)
    1 * KB: (0.897638581, 2.629391004),  # 1KB x 50000
    64 * KB: (3.253778195, 2.133345262),  # 64KB x 10000
    1024 * KB: (2.554614279, 2.248722593),  # 1MB x 500
    5 * 1024 * KB: (2.475595131, 1.650328186),  # 5MB x 100
}


@dataclass
class Latency:
    """Latency of `count` sequential requests, in milliseconds."""

    count: int
    p50_ms: float
    p99_ms: float
    mean_ms: float


@dataclass
class InsertRate:
    """`inserts` sequential inserts of `payload_bytes` each (one insert message apiece), taking `seconds`."""

    payload_bytes: int
    inserts: int
    seconds: float
    per_second: float = field(init=False)
    mb_per_second: float = field(init=False)
    ms_per_insert: float = field(init=False)

    def __post_init__(self) -> None:
        rate = self.inserts / self.seconds if self.seconds > 0 else 0.0
        self.per_second = round(rate, 2)
        self.mb_per_second = round(rate * self.payload_bytes / (1024 * 1024), 3)
        self.ms_per_insert = round(1000 * self.seconds / self.inserts, 3) if self.inserts else 0.0


@dataclass
class MeasureSettings:
    """What to measure: `rows` vectors of `dim` for search/query, and inserts by payload size."""

    rows: int = 10_000
    dim: int = 32
    searches: int = 200
    queries: int = 200
    top_k: int = 10
    consistency: str = "Bounded"  # Milvus's default; Strong would add the wait for the next time tick
    insert_sizes: tuple[int, ...] = (64 * KB,)
    insert_bytes: int = 2 * 1024 * 1024  # payload per size; at least min_inserts inserts are timed
    min_inserts: int = 20
    max_inserts: int = 500

    def __post_init__(self) -> None:
        for name in ("rows", "dim", "searches", "queries", "top_k", "min_inserts", "max_inserts"):
            if getattr(self, name) < 1:
                raise InputError(f"measure {name} {getattr(self, name)} must be at least 1")
        if any(size < 1 or size > 64 * 1024 * KB for size in self.insert_sizes):
            raise InputError("measure insert sizes must be between 1 byte and 64 MiB", hint="e.g. 1024,65536")

    def inserts_for(self, size: int) -> int:
        return max(self.min_inserts, min(self.max_inserts, self.insert_bytes // size))


@dataclass
class Measurement:
    """One deployment measured once."""

    rows: int
    dim: int
    consistency: str
    search: Latency
    query: Latency
    inserts: list[InsertRate] = field(default_factory=list)
    seconds: float = 0.0  # the whole measurement, scratch collections created and dropped included


@dataclass
class ComparedFigure:
    """One figure before and after the switch; `ratio` is after / before (below 1: faster after for a
    latency, slower after for a throughput)."""

    metric: str
    unit: str
    before: float
    after: float
    announced_ratio: float | None = None  # NATS/RocksMQ in the NATS announcement, for a RocksMQ -> NATS switch
    ratio: float | None = field(init=False)

    def __post_init__(self) -> None:
        self.ratio = round(self.after / self.before, 3) if self.before else None


@dataclass
class MeasureComparison:
    before_mq: str
    after_mq: str
    before: Measurement
    after: Measurement
    figures: list[ComparedFigure] = field(default_factory=list)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100) with linear interpolation between the closest ranks (numpy's default)."""
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is not between 0 and 100")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def latency(seconds: Sequence[float]) -> Latency:
    """p50, p99 and mean of request durations given in seconds, in milliseconds."""
    ms = [s * 1000 for s in seconds]
    return Latency(len(ms), round(percentile(ms, 50), 3), round(percentile(ms, 99), 3), round(sum(ms) / len(ms), 3))


def figures(before: Measurement, after: Measurement, announced: bool = False) -> list[ComparedFigure]:
    """The figures both measurements hold, side by side; `announced`: with the NATS announcement's NATS/RocksMQ
    ratio where it has one (a RocksMQ -> NATS switch). Inserts compare time per insert, as the announcement
    compares time per pub/sub op."""
    rows = []
    for kind, was, now in (("search", before.search, after.search), ("query", before.query, after.query)):
        for stat in ("p50", "p99", "mean"):
            metric = f"{kind} {stat}"
            seed = ANNOUNCED_LATENCY_MS.get(metric) if announced else None
            rows.append(
                ComparedFigure(
                    metric,
                    "ms",
                    getattr(was, f"{stat}_ms"),
                    getattr(now, f"{stat}_ms"),
                    round(seed[1] / seed[0], 3) if seed else None,
                )
            )
    after_rates = {rate.payload_bytes: rate for rate in after.inserts}
    for rate in before.inserts:
        if rate.payload_bytes in after_rates:
            seed = ANNOUNCED_PUBSUB_SECONDS_PER_OP.get(rate.payload_bytes) if announced else None
            rows.append(
                ComparedFigure(
                    f"insert {size_label(rate.payload_bytes)}",
                    "ms/insert",
                    rate.ms_per_insert,
                    after_rates[rate.payload_bytes].ms_per_insert,
                    round(seed[1] / seed[0], 3) if seed else None,
                )
            )
    return rows


def compare(before_mq: str, after_mq: str, before: Measurement, after: Measurement) -> MeasureComparison:
    announced = (before_mq, after_mq) == ("rocksmq", "natsmq")
    return MeasureComparison(before_mq, after_mq, before, after, figures(before, after, announced))


def size_label(size: int) -> str:
    """1024 -> '1 KB', 1048576 -> '1 MB' (binary units, as the NATS announcement's table)."""
    if size >= 1024 * KB and size % (1024 * KB) == 0:
        return f"{size // (1024 * KB)} MB"
    if size >= KB and size % KB == 0:
        return f"{size // KB} KB"
    return f"{size} B"


def parse_sizes(text: str) -> tuple[int, ...]:
    """'1KB,64KB,1MB' (or plain byte counts) -> byte counts."""
    units = {"B": 1, "KB": KB, "K": KB, "MB": 1024 * KB, "M": 1024 * KB}
    sizes = []
    for part in filter(None, (p.strip().upper() for p in text.split(","))):
        digits = part.rstrip("BKM")
        unit = part[len(digits) :] or "B"
        if not digits.isdigit() or unit not in units:
            raise InputError(f"insert size {part!r} is not a size", hint="e.g. 1KB,64KB,1MB or 65536")
        sizes.append(int(digits) * units[unit])
    if not sizes:
        raise InputError(f"insert sizes {text!r} name no size", hint="e.g. 1KB,64KB,1MB")
    return tuple(sizes)


def measure(
    target: MilvusTarget, settings: MeasureSettings | None = None, say: Callable[[str], None] | None = None
) -> Measurement:
    """Create the scratch collections, time searches, queries and inserts, drop them (also on failure)."""
    import_pymilvus()
    from pymilvus.exceptions import MilvusException

    settings = settings or MeasureSettings()
    say = say or (lambda _text: None)
    began = time.monotonic()
    client = connect(target)
    stamp = f"{os.getpid()}_{int(time.time() * 1000)}"
    vectors, payload = f"{SCRATCH_PREFIX}{stamp}_vectors", f"{SCRATCH_PREFIX}{stamp}_payload"
    try:
        say(f"    measuring: {settings.rows:,} vectors of dim {settings.dim} in scratch collection {vectors} ...")
        load_vectors(client, vectors, settings)
        search, query = search_and_query(client, vectors, settings)
        rates = []
        create_payload_collection(client, payload)
        for size in settings.insert_sizes:
            count = settings.inserts_for(size)
            say(f"    measuring: {count} inserts of {size_label(size)} ...")
            rates.append(insert_rate(client, payload, size, count))
    except MilvusException as err:
        raise PreconditionError(
            f"measuring Milvus at {target.uri} failed: {err.message}",
            hint="check Milvus's health and log; the scratch collections are named " + SCRATCH_PREFIX + "*",
        ) from None
    finally:
        for name in (vectors, payload):
            try:
                if client.has_collection(name):
                    client.drop_collection(name)
            except MilvusException:
                pass  # measuring failed already; the name says what to drop
        client.close()
    return Measurement(
        settings.rows, settings.dim, settings.consistency, search, query, rates, round(time.monotonic() - began, 1)
    )


def load_vectors(client: Client, name: str, settings: MeasureSettings) -> None:
    """`rows` random vectors (fixed seed: the same data every time), flushed, indexed (FLAT) and loaded."""
    import_pymilvus()
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("tag", DataType.INT64)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=settings.dim)
    client.create_collection(name, schema=schema, consistency_level=settings.consistency, num_shards=1)
    rng = random.Random(settings.rows * 1000 + settings.dim)
    batch = max(1, min(10_000, 4 * 1024 * 1024 // (4 * settings.dim)))  # about 4 MB a request
    for start in range(0, settings.rows, batch):
        rows = [
            {"id": i, "tag": i % 100, "vector": [rng.random() for _ in range(settings.dim)]}
            for i in range(start, min(start + batch, settings.rows))
        ]
        if start == 0:
            first_insert(client, name, rows)
        else:
            client.insert(name, rows)
    client.flush(name)
    index = client.prepare_index_params()
    index.add_index("vector", index_type="FLAT", metric_type="L2")
    client.create_index(name, index)
    client.load_collection(name, timeout=300)
    if not wait_loaded(client, name, 300):
        raise PreconditionError(f"scratch collection {name} did not load within 300 s")


WRITES_OPEN_WAIT = 60.0  # seconds: right after a migration resumes writes, the quota center may still deny


def first_insert(client: Client, name: str, rows: list[dict[str, object]]) -> None:
    """The first write, retried while Milvus still denies writes (forceDeny lifted moments ago is applied at the
    quota center's next tick)."""
    import_pymilvus()
    from pymilvus.exceptions import MilvusException

    deadline = time.monotonic() + WRITES_OPEN_WAIT
    while True:
        try:
            client.insert(name, rows)
            return
        except MilvusException as err:
            if "deny" not in str(err.message).lower() or time.monotonic() > deadline:
                raise
            time.sleep(1)


def search_and_query(client: Client, name: str, settings: MeasureSettings) -> tuple[Latency, Latency]:
    """Sequential searches (one random vector, top_k) and queries (10 primary keys), after a warm-up of each."""
    rng = random.Random(7)
    level = settings.consistency

    def one_search() -> None:
        vector = [rng.random() for _ in range(settings.dim)]
        client.search(name, data=[vector], limit=settings.top_k, anns_field="vector", consistency_level=level)

    def one_query() -> None:
        ids = [rng.randrange(settings.rows) for _ in range(10)]
        client.query(name, filter=f"id in {ids}", output_fields=["id", "tag"], consistency_level=level)

    return timed(one_search, settings.searches), timed(one_query, settings.queries)


def timed(request: Callable[[], None], count: int, warm_up: int = 5) -> Latency:
    for _ in range(warm_up):
        request()
    seconds = []
    for _ in range(count):
        start = time.perf_counter()
        request()
        seconds.append(time.perf_counter() - start)
    return latency(seconds)


def create_payload_collection(client: Client, name: str) -> None:
    import_pymilvus()
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=PAYLOAD_DIM)
    schema.add_field("payload", DataType.VARCHAR, max_length=PAYLOAD_FIELD_MAX)
    client.create_collection(name, schema=schema, num_shards=1)  # one DML channel: one message per insert


def payload_rows(size: int, first_id: int) -> list[dict[str, object]]:
    """Rows whose VARCHAR payloads add up to `size` bytes, at most ROW_PAYLOAD_MAX each."""
    rows, left, row_id = [], size, first_id
    while left > 0:
        chunk = min(left, ROW_PAYLOAD_MAX)
        rows.append({"id": row_id, "vector": [0.5] * PAYLOAD_DIM, "payload": "x" * chunk})
        left -= chunk
        row_id += 1
    return rows


def insert_rate(client: Client, name: str, size: int, count: int) -> InsertRate:
    """`count` sequential inserts of `size` payload bytes (after one untimed insert)."""
    next_id = 0
    batches = []
    for _ in range(count + 1):
        batch = payload_rows(size, next_id)
        next_id += len(batch)
        batches.append(batch)
    client.insert(name, batches[0])
    start = time.perf_counter()
    for batch in batches[1:]:
        client.insert(name, batch)
    return InsertRate(size, count, round(time.perf_counter() - start, 4))
