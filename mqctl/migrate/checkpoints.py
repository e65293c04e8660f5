"""Channel checkpoints as migrate reads them: every vchannel's position in etcd, which Milvus resumes
each vchannel from (milvus internal/datacoord channel checkpoints). FlushAll is complete for the switch
once every checkpoint is at or past its timestamp; after the switch they move on the new MQ."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from typing import Any

from mqctl.migrate.context import resolution
from mqctl.migrate.options import MigrateOptions
from mqctl.migrate.record.evidence import CheckpointRows

CHECKPOINT_ADVANCE_SECONDS = 60.0  # how long verify waits for the new MQ's checkpoints to move


def read_checkpoints(options: MigrateOptions) -> CheckpointRows:
    """Every live vchannel's checkpoint from etcd (--etcd, else the config's etcd.endpoints), as journal rows
    (see `mqctl channels checkpoints`); MqctlError when etcd cannot be read."""
    from mqctl.mq.channel_checkpoints import live_checkpoints
    from mqctl.mq.milvus_meta import meta_reader

    return [
        {
            "vchannel": cp.vchannel,
            "collection": f"{cp.database}/{cp.collection}",
            "pchannel": cp.pchannel,
            "ts": cp.ts,
            "time": _iso(cp.time),
            "position": cp.position,
            "from": cp.origin,
        }
        for cp in live_checkpoints(meta_reader(options.etcd, options.etcd_root, resolution(options)))
    ]


def checkpoints_before(rows: CheckpointRows, tso: int) -> list[str]:
    """The vchannels whose checkpoint is not yet at or past `tso` (a Milvus timestamp)."""
    return [row["vchannel"] for row in rows if (row["ts"] or 0) < tso]


def checkpoint_evidence(before: dict[str, Any], rows: CheckpointRows, tso: int) -> CheckpointRows:
    """Per vchannel: its checkpoint ts before and after, the position after, and whether it reached `tso`."""
    return [
        {
            "vchannel": row["vchannel"],
            "collection": row["collection"],
            "pchannel": row["pchannel"],
            "ts_before": before.get(row["vchannel"]),
            "ts_after": row["ts"],
            "time_after": row["time"],
            "position": row["position"],
            "from": row["from"],
            "reached": (row["ts"] or 0) >= tso,
        }
        for row in rows
    ]


def _iso(when: dt.datetime | None) -> str | None:
    return when.isoformat().replace("+00:00", "Z") if when else None


def wait_for_checkpoints(
    options: MigrateOptions, tso: int, timeout: float, on_wait: Callable[[float], None]
) -> tuple[CheckpointRows, float]:
    """Read the checkpoints until every one is at or past `tso` or `timeout` seconds passed."""
    started = time.monotonic()
    while True:
        rows = read_checkpoints(options)
        waited = time.monotonic() - started
        if not checkpoints_before(rows, tso) or waited >= timeout:
            return rows, round(waited, 3)
        on_wait(waited)
        time.sleep(1)


def datetime_to_tso(when: dt.datetime) -> int:
    from mqctl.mq.decode.messages import TSO_LOGICAL_BITS

    return int(when.timestamp() * 1000) << TSO_LOGICAL_BITS
