"""Milvus 2.6.14+ and 3.x pin `mq.type` in etcd: the file's value only decides the first boot.

At startup the coordinator runs `ProcessImmutableConfigs`, which PR #45286 introduced with the immutable
option (2.6 backport #47439; PR #51543 later only changed what value it writes): every
immutable key (mq.type is one) is written create-if-absent to `<etcd.rootPath>/config/<key>`, the key
lower-cased with `/ _ .` dropped, so mq.type lands at `by-dev/config/mqtype`. The value written is the
resolved WAL name, never the literal `default` (milvus #51497, PR #51543; 2.6 backport #51552 in
2.6.21). From then on the etcd source, which outranks env and yaml, decides: editing mq.type in the yaml
or MQ_TYPE switches nothing (milvus #50217, #49584). Only the online WAL switch changes it
(mqctl.config.resolve.wal). Without an etcd config source (embedded etcd) Milvus skips the pinning.

Which releases pin: the backport #47439 was approved on 2026-03-25 and 2.6.14 (2026-04-07) is the
first 2.6 release after it; 2.6.17 is seen pinning in milvus #50217. 2.6.14 is inferred from those
dates, not read from a release tag.

2.6.0-2.6.13 read mq.type from the file at every boot, but have no supported way to change the MQ of a
deployed Milvus (milvus #42798, no AlterWAL either): a file whose mq.type differs from the MQ the deployment
first booted with points Milvus at an MQ without its data. Without --etcd that is a warning too (MQ165).
"""

from __future__ import annotations

from typing import Protocol

from mqctl.backends import V2_6, Version
from mqctl.config.known_keys import format_version
from mqctl.config.resolve.sources import DEFAULT_ETCD_ROOT
from mqctl.config.settings import Setting
from mqctl.findings import INFO, WARNING, Finding


class Resolution(Protocol):
    """What the pinning rules read of a resolution (resolution.Resolution is one): resolve() calls note(), so
    this module names the part it needs instead of importing the resolution it is called from."""

    milvus_version: str | None
    explanation: list[str]
    files: list[str]
    etcd_read: bool

    @property
    def version(self) -> Version | None: ...

    def origin(self, key: str) -> Setting: ...

    def value(self, key: str) -> str | None: ...

    def yaml_setting(self, key: str) -> Setting | None: ...


PINNED_SINCE: Version = (2, 6, 14)
PIN_KEY = "mqtype"  # Milvus's formatKey("mq.type"): lower-case, `/ _ .` dropped
SOURCE = "ProcessImmutableConfigs, milvus PR #45286, 2.6 backport #47439"
WHY_PINNED = (
    "the first boot writes mq.type into etcd (ProcessImmutableConfigs, PR #45286) and etcd outranks env and "
    "yaml: a file change does not switch the MQ (milvus #50217, #49584)."
)
WHY_FIRST_BOOT = "without --etcd, the value pinned at the first boot is unknown; the file's mq.type may not decide."
WHY_UNCHANGEABLE = (
    "2.6.0-2.6.13 read mq.type at every boot but cannot change the MQ of a deployed Milvus (milvus #42798): "
    "a value other than the first boot's points Milvus at an MQ without its data."
)


def pins(version: Version | None) -> bool:
    """Whether this Milvus writes mq.type into etcd at first boot and reads it from there afterwards."""
    return version is not None and version >= PINNED_SINCE


def unchangeable(version: Version | None) -> bool:
    """2.6.0-2.6.13: the file decides at every boot, yet changing the MQ of a deployed Milvus is unsupported."""
    return version is not None and V2_6 <= version < PINNED_SINCE


def pin_key(res: Resolution) -> str:
    """The etcd key Milvus pins mq.type under, from the resolved etcd.rootPath."""
    return f"{(res.value('etcd.rootPath') or DEFAULT_ETCD_ROOT).strip('/')}/config/{PIN_KEY}"


