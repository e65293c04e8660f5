"""Stopping writes: the config update event Milvus logs is matched in every spelling it uses."""

from __future__ import annotations

from mqctl.migrate.writes import update_event

EVENT = (
    '[2026/11/22 05:07:12.265 +00:00] [INFO] [config/manager.go:315] ["receive update event"] '
    '[event="{\\"EventSource\\":\\"FileSource\\",\\"EventType\\":\\"UPDATE\\",\\"Key\\":'
    '\\"quotaandlimits.limitwriting.forcedeny\\",\\"Value\\":\\"true\\",\\"HasUpdated\\":false}"]'
)
# Seen on Milvus 2.3.5 with an external etcd: the etcd source logs the etcd path, then the normalised key.
ETCD_CREATE = (
    '[2026/11/23 13:08:55.900 +00:00] [INFO] [config/manager.go:315] ["receive update event"] '
    '[event="{\\"EventSource\\":\\"EtcdSource\\",\\"EventType\\":\\"CREATE\\",\\"Key\\":'
    '\\"quotaAndLimits/limitWriting/forceDeny\\",\\"Value\\":\\"true\\",\\"HasUpdated\\":false}"]'
)
ETCD_NORMALISED = (
    '[2026/11/23 13:08:55.900 +00:00] [INFO] [config/manager.go:315] ["receive update event"] '
    '[event="{\\"EventSource\\":\\"EtcdSource\\",\\"EventType\\":\\"UPDATE\\",\\"Key\\":'
    '\\"quotaandlimitslimitwritingforcedeny\\",\\"Value\\":\\"true\\",\\"HasUpdated\\":false}"]'
)
ETCD_DELETE = (
    '[2026/11/23 13:09:05.900 +00:00] [INFO] [config/manager.go:315] ["receive update event"] '
    '[event="{\\"EventSource\\":\\"EtcdSource\\",\\"EventType\\":\\"DELETE\\",\\"Key\\":'
    '\\"quotaAndLimits/limitWriting/forceDeny\\",\\"Value\\":\\"true\\",\\"HasUpdated\\":false}"]'
)


def test_update_event_matches_the_value_milvus_logged():
    assert update_event("true")(EVENT)
    assert not update_event("false")(EVENT)
    assert not update_event("true")(EVENT.replace("forcedeny", "forcedenyreading"))
    removed = EVENT.replace("UPDATE", "DELETE")  # a removed key is logged with its old value
    assert update_event(None)(removed) and not update_event(None)(EVENT) and not update_event("false")(removed)


def test_update_event_matches_the_etcd_source_with_slashes():
    assert update_event("true")(ETCD_CREATE)
    assert not update_event("false")(ETCD_CREATE) and not update_event(None)(ETCD_CREATE)


def test_update_event_matches_the_normalised_key():
    assert update_event("true")(ETCD_NORMALISED)
    assert not update_event("true")(ETCD_NORMALISED.replace("forcedeny", "forcedenyreading"))
    assert not update_event("true")(ETCD_NORMALISED.replace("limitwriting", "limitreading"))


def test_update_event_matches_the_etcd_delete_and_never_takes_it_for_a_value():
    assert update_event(None)(ETCD_DELETE)
    assert not update_event("true")(ETCD_DELETE)  # a DELETE carries the old value: not a deny
    assert update_event(None)(ETCD_NORMALISED.replace("UPDATE", "DELETE"))


def test_without_a_write_probe_the_deny_is_confirmed_by_the_event_and_the_quota_rounds(tmp_path):
    """A Milvus whose write probe cannot answer (here: no collection to ask) is waited for the old way: the
    update event, then the quota rounds; no event within --confirm-timeout is (None, None)."""
    import datetime as dt
    import time

    from mqctl.migrate.context import Context
    from mqctl.migrate.options import MigrateOptions
    from mqctl.migrate.record.evidence import WritesEvidence
    from mqctl.migrate.record.journal import Journal, now
    from mqctl.migrate.writes import _wait_for_effect
    from mqctl.milvus.client import WRITES_DENIED, MilvusTarget

    log = tmp_path / "milvus.log"
    log.write_text("")
    options = MigrateOptions(
        configs=[str(tmp_path / "milvus.yaml")],
        to="natsmq",
        milvus=MilvusTarget("http://127.0.0.1:1"),
        log_file=str(log),
        confirm_timeout=1.0,
    )
    ctx = Context(Journal.new(tmp_path / "j.json", "rocksmq", "natsmq", options.journaled()), options)
    evidence = WritesEvidence(log_offset=0, edited_at=now())
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y/%m/%d %H:%M:%S.%f")[:-3]
    log.write_text(EVENT.replace("2026/11/22 05:07:12.265", stamp) + "\n")
    began = time.monotonic()
    line, effect = _wait_for_effect(ctx, update_event("true"), evidence, WRITES_DENIED, 0.5)
    assert line is not None and "receive update event" in line and effect is None
    assert 0.5 <= time.monotonic() - began < 1.0  # the rounds after the event, not the whole timeout
    log.write_text("")
    assert _wait_for_effect(ctx, update_event("true"), evidence, WRITES_DENIED, 0.5) == (None, None)


def test_the_next_config_re_read_is_reckoned_from_the_running_milvus_s_refresher(tmp_path):
    """Milvus re-reads its config every 5 s from the moment its refresher started (seen on 2.3.5: the start line
    at 04:11:19.930, an update event at 04:11:54.933, 7 re-reads later): the newest anchor of the source that
    holds forceDeny gives the time to the next re-read; no start line in the last hour gives None."""
    import datetime as dt

    from mqctl.migrate.options import MigrateOptions
    from mqctl.migrate.writes import next_refresh
    from mqctl.milvus.client import MilvusTarget

    def stamp(seconds_ago: float) -> str:
        at = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=seconds_ago)
        return at.strftime("[%Y/%m/%d %H:%M:%S.%f")[:-3] + " +00:00]"

    def started(seconds_ago: float, source: str = "FileSource") -> str:
        return f'{stamp(seconds_ago)} [INFO] [config/refresher.go:66] ["start refreshing configurations"] [source={source}]'

    log = tmp_path / "milvus.log"
    options = MigrateOptions(
        configs=[str(tmp_path / "milvus.yaml")],
        to="natsmq",
        milvus=MilvusTarget("http://127.0.0.1:1"),
        log_file=str(log),
    )
    log.write_text(f"{started(7200)}\n{started(12.3)}\n")  # an older Milvus, then the running one
    found = next_refresh(options, "file")
    assert found is not None and 2.5 < found[0] < 2.8 and "source=FileSource" in found[1]
    event = EVENT.replace("[2026/11/22 05:07:12.265 +00:00]", stamp(1.1))  # a re-read 1.1 s ago, off the old phase
    log.write_text(f"{started(12.3)}\n{event}\n")
    found = next_refresh(options, "file")
    assert found is not None and 3.8 < found[0] < 4.0 and "receive update event" in found[1]
    assert next_refresh(options, "etcd") is None  # no EtcdSource refresher in this log
    log.write_text(f"{started(5000)}\n{event}\n")  # the running Milvus started over an hour ago
    assert next_refresh(options, "file") is None
    assert next_refresh(MigrateOptions(configs=[], to="natsmq", milvus=MilvusTarget("x:1")), "file") is None
