"""Milvus's etcd sessions across the restart: what a clean stop would have removed.

Every Milvus component registers a session key under `<root>/meta/session/` bound to an etcd lease
(`common.session.ttl` seconds) and revokes it when it stops cleanly. A Milvus that is killed (2.3.5's
graceful stop hangs, and stop commands kill after a timeout) leaves its sessions alive until their leases
run out, and the restarted Milvus waits for them: rootcoord holds back the time ticks while the dead proxy's
session stays, so the query node cannot finish seeking its channels and no collection loads, and the quota
center cannot apply forceDeny (milvus internal/util/sessionutil, rootcoord/timeticksync.go,
quota_center.go). The stop step journals the (key, lease) pairs of the Milvus it stops; once that Milvus is
confirmed down, the start step revokes exactly those leases, which is what its clean stop would have done.
The new Milvus's own sessions have other leases and are never touched.
"""

from __future__ import annotations

from mqctl.errors import MqctlError
from mqctl.migrate.options import MigrateOptions

SESSION_SUB = "meta/session"  # under etcd.rootPath (etcd.metaSubPath `meta`)


def read_sessions(options: MigrateOptions) -> list[dict[str, str]]:
    """The (key, lease) of every live session now; MqctlError when etcd cannot be read."""
    etcd = options.etcd_client()
    if etcd is None:
        return []
    return [{"key": key, "lease": lease} for key, lease in etcd.leases_under(SESSION_SUB)]


def revoke_sessions(options: MigrateOptions, sessions: list[dict[str, str]], handled: dict[str, bool]) -> bool:
    """Revoke the leases of `sessions` not yet in `handled` (lease -> revoked now, or already gone).
    True once every one is handled; False while etcd does not answer yet (the caller tries again)."""
    etcd = options.etcd_client()
    if etcd is None:
        return True
    for lease in dict.fromkeys(s["lease"] for s in sessions):
        if lease in handled:
            continue
        try:
            handled[lease] = etcd.revoke_lease(lease)
        except MqctlError:
            return False
    return True
