"""Tests of mqctl.mq.streaming: Milvus 2.6 streaming-service meta, encoded here by hand."""
