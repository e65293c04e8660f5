"""The verify step: Milvus runs on the MQ it should, its data is all there, and it consumes the new MQ.

Evidence, strongest first: Milvus's own `try to init mq` log line (milvus internal/util/dependency),
the `jetstream/` folder a natsmq start creates, on Kafka the topics of Milvus's channels appearing on the brokers, the `milvus_runtime_info` metric (2.4+), every
collection's row count equal to the one after FlushAll, and the channel checkpoints moving on.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mqctl.backends import BACKENDS
from mqctl.errors import MqctlError
from mqctl.migrate.checkpoints import (
    CHECKPOINT_ADVANCE_SECONDS,
    checkpoint_evidence,
    checkpoints_before,
    datetime_to_tso,
    wait_for_checkpoints,
)
from mqctl.migrate.context import Context, StepFailed, parse_time, utc_now
from mqctl.migrate.options import MigrateOptions
from mqctl.migrate.record.evidence import (
    CommandEvidence,
    FlushEvidence,
    PreflightEvidence,
    VerifyEvidence,
    WritesEvidence,
)
from mqctl.migrate.record.journal import StepRecord

INIT_MQ = re.compile(r"try to init mq.*\[mqType=([a-z]+)\]")


def step_verify(ctx: Context, record: StepRecord) -> None:
    from mqctl.milvus.client import count_loaded, release, start_loading

    options, journal, expected = ctx.options, ctx.journal, ctx.expected_mq
    evidence = record.of(VerifyEvidence)
    preflight = journal.evidence("preflight", PreflightEvidence)
    start = ctx.record("start").of(CommandEvidence)
    since = parse_time(start.started_at or "") - dt.timedelta(seconds=1)

    def failed(seen: str, hint: str = "run `mqctl migrate rollback` to go back") -> StepFailed:
        return StepFailed("verify", seen, hint, writes_note="Milvus runs in an unverified state: writes stay stopped")

    line = options.log.wait_for(
        lambda text: INIT_MQ.search(text) is not None, offset=start.log_offset or 0, since=since, timeout=60
    )
    init = INIT_MQ.search(line) if line is not None else None
    if line is None or init is None:
        raise failed("no `try to init mq` line in the Milvus log since the start")
    seen_mq = init.group(1)
    evidence.init_mq_line = line.strip()[:300]
    if seen_mq != expected:
        raise failed(f"Milvus started on {seen_mq}, not {expected}: {line.strip()[:200]}")
    if expected == "natsmq":
        store = Path(preflight.store_dir or "")
        if store.is_absolute() and store.parent.exists():
            if not (store / "jetstream").is_dir():
                raise failed(f"no `jetstream` directory under {BACKENDS['natsmq'].store_key} {store}")
            evidence.jetstream_dir = str(store / "jetstream")
        else:
            evidence.jetstream_dir = f"not checked: {store} is not on this host"
    baseline = ctx.record("flush").of(FlushEvidence).counts or preflight.counts or {}
    ctx.report.waiting("loading every collection and counting rows ...")
    waited = utc_now()
    # The runtime-info metric, the checkpoints moving on and the counts are independent: the waits run at once
    # (the metrics page is read and the loads the counts need are asked for while the write probe waits for the
    # deny; loading adds no rows, so only the counting waits for the deny).
    with ctx.client() as client, ThreadPoolExecutor(3) as pool:  # the pool's threads end before the channel
        runtime_info = pool.submit(_runtime_info, options, expected)
        advancing = pool.submit(_checkpoints_advance, ctx, evidence, since)
        loading = pool.submit(start_loading, client)
        evidence.writes_after_start = _denied_again(ctx)
        evidence.runtime_info = runtime_info.result()
        if evidence.runtime_info.startswith("disagrees"):
            raise failed(f"the runtime-info metric {evidence.runtime_info}")
        counting = utc_now()
        counts = count_loaded(client, loading.result(), options.verify_timeout)
        evidence.count_seconds = round((utc_now() - counting).total_seconds(), 3)
        was_loaded = preflight.counts or {}
        release(client, [n for n in counts if not was_loaded.get(n, {}).get("was_loaded", True)])
        advancing.result()
    if expected == "kafka":
        _kafka_topics(ctx, evidence, failed)
    evidence.milvus_wait_seconds = round((utc_now() - waited).total_seconds(), 3)
    evidence.counts = counts
    mismatched = {
        n: (baseline[n]["rows"], counts.get(n, {}).get("rows"))
        for n in baseline
        if counts.get(n, {}).get("rows") != baseline[n]["rows"]
    }
    if mismatched:
        grew = all((after or 0) > (before or 0) for before, after in mismatched.values())
        raise failed(
            "row counts differ from before the switch: "
            + ", ".join(f"{n} {before} -> {after}" for n, (before, after) in mismatched.items())
            + (
                " (more rows: a writer got through after the restart, before Milvus applied forceDeny again; "
                "its quota center needs a round once every old session is gone)"
                if grew
                else ""
            )
        )


def _kafka_topics(ctx: Context, evidence: VerifyEvidence, failed: Callable[[str], StepFailed]) -> None:
    """The topic of every vchannel's physical channel (`by-dev-rootcoord-dml_0` of `by-dev-rootcoord-dml_0_4461v0`)
    on the brokers: Milvus created it on Kafka by consuming or producing (every collection is loaded by now)."""
    from mqctl.migrate.context import resolution
    from mqctl.migrate.kafka_target import kafka_access, wait_for_topics

    rows = ctx.record("flush").of(FlushEvidence).checkpoints or []
    names = sorted({re.sub(r"_\d+v\d+$", "", row["vchannel"]) for row in rows})
    version = ctx.journal.evidence("preflight", PreflightEvidence).milvus_version
    try:
        access = kafka_access(ctx.options, resolution(ctx.options, version))
        ctx.report.waiting(f"waiting for Milvus's topics on Kafka at {access.bootstrap} ...")
        seen, evidence.kafka_topics_seconds = wait_for_topics(access, names)
    except MqctlError as err:
        raise failed(f"Kafka could not be asked for Milvus's topics: {err.message}") from None
    evidence.kafka_topics = seen
    if len(seen) < len(names):
        missing = ", ".join(sorted(set(names) - set(seen)))
        raise failed(f"Milvus's topics {missing} did not appear on Kafka at {access.bootstrap}")


def _denied_again(ctx: Context) -> str:
    """Wait until the restarted Milvus denies writes again, so that the rows are counted while no writer can
    add any: a proxy starts without forceDeny and applies it at the quota center's first round (seen on
    2.3.5). Waits only where mqctl denied writes and its write probe answered then; up to --confirm-timeout.
    What was seen goes to the journal; counting goes on either way (a writer that got through shows as a
    count that differs)."""
    from mqctl.migrate.writes import wait_denied

    denied = ctx.record("stop-writes").of(WritesEvidence)
    if denied.old is None or not denied.effect:
        return f"not awaited: {'mqctl did not deny writes' if denied.old is None else 'no write probe answered'}"
    ctx.report.waiting("waiting for Milvus to deny writes again after its start ...")
    return wait_denied(ctx)


def _checkpoints_advance(ctx: Context, evidence: VerifyEvidence, since: dt.datetime) -> None:
    """Evidence that Milvus consumes the new MQ: every vchannel's checkpoint moves past the start. A vchannel
    that does not within CHECKPOINT_ADVANCE_SECONDS is a warning, not a failure: Milvus updates checkpoints
    from its datanodes' time ticks on its own schedule and documents no bound."""
    flushed = ctx.record("flush").of(FlushEvidence)
    if flushed.checkpoints is None and flushed.checkpoints_unread is not None:
        evidence.checkpoints_unread = flushed.checkpoints_unread
        return
    start_tso = datetime_to_tso(since)
    try:
        rows, seconds = wait_for_checkpoints(
            ctx.options,
            start_tso,
            CHECKPOINT_ADVANCE_SECONDS,
            lambda s: ctx.report.waiting(f"channel checkpoints: {s:.0f} s ..."),
        )
    except MqctlError as err:
        evidence.checkpoints_unread = err.message
        return
    before = {row["vchannel"]: row.get("ts_after") for row in flushed.checkpoints or []}
    evidence.checkpoints = checkpoint_evidence(before, rows, start_tso)
    evidence.checkpoint_wait_seconds = seconds
    evidence.checkpoint_warnings = [
        f"{vchannel}: the channel checkpoint did not move past the start on {ctx.expected_mq} within "
        f"{CHECKPOINT_ADVANCE_SECONDS:.0f} s"
        for vchannel in checkpoints_before(rows, start_tso)
    ]


def _runtime_info(options: MigrateOptions, expected: str) -> str:
    """`milvus_runtime_info{mq=...}` on /metrics (2.4+); 2.3 does not expose it."""
    if not options.health_url:
        return "not checked: no --health-url"
    import httpx

    from mqctl import http

    try:
        text = http.request("GET", options.health_url.rsplit("/", 1)[0] + "/metrics", timeout=5).text
    except (httpx.HTTPError, http.DeadlineExceeded, http.BodyTooLarge) as err:
        return f"not checked: {err}"
    match = re.search(r'milvus_runtime_info\{[^}]*mq="([a-z]+)"', text)
    if not match:
        return "not exposed by this Milvus"
    return f"agrees: mq={match.group(1)}" if match.group(1) == expected else f"disagrees: mq={match.group(1)}"
