"""A real embedded Milvus 2.3.5 in a folder (server, config, etcd, demo data) and the rehearsal run on it."""
