"""What `config explain`, `validate` and `get` are asked, as one value: how to read the documents (kind, mode,
version, role) and which overrides apply on top (an environment, an etcd), with the three questions it answers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mqctl.config.resolve.lookup import KeyValue
    from mqctl.config.resolve.resolution import Resolution
    from mqctl.config.resolve.sources import EtcdConfig


@dataclass(frozen=True)
class ResolveRequest:
    kind: str | None = None  # milvus-yaml, operator-cr, helm-values, configmap; None: from the document
    mode: str | None = None  # standalone or cluster; None: from the document
    milvus_version: str | None = None  # None: from the image tag
    environment: dict[str, str] | None = None  # the environment whose overrides apply (MQ_TYPE, ...), if any
    etcd_url: str | None = None  # the etcd whose config overrides apply, if any
    etcd_root: str | None = None  # its etcd.rootPath; None: the documents', as Milvus's
    role: str | None = None  # full or overlay; None: from the file's name and kind

    def overrides(self, paths: Sequence[Path | str]) -> tuple[dict[str, str] | None, EtcdConfig | None]:
        """(environment, etcd) on top of the documents (the etcd root read from them when not given)."""
        from mqctl.config.resolve.resolution import override_sources

        return override_sources(
            paths,
            kind=self.kind,
            mode=self.mode,
            milvus_version=self.milvus_version,
            environment=self.environment,
            etcd_url=self.etcd_url,
            etcd_root=self.etcd_root,
        )

    def resolve(self, paths: Sequence[Path | str]) -> Resolution:
        """The MQ the deployment of `paths` starts, and why."""
        from mqctl.config.resolve.resolution import resolve

        return resolve(paths, **self._reading(paths))

    def read_key(self, path: Path | str, key: str) -> KeyValue:
        """A key's effective value in the deployment of `path` and where it comes from."""
        from mqctl.config.resolve.lookup import read_key

        return read_key(path, key, **self._reading([path]))

    def _reading(self, paths: Sequence[Path | str]) -> dict[str, Any]:
        """The keyword arguments of resolve() and read_key(): the documents' reading and the overrides on top."""
        environment, etcd = self.overrides(paths)
        return {
            "kind": self.kind,
            "mode": self.mode,
            "milvus_version": self.milvus_version,
            "env": environment,
            "etcd": etcd,
            "role": self.role,
        }
