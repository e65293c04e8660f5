"""Write the real-data fixtures for the MQ tests with a real Milvus 2.3.5 (PyPI `milvus`).

Phase 1 runs Milvus on RocksMQ with a tiny `rocksmqPageSize` so pages close and get acked:
two collections (int64 and varchar primary keys, every scalar type 2.3.5 accepts, a float and
a binary vector), a partition, inserts, deletes and a dropped collection. After FlushAll,
phase 2 restarts the same data dir on natsmq (`retention.maxAge: 0`, so the store never
expires when a test opens it later) and inserts/deletes more. The RocksMQ directories (without
LOCK/LOG files) and the natsmq store are copied into tests/fixtures/, and everything that was
written is recorded in tests/fixtures/expected.json for the tests to compare against.

Usage: python tests/helpers/make_fixtures.py [--out tests/fixtures] [--keep DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mqctl.host.ports import free_ports

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
PAGE_SIZE = 2048  # bytes: a page closes every few seconds of time ticks
DML_CHANNELS = 4  # rootCoord.dmlChannelNum: fewer channels keep the fixture small
SKIPPED_DB_FILES = ("LOCK", "LOG")  # RocksDB lock and info logs (LOG, LOG.old.*) are not data


def load_expected(fixtures: Path = FIXTURES) -> dict:
    """The ground truth recorded next to the fixtures (what was inserted, deleted, created)."""
    return json.loads((fixtures / "expected.json").read_text())


def rows_by_pk(expected: dict, collection: str, phase: str) -> dict:
    """Expected rows of one collection written in one phase ("rocksmq" or "natsmq"), keyed by primary key."""
    key = expected["collections"][collection]["primary_key"]
    return {
        row[key]: row
        for batch in expected["inserts"]
        if batch["collection"] == collection and batch["phase"] == phase
        for row in batch["rows"]
    }


def _template_with_private_etcd(work: Path) -> Path:
    """The package's milvus.yaml template plus `etcd.config.path`, so the embedded etcd listens on
    free ports instead of 2379/2380 (other Milvus instances may run on this machine)."""
    import milvus

    package_data = Path(milvus.__file__).parent / "data"
    client_port, peer_port = free_ports(2)
    etcd_config = work / "embed-etcd.yaml"
    etcd_config.write_text(
        "name: default\n"
        f"listen-client-urls: http://127.0.0.1:{client_port}\n"
        f"advertise-client-urls: http://127.0.0.1:{client_port}\n"
        f"listen-peer-urls: http://127.0.0.1:{peer_port}\n"
        f"initial-advertise-peer-urls: http://127.0.0.1:{peer_port}\n"
        f"initial-cluster: default=http://127.0.0.1:{peer_port}\n"
    )
    text = (package_data / "config.yaml.template").read_text()
    text = text.replace("etcd:\n", f"etcd:\n  config:\n    path: {etcd_config}\n", 1)
    template = work / "milvus.yaml.template"
    template.write_text(text)
    return template


@contextlib.contextmanager
def milvus_server(data_dir: Path, work: Path, settings: dict):
    """A real Milvus 2.3.5 standalone on free ports over data_dir; yields the gRPC URI."""
    import milvus
    from milvus import MilvusServer, MilvusServerConfig

    from mqctl.sandbox.config import TEMPLATE_PORT_KEYS

    config = MilvusServerConfig(
        data_dir=str(data_dir),
        template=str(_template_with_private_etcd(work)),
        **dict(zip(TEMPLATE_PORT_KEYS, free_ports(len(TEMPLATE_PORT_KEYS)))),
    )
    config.glog_conf_file = str(Path(milvus.__file__).parent / "data" / "glog.conf")
    server = MilvusServer(config)
    server.set_base_dir(str(data_dir))
    server.webservice_port = free_ports(1)[0]
    for key, value in {"rootCoord.dmlChannelNum": DML_CHANNELS, **settings}.items():
        server.config.set(key, value)
    server.start()
    try:
        yield f"http://127.0.0.1:{server.listen_port}"
    finally:
        proc = server.server_proc
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        server.server_proc = None
        server.stop()


def _schema_int64(client):
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("title", DataType.VARCHAR, max_length=64)
    schema.add_field("flag", DataType.BOOL)
    schema.add_field("score", DataType.DOUBLE)
    schema.add_field("ratio", DataType.FLOAT)
    schema.add_field("count32", DataType.INT32)
    schema.add_field("small16", DataType.INT16)
    schema.add_field("tiny8", DataType.INT8)
    schema.add_field("meta", DataType.JSON)
    schema.add_field("embedding", DataType.FLOAT_VECTOR, dim=4)
    return schema


def _schema_varchar(client):
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=True)
    schema.add_field("sku", DataType.VARCHAR, is_primary=True, max_length=32)
    schema.add_field("price", DataType.DOUBLE)
    schema.add_field("fingerprint", DataType.BINARY_VECTOR, dim=16)
    return schema


def _describe(schema) -> list[dict]:
    """Fields with Milvus DataType names (Int64, VarChar, FloatVector...), as the MQ messages name them."""
    from pymilvus.grpc_gen import schema_pb2

    fields = []
    for field in schema.fields:
        params = field.params or {}
        fields.append(
            {
                "name": field.name,
                "type": schema_pb2.DataType.Name(int(field.dtype)),
                "is_primary": bool(field.is_primary),
                "dim": int(params["dim"]) if "dim" in params else None,
                "max_length": int(params["max_length"]) if "max_length" in params else None,
            }
        )
    return fields


def _rows_int64(start: int, count: int) -> list[dict]:
    # floats are multiples of 1/4 so float32 storage keeps them exact
    return [
        {
            "id": i,
            "title": f"item-{i}",
            "flag": i % 2 == 0,
            "score": i * 1.5 + 0.1,
            "ratio": i / 4,
            "count32": i * 1000,
            "small16": -i,
            "tiny8": i % 100,
            "meta": {"n": i, "tags": ["a", str(i)]},
            "embedding": [i / 4, 0.5, -1.0, float(i % 3)],
        }
        for i in range(start, start + count)
    ]


def _rows_varchar(start: int, count: int) -> list[dict]:
    return [
        {
            "sku": f"sku-{i:04d}",
            "price": i + 0.25,
            "fingerprint": bytes([i % 256, (i * 7) % 256]),
            "color": ["red", "green", "blue"][i % 3],
        }
        for i in range(start, start + count)
    ]


def _jsonable_row(row: dict) -> dict:
    return {k: (v.hex() if isinstance(v, bytes) else v) for k, v in row.items()}


class Recorder:
    """What the script wrote, in order: the ground truth for the tests."""

    def __init__(self):
        self.data: dict[str, Any] = {
            "milvus_version": "2.3.5",
            "rocksmq_page_size": PAGE_SIZE,
            "dml_channels": DML_CHANNELS,
            "channel_prefix": "by-dev-rootcoord-dml_",
            "natsmq_retention": {"maxAge": 0},
            "collections": {},
            "inserts": [],
            "deletes": [],
            "dropped_collections": [],
            "partitions": [],
        }

    def collection(self, name, schema, shards, phase):
        self.data["collections"][name] = {
            "fields": _describe(schema),
            "shards": shards,
            "created_in": phase,
            "enable_dynamic_field": bool(schema.enable_dynamic_field),
            "primary_key": next(f.name for f in schema.fields if f.is_primary),
        }

    def insert(self, client, phase, collection, rows, partition=None):
        kwargs = {"partition_name": partition} if partition else {}
        result = client.insert(collection, rows, **kwargs)
        assert result["insert_count"] == len(rows), result
        self.data["inserts"].append(
            {
                "phase": phase,
                "collection": collection,
                "partition": partition or "_default",
                "rows": [_jsonable_row(r) for r in rows],
            }
        )

    def delete(self, client, phase, collection, pks):
        client.delete(collection, ids=pks)
        self.data["deletes"].append({"phase": phase, "collection": collection, "pks": pks})


def phase_rocksmq(uri: str, rec: Recorder) -> None:
    from pymilvus import MilvusClient

    client = MilvusClient(uri=uri)
    items, skus = "items", "skus"
    schema_a, schema_b = _schema_int64(client), _schema_varchar(client)
    client.create_collection(items, schema=schema_a, num_shards=2)
    rec.collection(items, schema_a, 2, "rocksmq")
    client.create_collection(skus, schema=schema_b, num_shards=1)
    rec.collection(skus, schema_b, 1, "rocksmq")
    client.create_partition(items, "p_extra")
    rec.data["partitions"].append({"collection": items, "partition": "p_extra", "phase": "rocksmq"})
    for batch in range(3):
        rec.insert(client, "rocksmq", items, _rows_int64(batch * 10, 10))
        time.sleep(2)  # let time ticks fill and close pages between batches
    rec.insert(client, "rocksmq", items, _rows_int64(100, 5), partition="p_extra")
    rec.insert(client, "rocksmq", skus, _rows_varchar(0, 8))
    rec.delete(client, "rocksmq", items, [1, 2, 3, 101])
    rec.delete(client, "rocksmq", skus, ["sku-0001", "sku-0002"])
    scratch_schema = _schema_int64(client)
    client.create_collection("scratch", schema=scratch_schema, num_shards=1)
    rec.collection("scratch", scratch_schema, 1, "rocksmq")
    client.drop_collection("scratch")
    rec.data["dropped_collections"].append({"collection": "scratch", "phase": "rocksmq"})
    time.sleep(8)  # consumers read past the closed pages: acked_ts entries appear
    client.flush_all(timeout=120)
    time.sleep(3)
    client.close()


def phase_natsmq(uri: str, rec: Recorder) -> None:
    from pymilvus import MilvusClient

    client = MilvusClient(uri=uri)
    rec.insert(client, "natsmq", "items", _rows_int64(200, 6))
    rec.insert(client, "natsmq", "skus", _rows_varchar(200, 4))
    rec.delete(client, "natsmq", "items", [200, 4])
    rec.delete(client, "natsmq", "skus", ["sku-0200"])
    time.sleep(3)
    client.close()


def copy_db(src: Path, dst: Path) -> None:
    """Copy a RocksDB folder without its lock and info logs (the WAL `*.log` files are data)."""
    dst.mkdir(parents=True)
    for entry in sorted(src.iterdir()):
        if entry.is_file() and not entry.name.startswith(SKIPPED_DB_FILES):
            shutil.copy2(entry, dst / entry.name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=FIXTURES)
    parser.add_argument("--keep", type=Path, help="keep the Milvus data dir here for inspection")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="mqctl-fixtures-"))
    data_dir = work / "milvus"
    rec = Recorder()
    try:
        with milvus_server(data_dir, work, {"rocksmq.rocksmqPageSize": PAGE_SIZE}) as uri:
            phase_rocksmq(uri, rec)
        store_dir = data_dir / "data" / "nats"
        with milvus_server(
            data_dir,
            work,
            {
                "mq.type": "natsmq",
                "natsmq.server.port": free_ports(1)[0],
                "natsmq.server.storeDir": str(store_dir),
                "natsmq.server.retention.maxAge": 0,
            },
        ) as uri:
            phase_natsmq(uri, rec)
        out = args.out
        for sub in ("rocksmq", "natsmq"):
            shutil.rmtree(out / sub, ignore_errors=True)
        rocks = data_dir / "data" / "rocksmq"
        copy_db(rocks, out / "rocksmq" / "rdb_data")
        copy_db(Path(f"{rocks}_meta_kv"), out / "rocksmq" / "rdb_data_meta_kv")
        shutil.copytree(store_dir, out / "natsmq" / "store")
        (out / "expected.json").write_text(json.dumps(rec.data, indent=1) + "\n")
        print(f"fixtures written to {out}")
        return 0
    finally:
        if args.keep:
            shutil.copytree(data_dir, args.keep, dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
