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
