"""Channel checkpoints against the FlushAll timestamp: evidence, and the bounded wait on a real etcd (the plan
through the CLI: tests/cli/migrate/test_checkpoints.py)."""

from __future__ import annotations

import pytest

from tests.helpers.milvus_meta import write_collection_checkpoints

# --- channel checkpoints against the FlushAll timestamp (a real etcd with hand-encoded Milvus meta) ---------
FLUSH_TS = 463_000_000_000_000_000


def _row(vchannel: str, ts: int | None) -> dict:
    return {
        "vchannel": vchannel,
        "collection": "default/c",
        "pchannel": "by-dev-rootcoord-dml_0",
        "ts": ts,
        "time": None,
        "position": 7,
        "from": "channel-cp",
    }


def test_a_checkpoint_at_or_past_the_flush_ts_is_done_one_before_it_or_missing_is_not():
    from mqctl.migrate.checkpoints import checkpoint_evidence, checkpoints_before

    rows = [_row("at", FLUSH_TS), _row("past", FLUSH_TS + 1), _row("behind", FLUSH_TS - 1), _row("none", None)]
    assert checkpoints_before(rows, FLUSH_TS) == ["behind", "none"]
    evidence = checkpoint_evidence({"at": FLUSH_TS - 5}, rows, FLUSH_TS)
    assert [(e["vchannel"], e["ts_before"], e["ts_after"], e["reached"]) for e in evidence] == [
        ("at", FLUSH_TS - 5, FLUSH_TS, True),
        ("past", None, FLUSH_TS + 1, True),
        ("behind", None, FLUSH_TS - 1, False),
        ("none", None, None, False),
    ]
    assert all(e["position"] == 7 and e["pchannel"] == "by-dev-rootcoord-dml_0" for e in evidence)


def _options(etcd_url: str, root: str, tmp_path):
    from mqctl.migrate.options import MigrateOptions
    from mqctl.milvus.client import MilvusTarget

    config = tmp_path / "milvus.yaml"
    config.write_text("mq:\n  type: rocksmq\n")
    return MigrateOptions(
        configs=[str(config)], to="natsmq", milvus=MilvusTarget("http://127.0.0.1:1"), etcd=etcd_url, etcd_root=root
    )


@pytest.mark.etcd
def test_the_wait_ends_when_every_checkpoint_reaches_the_flush_ts(etcd_url, tmp_path):
    import threading

    from mqctl.migrate.checkpoints import checkpoints_before, wait_for_checkpoints
    from tests.helpers.milvus_meta import position, put

    write_collection_checkpoints(etcd_url, "flushwait", {"v_0": FLUSH_TS, "v_1": FLUSH_TS - 100})
    options = _options(etcd_url, "flushwait", tmp_path)
    later = threading.Timer(
        1.5, put, (etcd_url, "flushwait/meta/datacoord-meta/channel-cp/v_1", position("v_1", 40, FLUSH_TS + 3))
    )
    later.start()
    rows, waited = wait_for_checkpoints(options, FLUSH_TS, 30, lambda s: None)
    later.join()
    assert checkpoints_before(rows, FLUSH_TS) == [] and 1.0 <= waited < 30
    assert {r["vchannel"]: (r["ts"], r["position"], r["collection"]) for r in rows} == {
        "v_0": (FLUSH_TS, 40, "default/c"),
        "v_1": (FLUSH_TS + 3, 40, "default/c"),
    }


@pytest.mark.etcd
def test_the_wait_is_bounded_and_names_the_vchannel_behind(etcd_url, tmp_path):
    from mqctl.migrate.checkpoints import checkpoints_before, wait_for_checkpoints

    write_collection_checkpoints(etcd_url, "stuck", {"v_0": FLUSH_TS, "v_1": FLUSH_TS - 100})
    rows, waited = wait_for_checkpoints(_options(etcd_url, "stuck", tmp_path), FLUSH_TS, 2, lambda s: None)
    assert checkpoints_before(rows, FLUSH_TS) == ["v_1"] and 2 <= waited < 5
