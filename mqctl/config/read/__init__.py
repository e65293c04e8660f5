"""Reading deployment documents: parse and compose YAML, the kinds of document, where a key lives in each."""
