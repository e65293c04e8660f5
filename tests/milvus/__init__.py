"""Tests of mqctl/milvus: pymilvus's generated modules under one lock, and the latency measures."""
