"""Files tests write and compare: YAML snippets, and fingerprints that prove a store was left untouched."""

from __future__ import annotations

import hashlib
import os
import stat
import textwrap
from pathlib import Path


def write_yaml(tmp_path: Path, text: str, name: str = "milvus.yaml") -> Path:
    """Write a dedented YAML snippet into tmp_path (the config tests' input files)."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def tree_fingerprint(root: Path) -> dict[str, tuple[int, int, int, str | None]]:
    """Every file and folder below root (and its RocksMQ `_meta_kv` sibling) with its bytes, size, mode and mtime."""
    out: dict[str, tuple[int, int, int, str | None]] = {}
    for folder in (root, root.with_name(root.name + "_meta_kv")):
        for dirpath, dirnames, filenames in os.walk(folder):
            for name in dirnames + filenames:
                path = os.path.join(dirpath, name)
                st = os.lstat(path)
                digest = hashlib.sha256(Path(path).read_bytes()).hexdigest() if stat.S_ISREG(st.st_mode) else None
                out[path] = (st.st_size, st.st_mode, st.st_mtime_ns, digest)
    return out


def safe_load(text: str):
    """An independent reading of a YAML text (plain Python values), to check what an edit changed."""
    from ruamel.yaml import YAML

    return YAML(typ="safe", pure=True).load(text)


def backups(folder: Path) -> list[Path]:
    """The backups an edit left beside its file (`*.bak`), in name order."""
    return sorted(folder.glob("*.bak"))


def laughs(levels: int = 9) -> str:
    """The "billion laughs": each line lists the previous one nine times."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\nmq:\n  type: natsmq\n"


# YAML merge keys (`<<`) of every form: one mapping, an alias, a list of them, and keys beside them
MERGED_YAML = """\
    defaults: &nats
      server:
        port: 4223
        storeDir: /data/nats
    mqbase: &mq {type: natsmq}
    mq:
      <<: *mq
    natsmq:
      <<: *nats
    rocksmq:
      <<: [{path: /first}, {path: /second, retentionSizeInMB: 10}]
      retentionSizeInMB: 20
    """


def make_writable(root: Path | str) -> None:
    """Give every folder and file below `root` its owner's write bit back (tests that made a tree read-only)."""
    for folder, _, files in os.walk(root):
        os.chmod(folder, 0o755)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o644)


# a milvus.yaml on RocksMQ with its etcd root: the config of the WAL-pinning tests
ROCKSMQ_YAML = """\
etcd:
  rootPath: by-dev
mq:
  type: rocksmq
rocksmq:
  path: /var/lib/milvus/rdb_data
"""
