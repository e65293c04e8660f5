"""Stopping and resuming writes: `quotaAndLimits.limitWriting.forceDeny`, set where Milvus re-reads it
(the live milvus.yaml, or etcd where Milvus's etcd config source is active), confirmed by Milvus's own
`receive update event` log line and by a zero-row write probe (refused, or let through to the insert task)
rather than assumed."""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable
from typing import Any

from mqctl.errors import MqctlError
from mqctl.migrate.context import Context, StepFailed, milvus_up, parse_time, utc_now
from mqctl.migrate.record.evidence import PreflightEvidence, WritesEvidence
from mqctl.migrate.record.journal import PENDING, StepRecord, now
from mqctl.milvus.client import WRITES_DENIED, WRITES_OPEN, WRITES_UNKNOWN

FORCE_DENY = "quotaAndLimits.limitWriting.forceDeny"
FORCE_DENY_ETCD = "quotaAndLimits/limitWriting/forceDeny"
# Milvus 2.3-2.5 re-read their config sources (the yaml files; etcd's `<root>/config/` where that source is active)
# on a ticker started with the process, every 5 s (pkg/config/refresher.go refreshPeriodically; the interval that
# pkg/util/paramtable/base_table.go initConfigsFromLocal / initConfigsFromRemote pass as RefreshInterval).
REFRESH_SECONDS = 5.0
REFRESH_STARTED = "start refreshing configurations"  # refresher.go, logged right after the ticker is made
DENY_LEAD_SECONDS = 0.4  # stop-writes' edit is written this long before the re-read it aims at
ANCHOR_MAX_AGE = 3600.0  # older anchors are not trusted: the ticker runs on a clock the log's times may drift from
PROBE_INTERVAL = 0.1  # seconds between zero-row inserts while waiting for forceDeny to take effect (or end)
EVENT_FIELD = r'\\?"{name}\\?":\\?"([^"\\]*)\\?"'  # a field of the event's JSON, quotes escaped or not


def update_event(value: str | None) -> Callable[[str], bool]:
    """Matches Milvus's `"receive update event"` log line for forceDeny set to `value`, or for its
    removal when `value` is None (a DELETE event, which carries the old value).

    Milvus 2.3-2.5 (config/manager.go) logs the key as its source spells it: the file source
    `quotaandlimits.limitwriting.forcedeny`; the etcd source the etcd path
    `quotaAndLimits/limitWriting/forceDeny` (CREATE, UPDATE or DELETE), then the same change once
    more under the normalised key `quotaandlimitslimitwritingforcedeny`. Keys are compared the way
    Milvus normalises them (lower case, without `/ _ .`), so every form matches.
    """
    from mqctl.config.known_keys import normalize_key

    key_field, type_field, value_field = (
        re.compile(EVENT_FIELD.format(name=n), re.IGNORECASE) for n in ("Key", "EventType", "Value")
    )
    wanted_key = normalize_key(FORCE_DENY)

    def matches(line: str) -> bool:
        if "receive update event" not in line:
            return False
        key, kind, logged = key_field.search(line), type_field.search(line), value_field.search(line)
        if key is None or kind is None or normalize_key(key.group(1)) != wanted_key:
            return False
        if value is None:
            return kind.group(1).upper() == "DELETE"
        return kind.group(1).upper() != "DELETE" and logged is not None and logged.group(1).lower() == value.lower()

    return matches