def pinned(res: Resolution) -> str | None:
    """The mq.type etcd holds (any spelling Milvus normalises to mqtype), or None when etcd holds none."""
    origin = res.origin("mq.type")
    return origin.value if origin.source == "etcd" else None


def _yaml_value(res: Resolution) -> str:
    setting = res.yaml_setting("mq.type")
    return setting.value if setting is not None and setting.value else "default"


def note(res: Resolution) -> None:
    """Add the pinning step to the explanation (2.6+; earlier versions read the yaml each boot and can switch)."""
    if unchangeable(res.version) and not res.etcd_read:
        res.explanation.append(
            f"Milvus {res.milvus_version} reads mq.type at every boot (the pinning in etcd starts with "
            f"{format_version(PINNED_SINCE)}), but does not support changing the MQ of a deployed Milvus "
            f"(milvus #42798): the yaml's mq.type ({_yaml_value(res)}) below is what runs only if the "
            "deployment first booted with it; pass --etcd to see etcd's overrides."
        )
    if not pins(res.version):
        return
    version, key = res.milvus_version, pin_key(res)
    if not res.etcd_read:
        res.explanation.append(
            f"Milvus {version} pins mq.type in etcd ({key}) at first boot and reads it from there afterwards "
            f"({SOURCE}): the yaml's mq.type ({_yaml_value(res)}) below only decides the first boot; "
            "pass --etcd to read the pinned value."
        )
        return
    value = pinned(res)
    if value is None:
        res.explanation.append(
            f"Milvus {version} pins mq.type in etcd ({key}) at first boot ({SOURCE}); etcd holds no mq.type yet: "
            "the next boot with an etcd config source pins the MQ resolved below."
        )
        return
    res.explanation.append(
        f"Milvus {version} reads mq.type from etcd, where the first boot pinned it ({SOURCE}): "
        f"{res.origin('mq.type').detail} = {value!r} wins over the yaml ({_yaml_value(res)}) and env; "
        "only the online WAL switch changes it (milvus #50217, #49584)."
    )


def findings(res: Resolution) -> list[Finding]:
    """MQ160 (info): the pinned value decides. MQ161 (warning): etcd not read, the yaml may not decide.
    MQ165 (warning): 2.6.0-2.6.13 without --etcd, the yaml decides only if the deployment booted with it."""
    file = res.files[0] if res.files else None
    yaml = res.yaml_setting("mq.type")
    where = (yaml.file, yaml.line) if yaml is not None else (file, None)
    if unchangeable(res.version) and not res.etcd_read:
        return [
            Finding(
                "MQ165",
                WARNING,
                f"on Milvus {format_version(res.version)} mq.type {_yaml_value(res)!r} runs only if the deployment "
                "first booted with it: 2.6.0-2.6.13 do not support changing the MQ of a deployed Milvus "
                "(milvus #42798)",
                "mq.type",
                *where,
                "keep mq.type as the deployment first booted with; pass --etcd http://HOST:2379 to see etcd's "
                f"overrides; to switch MQ, upgrade to {format_version(PINNED_SINCE)}+ and use the online WAL switch",
            )
        ]
    if not pins(res.version):
        return []
    if not res.etcd_read:
        return [
            Finding(
                "MQ161",
                WARNING,
                f"on Milvus {format_version(res.version)} mq.type {_yaml_value(res)!r} is only the first-boot value: "
                f"a deployment that has booted runs the MQ pinned in etcd ({pin_key(res)})",
                "mq.type",
                *where,
                "pass --etcd http://HOST:2379 to read the pinned value; change it with the online WAL switch "
                "(`mqctl migrate plan --milvus-version ...`), not in the file",
            )
        ]
    value = pinned(res)
    if value is None:
        return []
    return [
        Finding(
            "MQ160",
            INFO,
            f"mq.type is pinned in etcd: {res.origin('mq.type').detail} = {value!r}; a yaml or env change does "
            "not switch the MQ (milvus #50217)",
            "mq.type",
            *where,
            "switch with the online WAL switch (`mqctl migrate plan --milvus-version ...`)",
        )
    ]
