"""Tests of mqctl.mq.decode on the messages a real Milvus wrote."""
