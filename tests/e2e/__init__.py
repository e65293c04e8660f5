"""End-to-end suites on real Milvus sandboxes and Spark clusters (marked milvus or spark)."""
