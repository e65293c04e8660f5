"""RocksMQ (Milvus's embedded RocksDB MQ): the read-only reader and retention as Milvus applies it."""
