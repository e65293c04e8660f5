"""A RocksMQ holding messages as Milvus 2.6 writes them, built from a copy of the RocksMQ fixture: each value of a
topic becomes the magic prefix `FF FE FD FC "STREAM"` and an RMQMessageLayout (payload 1, properties 2, a
map<string,string>) holding the message in its 2.6 envelope (milvus pkg/mq/mqimpl/rocksmq/client/streaming.go
`marshalStreamingMessage`, magic.go; pkg/proto/messages.proto). Written with tests/helpers/protowire.py, apart from
mqctl's reader."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.helpers.protowire import field_bytes
from tests.helpers.woodpecker_wal import ROCKSMQ, envelope

MAGIC = bytes([0xFF, 0xFE, 0xFD, 0xFC]) + b"STREAM"


def value(payload: bytes, properties: dict[str, str]) -> bytes:
    entries = b"".join(field_bytes(2, field_bytes(1, k) + field_bytes(2, v)) for k, v in properties.items())
    return MAGIC + field_bytes(1, payload) + entries


def streaming_copy(target: Path, topics: set[str]) -> tuple[Path, int]:
    """A copy of the RocksMQ fixture (and its _meta_kv) whose `topics` hold 2.6 values; (its path, values
    rewritten). A message of a type 2.6 writes otherwise is left as it was."""
    from rocksdict import Options, Rdict

    shutil.copytree(ROCKSMQ, target / "rdb_data")
    shutil.copytree(ROCKSMQ.with_name("rdb_data_meta_kv"), target / "rdb_data_meta_kv")
    db = Rdict(str(target / "rdb_data"), options=Options(raw_mode=True))
    rewritten = 0
    try:
        for key, data in list(db.items()):
            assert isinstance(key, bytes)  # raw mode
            topic = key.decode().rpartition("/")[0]
            wrapped = envelope(bytes(data)) if topic in topics else None
            if wrapped is not None:
                db[key] = value(*wrapped)
                rewritten += 1
    finally:
        db.close()
    (target / "rdb_data" / "rocksdict-config.json").unlink(missing_ok=True)
    return target / "rdb_data", rewritten


def append(db_path: Path, topic: str, messages: list[tuple[bytes, dict[str, str]]]) -> list[int]:
    """Add 2.6 messages (payload, properties) after the last message of `topic` in a copied store, as the 2.6
    streaming service writes them (ids of the same length, so key order is id order); their ids."""
    from rocksdict import Options, Rdict

    db = Rdict(str(db_path), options=Options(raw_mode=True))
    try:
        prefix = f"{topic}/".encode()
        keys = [k for k in db.keys(from_key=prefix) if isinstance(k, bytes) and k.startswith(prefix)]  # raw mode
        last = max(int(k[len(prefix) :]) for k in keys)
        ids = [last + i for i in range(1, len(messages) + 1)]
        for message_id, message in zip(ids, messages):
            db[prefix + str(message_id).encode()] = value(*message)
    finally:
        db.close()
    (db_path / "rocksdict-config.json").unlink(missing_ok=True)
    return ids
