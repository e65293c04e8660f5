"""Tests of mqctl.migrate that need no Milvus: journal, steps, evidence, checkpoints."""
