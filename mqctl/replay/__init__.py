"""Replay Milvus MQ channels into Apache Spark: the `milvus_mq` data source, its row shapes, checkpoints and the job."""