def apply_force_deny(
    ctx: Context, record: StepRecord, restore: dict[str, str | None] | None, *, wait: bool = True
) -> None:
    """Deny writes (`restore` None: the old values are journaled first) or put the journaled values back,
    where Milvus re-reads them (etcd or the live file), then wait for Milvus's update event (unless not
    `wait`: no event is to be expected when Milvus never applied the deny).

    The old value is journaled before the edit and the edit is re-applied on resume, so a crash
    between the two neither loses the old value nor skips the edit.
    """
    from mqctl.config.edit.set_unset import get_key, set_key, unset_key
    from mqctl.config.known_keys import normalize_key

    options = ctx.options
    evidence = record.of(WritesEvidence)
    preflight = ctx.journal.evidence("preflight", PreflightEvidence)
    if evidence.mechanism is None:
        evidence.mechanism = preflight.stop_writes
    mechanism = evidence.mechanism or "file"
    etcd = options.etcd_client() if mechanism == "etcd" else None

    def current() -> str | None:
        if etcd:
            found = etcd.read().get(normalize_key(FORCE_DENY))
            return found.value if found else None
        value: str | None = get_key(options.live_config, FORCE_DENY)[0]
        return value

    value = "true" if restore is None else next(iter(restore.values()))
    if evidence.edited_at is None:
        now_value = current()
        if restore is None and evidence.old is None:
            evidence.old = {mechanism: now_value}
        # Milvus logs an event only for a real change; whether there is one is known before the edit only
        evidence.log_offset, evidence.edited_at = options.log.mark(), now()
        evidence.needs_event = (now_value or "").lower() != (value or "").lower()
        ctx.save_journal()
    if etcd and value is None:
        etcd.delete(FORCE_DENY_ETCD)
    elif etcd and value is not None:
        etcd.put(FORCE_DENY_ETCD, value)
    else:
        result = (
            unset_key(options.live_config, FORCE_DENY)
            if value is None
            else set_key(options.live_config, FORCE_DENY, value)
        )
        if result.changed:
            evidence.diff, evidence.backup = result.diff, str(result.backup)
    effective = value or "false (Milvus's default)"
    if not wait:
        evidence.confirmed = f"forceDeny put back to {effective}; Milvus never confirmed the deny, so no event awaited"
        return
    if evidence.needs_event is False:
        evidence.confirmed = f"forceDeny was already {effective}: nothing for Milvus to apply"
        return
    if not milvus_up(options):
        evidence.confirmed = "Milvus is not running: it reads the value when it starts"
        return
    ctx.report.waiting(f"waiting for Milvus to apply forceDeny={effective} ...")
    started = utc_now()
    expected = WRITES_DENIED if restore is None else WRITES_OPEN
    line, effect = _wait_for_effect(
        ctx,
        update_event(value),
        evidence,
        expected,
        2 * (preflight.quota_interval_seconds or 3),
    )
    if line is None and effect is None:
        skip = ", or stop writers yourself and pass --writes-stopped" if restore is None else ""
        raise StepFailed(
            record.name,
            f"Milvus did not log the forceDeny={effective} update event within "
            f"{options.confirm_timeout:.0f} s ({mechanism})",
            "check that Milvus reads this config (or that its etcd config source is active); "
            f"run `mqctl migrate resume` to wait again{skip}",
        )
    evidence.confirmed = line.strip()[:400] if line else f"write probe: {effect}"
    evidence.effect = effect
    evidence.milvus_wait_seconds = round((utc_now() - started).total_seconds(), 3)


def _wait_for_effect(
    ctx: Context, event: Callable[[str], bool], evidence: WritesEvidence, expected: str, rounds: float
) -> tuple[str | None, str | None]:
    """Wait until forceDeny has taken effect: (Milvus's update event line or None, what the write probe showed
    or None).

    Done as soon as a zero-row insert gets the answer `expected` (refused with ForceDeny, or let through to
    the insert task): that is the effect itself. Without a probe that answers so (no collection, another
    Milvus version), done `rounds` seconds after the update event: proxies pick up the new rate limits at the
    quota center's next collection round, and two rounds are waited for. (None, None): neither within
    --confirm-timeout."""
    options = ctx.options
    since = parse_time(evidence.edited_at or "") - dt.timedelta(seconds=1)
    probe = _WriteProbe(ctx)
    deadline = time.monotonic() + options.confirm_timeout
    event_seen: float | None = None
    line: str | None = None
    began = time.monotonic()

    def last_event() -> str | None:
        found = [x for x in options.log.lines_since(evidence.log_offset or 0, since) if event(x)]
        return found[-1] if found else None

    try:
        while True:
            state = probe.state()
            if line is None:
                line = last_event()
                event_seen = time.monotonic() if line is not None else None
            if state == expected:
                if line is None:  # the event comes before the effect: it is in the log by now
                    line = last_event()
                how = "refused with ForceDeny" if expected == WRITES_DENIED else "let through by the rate limiter"
                return line, f"a zero-row insert into {probe.target} was {how} {time.monotonic() - began:.1f} s in"
            if event_seen is not None and (state == WRITES_UNKNOWN or time.monotonic() - event_seen >= rounds):
                if state == WRITES_UNKNOWN:
                    time.sleep(max(0.0, rounds - (time.monotonic() - event_seen)))
                return line, None
            if time.monotonic() >= deadline:
                return line, None
            time.sleep(PROBE_INTERVAL)
    finally:
        probe.close()


def next_refresh(options: Any, mechanism: str) -> tuple[float, str] | None:
    """(seconds until the running Milvus's next re-read of the config source `mechanism` (file or etcd), the log
    line that was reckoned from), or None when its log does not tell.

    The re-reads are every REFRESH_SECONDS from the moment the source's refresher started: its
    `start refreshing configurations [source=FileSource|EtcdSource]` line (the newest: the running Milvus's),
    or a later `receive update event` of that source (written at a re-read). Only from the log file
    (--log-file), and only when that line is under ANCHOR_MAX_AGE old."""
    from mqctl.host.hooks import log_time

    if not options.log.file:
        return None
    source = "EtcdSource" if mechanism == "etcd" else "FileSource"
    oldest = utc_now() - dt.timedelta(seconds=ANCHOR_MAX_AGE)
    anchors = [
        line
        for line in options.log.lines_since(0, oldest)
        if source in line and (REFRESH_STARTED in line or "receive update event" in line)
    ]
    starts = [n for n, line in enumerate(anchors) if REFRESH_STARTED in line]
    if not starts:  # the start of the running Milvus is not in the last hour: its ticker's phase is unknown
        return None
    anchor = anchors[-1]
    stamp = log_time(anchor)
    if stamp is None:
        return None
    elapsed = (utc_now() - stamp).total_seconds()
    if elapsed < 0:
        return None
    return REFRESH_SECONDS - elapsed % REFRESH_SECONDS, anchor.strip()[:200]


