"""`mqctl channels checkpoints` on Woodpecker's meta under the legacy top-level `woodpecker/` prefix (its own etcd:
the prefix is global to an etcd): a placeholder quorum next to real ones is flagged. Values from
tests/helpers/streaming_meta.py (field numbers, not mqctl's decoder); the reader: tests/mq/woodpecker/test_meta.py."""

from __future__ import annotations

from tests.helpers import streaming_meta as enc
from tests.helpers.cli import run_cli

NOW, PCHANNEL = enc.LEGACY_NOW, enc.LEGACY_PCHANNEL
T = NOW.timestamp()


def test_a_placeholder_quorum_next_to_real_ones_is_flagged_through_the_cli(legacy_woodpecker):
    result = run_cli(
        "channels", "checkpoints", "--etcd", legacy_woodpecker, "--json", env={"MQCTL_NOW": NOW.isoformat()}
    )
    assert result.code == 1, result.stderr + result.stdout
    report = result.json()
    assert report["woodpecker_prefix"] == "woodpecker"
    row = report["pchannels"][0]
    assert (row["pchannel"], row["log_id"], row["truncated_to"], row["checkpoint"]) == (PCHANNEL, 5, "2/10", "3/0")
    assert row["untruncated_before_checkpoint"] == 0  # segment 2 is the truncation point itself
    findings = [f for f in report["findings"] if f["severity"] != "info"]
    assert [f["code"] for f in findings] == ["CP112"]
    assert "3 other segment(s) of this log name a real quorum" in findings[0]["message"]
