"""What the conformance suite (tests/conformance) shares: variants of a config, the real Milvus 2.3.5 binary that
judges each (runner), how its outcome is classified and compared with `config explain`, the recorded verdicts
(milvus-2.3.5.json) and the script that records them again (record)."""
