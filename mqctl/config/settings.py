"""One value of a Milvus key and where it came from: the one record every layer (yaml, env, etcd, defaults) uses."""

from __future__ import annotations

from dataclasses import dataclass, field

# field metadata of a result's field that is for mqctl's own use, not part of the JSON it prints
INTERNAL = {"json": False}


@dataclass
class Setting:
    """One value of a Milvus key and where it came from."""

    key: str  # dotted Milvus key as written
    value: str | None  # the string Milvus sees; None when empty or null
    file: str | None
    line: int | None  # 1-based
    source: str  # yaml, env, etcd, default, operator, helm
    detail: str = ""  # document path, variable name or etcd key
    # yaml: how many dotted parts each written key along the path holds: (1, 1) for `mq:` then `type:`, (2,)
    # for a top-level `mq.type:`. viper (Milvus 2.3/2.4) reads the longest written prefix first (nodes.viper_rank)
    written_parts: tuple[int, ...] = field(default=(), compare=False, repr=False, metadata=INTERNAL)
