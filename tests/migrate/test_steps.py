"""Migration steps on a real etcd: clearing an etcd override and putting it back on rollback."""

from __future__ import annotations

import pytest

from mqctl.migrate.record.journal import Journal


def _options(etcd_url: str, root: str, tmp_path):
    from mqctl.migrate.options import MigrateOptions
    from mqctl.milvus.client import MilvusTarget

    config = tmp_path / "milvus.yaml"
    config.write_text("mq:\n  type: rocksmq\n")
    return MigrateOptions(
        configs=[str(config)], to="natsmq", milvus=MilvusTarget("http://127.0.0.1:1"), etcd=etcd_url, etcd_root=root
    )


@pytest.mark.etcd
def test_clear_etcd_override_deletes_the_spelling_found_and_rollback_puts_it_back(etcd_url, tmp_path):
    """`mqtype` overrides mq.type as `mq/type` does; the switch once deleted `mq/type` whatever was found."""
    import dataclasses

    from mqctl.config.resolve.sources import EtcdConfig
    from mqctl.migrate.context import Context, resolution
    from mqctl.migrate.preflight import PreflightResult, _override_findings
    from mqctl.migrate.record.evidence import PreflightEvidence, SwitchEvidence
    from mqctl.migrate.record.journal import StepRecord
    from mqctl.migrate.steps import step_restore_config, step_switch
    from tests.helpers.milvus_meta import put

    put(etcd_url, "spell/config/mqtype", b"rocksmq")
    put(etcd_url, "spell/config/mq/typeface", b"kept")  # only starts like mq.type
    options = dataclasses.replace(_options(etcd_url, "spell", tmp_path), clear_etcd_override=True)
    journal = Journal.new(tmp_path / "j.json", "rocksmq", "natsmq", options.journaled())
    seen = journal.evidence("preflight", PreflightEvidence)
    _override_findings(options, resolution(options), PreflightResult(evidence=seen))
    assert (seen.etcd_mq_type, seen.etcd_mq_type_keys) == ("rocksmq", ["spell/config/mqtype"])

    ctx = Context(journal, options)
    step_switch(ctx, journal.step("switch"))
    etcd = EtcdConfig(etcd_url, root="spell")
    assert dict(etcd.get_prefix(etcd.prefix)) == {"spell/config/mq/typeface": b"kept"}
    assert resolution(options).origin("mq.type").source != "etcd"
    assert journal.evidence("switch", SwitchEvidence).etcd_cleared == {
        "key": "mqtype",
        "old": "rocksmq",
        "keys": [{"key": "mqtype", "old": "rocksmq"}],
    }
    step_restore_config(ctx, StepRecord("restore-config"))
    assert dict(etcd.get_prefix(etcd.prefix))["spell/config/mqtype"] == b"rocksmq"
