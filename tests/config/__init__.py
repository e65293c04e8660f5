"""Tests of mqctl.config: reading, resolving, validating and editing Milvus configs."""
