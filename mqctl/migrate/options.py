"""What a migration is asked to do: one `MigrateOptions`, its defaults, and what of it is journaled."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mqctl.config.resolve.sources import DEFAULT_ETCD_ROOT
from mqctl.host import hooks
from mqctl.milvus.client import MilvusTarget

if TYPE_CHECKING:
    from mqctl.config.resolve.sources import EtcdConfig


@dataclass
class MigrateOptions:
    """Everything a migration needs, with its defaults; `journaled()` is what may be written down (no secrets)."""

    configs: list[str]
    to: str
    milvus: MilvusTarget
    stop_cmd: str | None = None
    start_cmd: str | None = None
    shell: bool = False
    log_file: str | None = None
    log_cmd: str | None = None
    health_url: str | None = None
    etcd: str | None = None
    etcd_root: str = DEFAULT_ETCD_ROOT
    backup_dir: str | None = None
    cleanup: bool = False
    writes_stopped: bool = False
    no_write_probe: bool = False  # confirm forceDeny changes from the log only (no zero-row insert)
    clear_etcd_override: bool = False
    store_dir: str | None = None
    nats_port: int | None = None
    kafka: str | None = None  # with --to kafka: the bootstrap the switch writes to kafka.brokerList
    milvus_version: str | None = None
    flush_timeout: float = 600
    stop_timeout: float = 120
    start_timeout: float = 300
    verify_timeout: float = 600
    confirm_timeout: float = 90

    def __post_init__(self) -> None:
        """A URL whose host or port cannot be a server's is refused here, in one line, before any step runs."""
        from mqctl.urls import check_url

        if self.health_url:
            check_url(self.health_url, "--health-url")
        if self.etcd:
            check_url(self.etcd, "--etcd")
        if self.kafka:
            from mqctl.errors import InputError
            from mqctl.mq.kafka.connect import check_bootstrap

            check_bootstrap(self.kafka)
            if self.to != "kafka":
                raise InputError(f"--kafka names the broker of a migration to kafka, not to {self.to}")

    def journaled(self) -> dict[str, Any]:
        data = {k: v for k, v in self.__dict__.items() if k != "milvus"}
        data["milvus"] = self.milvus.public()
        if self.etcd:  # an etcd password is given again to resume (--etcd), like Milvus's
            from mqctl.urls import without_password

            data["etcd"] = without_password(self.etcd)
        return data

    @classmethod
    def check_journaled(cls, data: dict[str, Any]) -> None:
        """ValueError naming the first journaled option that is missing or of the wrong type."""
        kinds: dict[str, type | tuple[type, ...]] = {
            "str": str,
            "bool": bool,
            "float": (int, float),
            "int": int,
            "None": type(None),
            "list[str]": list,
        }
        for name, spec in cls.__dataclass_fields__.items():
            if name == "milvus":
                if not isinstance(data.get(name), dict) or not isinstance(data[name].get("uri"), str):
                    raise ValueError("options.milvus.uri is missing or not text")
                continue
            if name not in data:
                if spec.default is dataclasses.MISSING:
                    raise ValueError(f"options.{name} is missing")
                continue
            annotation = str(spec.type)  # annotations stay strings here
            value, allowed = data[name], annotation.split(" | ")
            if not isinstance(value, tuple(kinds[t] for t in allowed)) or (
                isinstance(value, bool) and "bool" not in allowed
            ):
                raise ValueError(f"options.{name} is {value!r}, not {annotation}")
        if not data["configs"] or not all(isinstance(c, str) for c in data["configs"]):
            raise ValueError("options.configs is not a list of config paths")

    @classmethod
    def from_journal(cls, data: dict[str, Any], milvus: MilvusTarget, overrides: dict[str, Any]) -> MigrateOptions:
        """The journaled options, with what the operator passes again on top (None keeps the journaled value)."""
        fields = {k: v for k, v in data.items() if k != "milvus" and k in cls.__dataclass_fields__}
        given = {k: v for k, v in overrides.items() if v is not None}
        return cls(milvus=milvus, **{**fields, **given})

    @property
    def log(self) -> hooks.MilvusLog:
        return hooks.MilvusLog(self.log_file, self.log_cmd, self.shell)

    @property
    def live_config(self) -> str:
        """The file Milvus reads last (highest precedence), where switch and forceDeny edits go."""
        return self.configs[-1]

    def etcd_client(self) -> EtcdConfig | None:
        if not self.etcd:
            return None
        from mqctl.config.resolve.sources import EtcdConfig

        return EtcdConfig(self.etcd, root=self.etcd_root)
