"""The online WAL switch (AlterWAL): the only supported way to change the MQ of Milvus 2.6.14+ and 3.x.

`POST http://<mixcoord>:9091/management/wal/alter {"target_wal_name": "<mq>"}` on the coordinator's
management port broadcasts an AlterWAL message to every physical channel, reopens the WAL with the target
and then writes the new mq.type into etcd (milvus #45286, 2.6 backport #47439; issues #42798, #44726).
Milvus's "Switch MQ type" docs give its limits: only between woodpecker and another MQ (rocksmq in
standalone, pulsar or kafka in a cluster; pulsar <-> kafka and woodpecker minio <-> local are not
supported), an etcd config source (Docker Compose or Kubernetes, not the single-container embedded etcd),
`streaming.enabled` (Helm), the target's settings rendered into the config beforehand without touching
mq.type, and a target holding no topics or data with this Milvus's names. Those docs list the feature for
3.0 and mark it "pending release"; on 2.6 it comes with the backport, so rehearse it first.

AlterWAL came to 2.6 with the same backport as the pinning (#47439, approved 2026-03-25), so its first
release is, like the pinning's, inferred as 2.6.14 (2026-04-07), not read from a release tag. 2.6.0-2.6.13
have neither: no supported way to change the MQ of a deployed Milvus (milvus #42798).

A file edit cannot switch 2.6+ (mqctl.config.resolve.pinning), so `config switch` refuses: on 2.6.14+ it names this
procedure and `migrate plan --milvus-version 2.6.x` lists its steps (mqctl.migrate.alter_wal); on 2.6.0-2.6.13
both refuse with one message (`refuse_without_alter_wal`). mqctl does not call the endpoint itself.
"""

from __future__ import annotations

import json

from mqctl.backends import CLUSTER, V2_6, Version
from mqctl.config.known_keys import format_version
from mqctl.errors import PreconditionError

ENDPOINT = "/management/wal/alter"
MANAGEMENT_PORT = 9091  # MixCoord's HTTP port (also /healthz and /metrics)
WOODPECKER = "woodpecker"
# What the coordinator logs once the switch is done; the last line carries [mqTypeValue=<target>].
DONE_LOGS = (
    "WAL switch success: {source} switch to {target} finish, re-opening required",
    "AlterWAL broadcast message acknowledged by all vchannels",
    "successfully updated mq.type configuration in etcd",
)
# /management/config/get kept the old mq.type after a switch (milvus #51497), fixed in 2.6.21 (#51552)
STALE_CONFIG_GET_FIXED: Version = (2, 6, 21)
ALTER_WAL_SINCE: Version = (2, 6, 14)  # the first 2.6 release with backport #47439 (inferred, see above)
PRECONDITIONS = (
    "streaming.enabled",
    "an etcd config source (not the embedded etcd of a single container)",
    "the target's settings in the config with mq.type unchanged",
    "a target without same-named topics",
)


def applies(version: Version | None) -> bool:
    """Milvus 2.6+: a file edit no longer switches the MQ, whether or not AlterWAL is there."""
    return version is not None and version >= V2_6


def has_alter_wal(version: Version | None) -> bool:
    """Whether this Milvus has the online WAL switch (2.6.14+ and 3.x)."""
    return version is not None and version >= ALTER_WAL_SINCE


def blocker(source: str | None, target: str, mode: str, version: Version | None) -> str | None:
    """Why AlterWAL cannot take this deployment from `source` to `target`, or None when it can."""
    shown = format_version(version)
    if "natsmq" in (source, target):
        return "natsmq was removed in Milvus 2.6 (milvus #41564): no WAL switch reads or writes it"
    if not has_alter_wal(version):
        return (
            f"Milvus {shown} has no online WAL switch and does not support changing the MQ of a deployment "
            f"(milvus #42798); AlterWAL came to 2.6 with #47439, from {format_version(ALTER_WAL_SINCE)}"
        )
    if source == target:
        return f"the deployment already runs {target}"
    if source is not None and WOODPECKER not in (source, target):
        return (
            f"AlterWAL switches only between woodpecker and another MQ, not {source} -> {target} "
            "(milvus #45286; the Switch MQ type docs leave direct switches out)"
        )
    if mode == CLUSTER and "rocksmq" in (source, target):
        return "rocksmq runs in standalone only: a cluster switches between woodpecker and pulsar or kafka"
    return None


def request(target: str, coordinator: str) -> str:
    """The command that starts the switch, for the operator to run (mqctl does not call it)."""
    body = json.dumps({"target_wal_name": target})
    return f"curl -X POST {coordinator.rstrip('/')}{ENDPOINT} -H 'Content-Type: application/json' -d '{body}'"


def refuse_without_alter_wal(version: Version | None, target: str) -> None:
    """2.6.0-2.6.13: neither a file edit nor AlterWAL switches a deployed Milvus (exit 3). One message for
    `config switch` and `migrate plan`, so neither points at the other."""
    if not applies(version) or has_alter_wal(version):
        return
    raise PreconditionError(
        f"cannot switch Milvus {format_version(version)} to {target}: it has no online WAL switch and does not "
        "support changing the MQ of a deployed Milvus (milvus #42798)",
        hint=f"upgrade to {format_version(ALTER_WAL_SINCE)}+ and switch online with AlterWAL (POST {ENDPOINT}); "
        f"before the first boot, `mqctl config set FILE mq.type {target}`",
    )


def refuse_file_switch(version: Version | None, target: str) -> None:
    """`config switch` on 2.6+: editing the file would not switch the MQ, so say what does (exit 3)."""
    refuse_without_alter_wal(version, target)
    if not applies(version):
        return
    shown = format_version(version)
    raise PreconditionError(
        f"config switch cannot switch Milvus {shown} by editing the file: mq.type is pinned in etcd at the first "
        "boot (ProcessImmutableConfigs, milvus PR #45286; #50217), so the edit would have no effect",
        hint=f"switch online with AlterWAL, POST {ENDPOINT} {json.dumps({'target_wal_name': target})}: only "
        f"woodpecker <-> another MQ; needs {', '.join(PRECONDITIONS)}; "
        f"`mqctl migrate plan --milvus-version {shown} --to {target} ...` lists the steps; "
        f"before the first boot, `mqctl config set FILE mq.type {target}`",
    )
