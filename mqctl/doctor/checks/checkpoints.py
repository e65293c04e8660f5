"""Checkpoint checks: what Milvus has not flushed, still in the MQ after its channel checkpoints (`mqctl channels checkpoints`), with the rows at risk."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from mqctl.doctor.checks.examination import Examination
from mqctl.doctor.discovery import Target
from mqctl.doctor.verdict import OK, Check
from mqctl.errors import MqctlError
from mqctl.findings import INFO, WARNING

if TYPE_CHECKING:
    from mqctl.mq.checkpoints import VChannelCheckpoint
    from mqctl.mq.model import MQSource


# --- checkpoints ---------------------------------------------------------------------------------------------
def checkpoint_checks(exam: Examination, source: MQSource, timeout: float) -> None:
    """Every vchannel's checkpoint against the MQ (as `mqctl channels checkpoints`), and the retention window
    against the oldest checkpoint."""
    from mqctl.mq.channel_checkpoints import judge_channel_cp
    from mqctl.mq.checkpoints import EXPIRED
    from mqctl.mq.milvus_meta import MetaReader
    from mqctl.mq.retention import ROCKS_TIME_KEY, retention_against_checkpoints
    from mqctl.mq.retention_model import NATS_KEYS, ConfiguredRetention

    target = exam.target
    if exam.etcd is None:
        severity = WARNING if target.pid is not None or exam.etcd_given else INFO
        why = exam.etcd_error or "no etcd known"
        exam.add(
            "checkpoints",
            "DR401",
            severity,
            f"channel checkpoints not checked: {why}",
            "pass --etcd http://HOST:2379 (the etcd this Milvus uses)",
        )
        return
    configured = ConfiguredRetention(exam.res if target.configs else None)
    meta_path = (exam.res.value("etcd.metaSubPath") if target.configs else None) or "meta"
    try:
        meta = MetaReader(exam.etcd, meta_path).read()  # read once: the retention checks below judge it too
        assessed = judge_channel_cp(
            lambda: meta,
            source,
            watch_seconds=0,
            rocksmq_retention_seconds=configured.get(ROCKS_TIME_KEY).value * 60,
            milvus_uri=target.milvus,
            etcd=exam.etcd.shown,
        )
    except MqctlError as err:
        exam.add("checkpoints", "DR401", WARNING, f"channel checkpoints not checked: {err.message}", err.hint)
        exam.measured.read("etcd", False, err.message)
        return
    exam.measured.checkpoints = assessed
    exam.unflushed = sum(row.lag_messages or 0 for row in assessed.checkpoints)
    exam.unflushed_rows = sum(row.lag_rows or 0 for row in assessed.checkpoints)
    at_risk = _rows_at_risk(target, assessed.checkpoints, timeout)
    for finding in assessed.findings:
        row = next((r for r in assessed.checkpoints if r.vchannel == finding.key), None)
        impact = None
        if row is not None and row.status == EXPIRED:
            lost = f"{row.lost_messages} message(s)" if row.lost_messages is not None else "messages"
            rows = at_risk.get((row.database or "default", row.collection or ""))
            held = (
                f" ({rows} row(s) of {row.database or 'default'}.{row.collection}: what Milvus serves now beyond "
                "its flushed segments, at least)"
                if rows is not None
                else ""
            )
            impact = f"a restart loses the rows in {lost} Milvus had not flushed{held}, without an error"
        exam.checks.append(Check.of("checkpoints", finding, impact))
    if assessed.checkpoints and not assessed.failing:
        exam.add(
            "checkpoints",
            "DR400",
            OK,
            f"{len(assessed.checkpoints)} vchannel(s) checked, none expired or at risk "
            f"({exam.unflushed} message(s) after the checkpoints, {exam.unflushed_rows} inserted row(s), not "
            "flushed yet)",
        )
    if exam.data_mq == "kafka":  # each topic's own retention.ms, as `retention show --kafka --etcd` judges it
        from mqctl import clock
        from mqctl.mq.retention import retention_report, topic_retention_against_checkpoints

        with contextlib.suppress(MqctlError):
            for short_topic in topic_retention_against_checkpoints(
                retention_report(source, configured), meta, clock.now()
            ):
                exam.checks.append(Check.of("checkpoints", short_topic))
        return
    key = NATS_KEYS["max_age"] if exam.data_mq == "natsmq" else ROCKS_TIME_KEY
    with contextlib.suppress(MqctlError):
        short = retention_against_checkpoints(meta, configured.get(key), exam.data_mq or "")
        if short is not None:
            exam.checks.append(Check.of("checkpoints", short))


def _rows_at_risk(target: Target, rows: list[VChannelCheckpoint], timeout: float) -> dict[tuple[str, str], int]:
    """Per collection whose every vchannel's checkpoint expired: the rows a restart loses, at least — what
    Milvus serves now beyond its flushed segments, less the rows still in the MQ after the checkpoints (those
    replay). Asked over gRPC only for such collections; one that is not loaded or does not answer is left out."""
    from mqctl.milvus.client import MilvusTarget, connect, rows_not_flushed_at_least
    from mqctl.mq.checkpoints import EXPIRED

    by_collection: dict[tuple[str, str], list[VChannelCheckpoint]] = {}
    for row in rows:
        if row.collection:
            by_collection.setdefault((row.database or "default", row.collection), []).append(row)
    expired = {key: group for key, group in by_collection.items() if all(r.status == EXPIRED for r in group)}
    if not expired or not target.milvus:
        return {}
    found: dict[tuple[str, str], int] = {}
    for (db, name), group in sorted(expired.items()):
        try:
            client = connect(MilvusTarget(target.milvus), timeout=timeout, db="" if db == "default" else db)
            try:
                replayed = sum(r.lag_rows or 0 for r in group)
                found[(db, name)] = max(rows_not_flushed_at_least(client, name) - replayed, 0)
            finally:
                client.close()
        except Exception:
            continue
    return found
