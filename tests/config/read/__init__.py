"""Tests of mqctl.config.read: YAML read as Milvus reads it, hostile and random documents."""
