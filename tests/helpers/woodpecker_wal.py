"""A Woodpecker WAL holding the messages of the RocksMQ fixture as Milvus 2.6 would write them: each message body
(the same msgpb request 2.6 marshals as its payload, milvus pkg/streaming/util/message/codegen/reflect_info.json)
in the 2.6 envelope (milvus pkg/streaming/util/message/properties.go: `_v` version, `_t` the decimal MessageType
of pkg/proto/messages.proto, `_tt` the time tick in base 36, `_vc` the vchannel), one Woodpecker log per RocksMQ
topic, written by tests/helpers/woodpecker_segments.py (the cited segment layout). Written apart from mqctl's
readers: the fixture's bodies are parsed with pymilvus's classes, never with mqctl's decoder."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers import woodpecker_segments as w
from tests.helpers.paths import FIXTURES
from tests.helpers.streaming_meta import base36

ROCKSMQ = FIXTURES / "rocksmq" / "rdb_data"
# commonpb.MsgType of a 2.3.5 message -> its 2.6 MessageType (messages.proto), version-1 bodies only
MESSAGE_TYPES = {1200: 1, 400: 2, 401: 3, 100: 5, 101: 6, 200: 7, 201: 8}


@dataclass
class WrittenLog:
    log_id: int
    channel: str  # the RocksMQ topic, the pchannel the log stands for
    messages: list[tuple[bytes, dict[str, str]]] = field(default_factory=list)  # payload, properties
    skipped: int = 0  # fixture messages of a type without a version-1 body in 2.6
    segments: list[list[list[int]]] = field(default_factory=list)  # segment -> block -> indexes into messages


def envelope(data: bytes) -> tuple[bytes, dict[str, str]] | None:
    """The 2.6 form of one 2.3.5 message: (payload, properties), or None for a type 2.6 writes otherwise."""
    from pymilvus.grpc_gen import common_pb2, msg_pb2

    header = common_pb2.MsgHeader()
    header.ParseFromString(data)
    kind = MESSAGE_TYPES.get(header.base.msg_type)
    if kind is None:
        return None
    properties = {"_v": "1", "_t": str(kind), "_tt": base36(header.base.timestamp)}
    if kind in (2, 3):
        body = msg_pb2.InsertRequest() if kind == 2 else msg_pb2.DeleteRequest()
        body.ParseFromString(data)
        properties["_vc"] = body.shardName
    return data, properties


def fixture_topics() -> dict[str, list[bytes]]:
    """The RocksMQ fixture's topics -> their message payloads in id order, read with rocksdict (not mqctl)."""
    import shutil
    import tempfile

    from rocksdict import AccessType, Options, Rdict

    work = Path(tempfile.mkdtemp(prefix="wp-fixture-"))
    try:  # a copy: rocksdict writes a config file even when it opens a database read-only
        shutil.copytree(ROCKSMQ, work / "db")
        db = Rdict(str(work / "db"), options=Options(raw_mode=True), access_type=AccessType.read_only())
        topics: dict[str, list[bytes]] = {}
        for key, value in db.items():
            assert isinstance(key, bytes)  # raw mode
            topic, _, number = key.decode().rpartition("/")
            if topic and number.isdigit():
                topics.setdefault(topic, []).append(bytes(value))
        db.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return topics


def fixture_logs(per_block: int = 4, blocks_per_segment: int = 3) -> list[WrittenLog]:
    """The fixture's topics as logs 1, 2, ... (in topic order), cut into blocks and segments."""
    topics = fixture_topics()
    logs = []
    for log_id, topic in enumerate(sorted(topics), start=1):
        log = WrittenLog(log_id, topic)
        for data in topics[topic]:
            message = envelope(data)
            if message is None:
                log.skipped += 1
            else:
                log.messages.append(message)
        indexes = list(range(len(log.messages)))
        blocks = [indexes[i : i + per_block] for i in range(0, len(indexes), per_block)]
        log.segments = [blocks[i : i + blocks_per_segment] for i in range(0, len(blocks), blocks_per_segment)]
        logs.append(log)
    return logs


def write_wal(
    root: Path,
    logs: list[WrittenLog],
    *,
    layout: str = "local",
    version: int = 6,
    active_last: bool = False,
) -> None:
    """Each log's segments below `root/<logId>/<segId>`; `active_last`: every log's last segment without footer."""
    for log in logs:
        for segment_id, blocks in enumerate(log.segments):
            records = [[w.message(*log.messages[i]) for i in block] for block in blocks]
            finalized = not (active_last and segment_id == len(log.segments) - 1)
            folder = root / str(log.log_id) / str(segment_id)
            if layout == "local":
                w.local_segment(folder, records, finalized=finalized, version=version)
            else:
                w.object_segment(folder, records, finalized=finalized, version=version)
