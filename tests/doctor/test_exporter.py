"""`mqctl exporter` as an operator runs it (a real process): a source that goes down is `mqctl_source_up 0` and the
scrape still answers (the rest through the CLI: tests/cli/exporter/test_exporter.py)."""

from __future__ import annotations

import shutil
import time

import httpx

from tests.helpers.metrics import sample_config, start_exporter, stop, value
from tests.helpers.paths import FIXTURES
from tests.helpers.servers import start_nats


def test_a_source_that_goes_down_is_up_0_and_the_scrape_still_answers(tmp_path):
    store = tmp_path / "store"
    shutil.copytree(FIXTURES / "natsmq" / "store", store)
    server, url = start_nats(tmp_path, store_dir=store)
    config = sample_config(tmp_path / "cfg", "milvus-2.3-standalone-natsmq.yaml")
    proc, metrics = start_exporter("--config", str(config), "--nats", url, "--interval", "0.2", "--timeout", "1")
    try:
        before = httpx.get(metrics, timeout=10).text
        assert value(before, "mqctl_source_up", source="mq") == 1
        server.kill()
        server.wait()
        time.sleep(0.3)
        answer = httpx.get(metrics, timeout=10)
        assert answer.status_code == 200
        after = answer.text
        assert value(after, "mqctl_source_up", source="mq") == 0
        assert value(after, "mqctl_source_up", source="doctor") == 1  # the rest of the examination ran
        assert value(after, "mqctl_doctor_findings", code="DR300", severity="warning") == 1
        assert "mqctl_channel_messages{" not in after  # nothing read is nothing exported, never a 0
        assert value(after, "mqctl_exporter_reads_total") >= 2
    finally:
        server.kill()
        code, _ = stop(proc)
    assert code == 0
