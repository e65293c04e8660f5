"""Which value Milvus reads for a key and why: yaml, environment, etcd, 2.6 pinning and the WAL switch."""
