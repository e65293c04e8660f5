"""Tests of mqctl.doctor: finding a running Milvus and what is wrong with its MQ."""
