"""The reader Spark's executors run for the `milvus_mq` data source: option parsing and planning of id ranges,
the batch and stream readers of every MQ, the row and message shapes, and the checks an executor makes before it
reads. Nothing here imports the driver's side of replay (job, follow, session, shipping, write): what an executor
unpickles stays small, and the graph runs one way."""
