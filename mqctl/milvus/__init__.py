"""What mqctl asks a running Milvus through pymilvus: the client (client.py), pymilvus's generated protobuf modules
loaded under one lock (protos.py) and latency measured on scratch collections (measure.py). A utility: no layer above."""
