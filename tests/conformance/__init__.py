"""The conformance suite: mqctl's `config explain` judged by the real Milvus 2.3.5 binary (docs/conformance.md)."""
