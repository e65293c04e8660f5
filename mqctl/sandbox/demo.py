"""The demo data `mqctl sandbox up --seed` (and `migrate --rehearse`) put into a sandbox."""

from __future__ import annotations

from mqctl.milvus.protos import import_pymilvus

DEMO_COLLECTIONS = {"demo_docs": 3000, "demo_events": 1200}  # name -> rows inserted by --seed
DEMO_DIM = 8


def seed_demo(uri: str) -> dict[str, int]:
    """Two demo collections with inserts and deletes, left unflushed (so the MQ holds them).

    Returns the expected row count of each collection after the deletes.
    """
    import random

    import_pymilvus()
    from pymilvus import DataType, MilvusClient

    from mqctl.milvus.client import count_rows

    client = MilvusClient(uri=uri, timeout=60)
    expected = {}
    try:
        for name, rows in DEMO_COLLECTIONS.items():
            if client.has_collection(name):
                expected[name] = count_rows(client, name)
                continue
            schema = client.create_schema(auto_id=False)
            schema.add_field("id", DataType.INT64, is_primary=True)
            schema.add_field("tag", DataType.INT64)
            schema.add_field("vector", DataType.FLOAT_VECTOR, dim=DEMO_DIM)
            index = client.prepare_index_params()
            index.add_index("vector", index_type="FLAT", metric_type="L2")
            client.create_collection(name, schema=schema, index_params=index, consistency_level="Strong")
            rng = random.Random(name)
            for start in range(0, rows, 1000):
                batch = [
                    {"id": i, "tag": i % 7, "vector": [rng.random() for _ in range(DEMO_DIM)]}
                    for i in range(start, min(start + 1000, rows))
                ]
                client.insert(name, batch)
            client.delete(name, filter="id % 10 == 0")  # every tenth row, so deletes are in the MQ too
            expected[name] = count_rows(client, name)
    finally:
        client.close()
    return expected
