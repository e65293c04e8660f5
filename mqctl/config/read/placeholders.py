"""`${VAR}` placeholders left in a config: Milvus reads them literally, so they are findings, not bad input.

Milvus's config loader substitutes nothing. Milvus 2.2 (`internal/config/file_source.go`) and 2.3-2.5
(`pkg/config/file_source.go`) read each yaml with viper (`ReadInConfig`, then `cast.ToStringE` per
key); 2.6+ (`pkg/config/file_source.go`) with gopkg.in/yaml.v2 `yaml.Unmarshal` and
`flattenAndMergeMap`. Neither expands environment variables, so `minio.accessKeyID:
${MINIO_ACCESS_KEY}` is an access key of 19 characters, `${MINIO_ACCESS_KEY}`; only a step before
Milvus starts (envsubst, a templating entrypoint) would fill it in. A `{{ ... }}` template is
another matter: it is not YAML Milvus could read, and parse.py refuses the file.
"""

from __future__ import annotations

import re

from mqctl.secrets import REDACTED, is_secret_key

# ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?message}, ${NAME:+alternative} (envsubst, compose, shells)
PLACEHOLDER = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?:[:?+-][^}]*)?\}")


def find(value: str | None) -> list[str]:
    """The placeholders written in a value, in order."""
    return PLACEHOLDER.findall(value or "")


def masked(placeholder: str) -> str:
    """`${NAME:-default}` -> `${NAME:-******}`: the variable's name helps, its default may be a password."""
    named = re.match(r"\$\{([A-Za-z_][A-Za-z0-9_]*)([:?+-]*)", placeholder)
    if named is None:
        return "{{" + REDACTED + "}}"
    return "${" + named.group(1) + (named.group(2) + REDACTED if named.group(2) else "") + "}"


def shown(value: str, key: str) -> str:
    """A value holding placeholders as it may be printed: under a secret key, only the variables' names."""
    if not is_secret_key(key):
        return value
    return ", ".join(masked(found) for found in find(value)) or REDACTED
