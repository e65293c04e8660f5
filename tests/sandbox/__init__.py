"""Tests of mqctl.sandbox that need no Milvus."""
