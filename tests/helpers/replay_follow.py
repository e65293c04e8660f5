"""Follow-mode helpers the Spark follow tests share: run a follow query in this process, read an output back as the
keys of its rows, and grow a channel with real-format Milvus messages (an insert with new keys and a time tick)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mqctl.mq.sources import SourceOptions

DML_0 = "by-dev-rootcoord-dml_0"


def follow(spark, source: SourceOptions, out: Path, ckpt: Path, **extra):
    from mqctl.replay.follow import FollowRequest, run_follow
    from mqctl.replay.model import ReplayRequest

    replay = ReplayRequest(source, output=str(out), collection="items", partitions=2)
    request = FollowRequest(replay, str(ckpt), available_now=True, **extra)
    batches: list[Any] = []
    result = run_follow(request, spark=spark, on_batch=batches.append)
    return result, batches


def keys(rows) -> list[tuple]:
    """(op, pk, channel, message id) of every row, sorted: duplicates stay visible."""
    return sorted((row["_op"], row["id"], row["_channel"], row["_seq"]) for row in rows)


def output_keys(spark, out: Path) -> list[tuple]:
    return keys(spark.read.parquet(str(out)).collect())


def batch_keys(spark, options: dict) -> list[tuple]:
    reader = spark.read.format("milvus_mq").option("collection", "items")
    for key, value in options.items():
        reader = reader.option(key, value)
    return keys(reader.load().collect())


def grown(source, channel: str, first_pk: int, rows: int | None = None) -> tuple[bytes, bytes, list[int]]:
    """(insert, time tick, pks): the channel's first `items` insert with new keys and a TSO one minute after its
    last time tick, and a time tick one more minute later, as Milvus would write them."""
    from mqctl.mq.decode.messages import decode

    insert = tick = None
    for raw in source.iter_messages(channel):
        message = decode(raw.data, raw.headers)
        if message.type_code == 400 and message.collection == "items" and insert is None:
            insert = message.proto
        elif message.type_code == 1200:
            tick = message.proto
    assert insert is not None and tick is not None
    count = len(insert.rowIDs) if rows is None else rows
    assert count <= len(insert.rowIDs)
    pks = list(range(first_pk, first_pk + len(insert.rowIDs)))
    later = tick.base.timestamp + (60_000 << 18)
    insert.base.timestamp = later
    insert.timestamps[:] = [later] * len(pks)
    insert.rowIDs[:] = [pk + 10_000 for pk in pks]
    for column in insert.fields_data:
        if column.field_name == "id":
            column.scalars.long_data.data[:] = pks
        elif column.field_name == "title":
            column.scalars.string_data.data[:] = [f"new-{pk}" for pk in pks]
    tick.base.timestamp = later + (60_000 << 18)
    return insert.SerializeToString(), tick.SerializeToString(), pks