def wait_denied(ctx: Context) -> str:
    """Ask the write probe until writes are denied or --confirm-timeout passes; says what it saw."""
    probe = _WriteProbe(ctx)
    began = time.monotonic()
    state = WRITES_UNKNOWN
    try:
        while time.monotonic() - began < ctx.options.confirm_timeout:
            state = probe.state()
            if state == WRITES_DENIED:
                return f"denied ({time.monotonic() - began:.1f} s in)"
            time.sleep(PROBE_INTERVAL)
    finally:
        probe.close()
    return f"not denied within {ctx.options.confirm_timeout:.0f} s (the write probe answered {state})"


class _WriteProbe:
    """A zero-row insert into the first collection preflight counted (`milvus_client.write_probe`);
    `unknown` when there is none or Milvus cannot be asked."""

    def __init__(self, ctx: Context):
        counts = ctx.journal.evidence("preflight", PreflightEvidence).counts or {}
        self.target = next(iter(sorted(counts)), "")
        self.ctx = ctx
        self.client: Any = None

    def state(self) -> str:
        from mqctl.milvus.client import write_probe
        from mqctl.milvus.rpc import MilvusGrpc

        if not self.target or self.ctx.options.no_write_probe:
            return WRITES_UNKNOWN
        db, name = self.target.split("/", 1)
        try:
            self.client = self.client or MilvusGrpc.of(self.ctx.options.milvus, timeout=5)
            return write_probe(self.client, name, "" if db == "default" else db)
        except Exception:  # Milvus busy or restarting: not an answer, ask again
            self.close()
            return WRITES_UNKNOWN

    def close(self) -> None:
        if self.client is not None:
            try:
                self.client.close()
            except Exception:
                pass
            self.client = None


def step_stop_writes(ctx: Context, record: StepRecord) -> None:
    if ctx.options.writes_stopped:
        record.of(WritesEvidence).confirmed = "operator stopped writers (--writes-stopped)"
        return
    apply_force_deny(ctx, record, None)


def step_resume_writes(ctx: Context, record: StepRecord) -> None:
    old = ctx.record("stop-writes").of(WritesEvidence).old
    if old is None:  # what mqctl denied it puts back, also when resumed with --writes-stopped
        record.of(WritesEvidence).confirmed = "writes were not stopped by mqctl"
        return
    apply_force_deny(ctx, record, old)


def plan_resume_edit(ctx: Context) -> None:
    """resume-writes' edit of the live file, planned ahead (nothing written), so that its parses are ready
    when verify is done: verify starts it while it waits for Milvus."""
    from mqctl.config.edit.set_unset import plan_set, plan_unset

    denied = ctx.record("stop-writes").of(WritesEvidence)
    if denied.mechanism != "file" or not denied.old:
        return
    value = next(iter(denied.old.values()))
    if value is None:
        plan_unset(ctx.options.live_config, FORCE_DENY)
    else:
        plan_set(ctx.options.live_config, FORCE_DENY, value)


def reopen_writes(ctx: Context, failed: StepFailed) -> StepFailed:
    """After a failure before the switch, a Milvus still running as before gets its writes back: they
    stay denied only when its state is unknown. stop-writes and flush go back to pending (the journaled
    old value kept), so `resume` denies writes and flushes again before it goes on.

    When stop-writes itself failed, Milvus never logged the deny (or mqctl could not see it), so no
    event can be expected for putting the old value back: it is put back without waiting."""
    stop = ctx.journal.step("stop-writes")
    denied = stop.of(WritesEvidence)
    if denied.old is None:  # mqctl did not deny writes
        return failed
    if not milvus_up(ctx.options):
        return failed.noted("Milvus does not answer, its state is unknown: writes stay denied")
    deny_seen = failed.step != "stop-writes"
    old = denied.old
    stop.status = PENDING
    stop.evidence = WritesEvidence(old=old, mechanism=denied.mechanism, reopened_after=failed.step)
    ctx.journal.step("flush").reset()  # what is written from now on must be flushed again before the stop
    ctx.save_journal()
    next_action = failed.next_action + "; resume denies writes again first"
    try:
        apply_force_deny(ctx, StepRecord("resume-writes"), old, wait=deny_seen)
    except MqctlError as err:  # the edit may have happened: resume denies writes again either way
        return failed.noted(
            f"putting forceDeny back was not confirmed ({err.message}): writes may be open", next_action
        )
    if not deny_seen:
        value = next(iter(old.values()))
        put_back = f"put back to {value}" if value is not None else "removed again"
        return failed.noted(
            f"Milvus still runs on its old MQ; forceDeny was {put_back}, so writes reopen as "
            "soon as Milvus reads it (no event awaited: none was seen for the deny)",
            next_action,
        )
    return failed.noted("Milvus still runs on its old MQ, so writes were resumed", next_action)
