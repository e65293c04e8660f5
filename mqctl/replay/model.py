"""The shapes a replay is described by, at the bottom of the package: what is asked (ReplayRequest), what was done
(ReplayResult, ChannelResult) and the id ranges a plan cuts (ChannelSpan). Every other replay module imports them
from here, so none has to reach up to the job for a type."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mqctl.mq.sources import SourceOptions


@dataclass(frozen=True)
class ChannelSpan:
    """Messages first <= id <= last of one channel; `messages` is their (estimated) count."""

    channel: str
    first: int
    last: int
    messages: int


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
    resume_file: str | None = None  # --resume-file: what earlier runs replayed (replay/resume.py)
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
    run: int | None  # replay_run written (with --resume-file)
    resume_file: str | None
    written: bool
    messages: int | None
    rows: int | None
    bytes: int | None
    seconds: float
    rows_per_second: float | None
    messages_per_second: float | None
    spark_startup_seconds: float | None
    channels: list[ChannelResult] = field(default_factory=list)
    checkpoint: str | None = None  # deprecated JSON name of resume_file, kept for one release

    def __post_init__(self) -> None:
        self.checkpoint = self.resume_file


ProgressCallback = Callable[[list[ChannelResult]], None]
