"""Decoding Milvus MQ messages: pymilvus's protobuf modules, messages, schemas and insert columns."""
