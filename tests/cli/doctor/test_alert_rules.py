"""The shipped alert rules and dashboard (sample-configs/monitoring/): promtool accepts the rules and their unit
tests pass, every metric they name is one the exporter really serves, and a real Prometheus scraping a real
exporter fires the expired-checkpoint alert once natsmq retention passes an unflushed checkpoint."""

from __future__ import annotations

import json
import re
import shutil

import httpx
import pytest

from tests.helpers.metrics import (
    firing,
    instant,
    running_prometheus,
    sample_config,
    start_exporter,
    stop,
    until,
    value,
)
from tests.helpers.milvus_meta import collection_info, position, put
from tests.helpers.natsmq import max_age_keeping, purge_stream
from tests.helpers.paths import FIXTURES, SAMPLES
from tests.helpers.servers import start_nats

MONITORING = SAMPLES / "monitoring"


RULES = MONITORING / "mqctl-alerts.yml"


DASHBOARD = MONITORING / "mqctl-dashboard.json"


def test_every_metric_the_rules_and_dashboard_name_is_one_the_exporter_serves(tmp_path, cli):
    served = cli(
        "doctor", "--config", str(sample_config(tmp_path)), "--rocksmq", str(FIXTURES / "rocksmq" / "rdb_data"),
        "--format", "prometheus",
    ).stdout  # fmt: skip
    families = set(re.findall(r"^# TYPE (\w+) ", served, re.M))
    families |= {"mqctl_exporter_reads_total", "mqctl_exporter_read_failures_total", "mqctl_exporter_cache_age_seconds"}
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    named = set(re.findall(r"\bmqctl_\w+", RULES.read_text() + "\n".join(exprs)))
    assert named and named <= families, named - families
    assert {"mqctl_retention_headroom_seconds", "mqctl_woodpecker_truncation_lag_seconds"} <= named
    for code in re.findall(r"doctor_code: (\w+)", RULES.read_text()):
        assert code in (SAMPLES.parent / "docs" / "doctor.md").read_text(), code


@pytest.mark.etcd
def test_a_real_prometheus_fires_the_expired_checkpoint_alert_when_retention_passes_it(tmp_path, cli, etcd_url):
    store = tmp_path / "store"
    shutil.copytree(FIXTURES / "natsmq" / "store", store)
    server, url = start_nats(tmp_path, store_dir=store)
    exporter = None
    try:
        channel = "by-dev-rootcoord-dml_0"
        insert = cli("channels", "peek", channel, "--nats", url, "--type", "insert", "--json").json()["messages"][0]
        vchannel, cid = insert["shard"], insert["collection_id"]
        config = sample_config(tmp_path / "cfg", "milvus-2.3-standalone-natsmq.yaml", etcd=etcd_url)
        text = re.sub(r"maxAge: \d+", f"maxAge: {max_age_keeping(store)}", config.read_text())
        config.write_text(text.replace("rootPath: by-dev", "rootPath: alerts"))
        assert cli("retention", "apply", "--config", str(config), "--nats", url, "--yes").code == 0
        put(etcd_url, f"alerts/meta/root-coord/database/collection-info/1/{cid}",
            collection_info(cid, insert["collection"], {vchannel: channel}))  # fmt: skip
        put(etcd_url, f"alerts/meta/datacoord-meta/channel-cp/{vchannel}",
            position(vchannel, insert["id"] - 1, insert["tso"] - 1))  # fmt: skip
        exporter, metrics = start_exporter("--config", str(config), "--nats", url, "--interval", "0.5")
        with running_prometheus(tmp_path / "prometheus", metrics.split("/")[2], RULES.read_text()) as api:

            def headroom() -> float | None:
                found = [
                    v
                    for labels, v in instant(api, "mqctl_retention_headroom_seconds")
                    if labels["vchannel"] == vchannel
                ]
                return found[0] if found else None

            before = until(headroom)
            assert before > 0  # the age limit keeps every message: time left before it passes the checkpoint
            assert value(httpx.get(metrics, timeout=5).text, "mqctl_source_up", source="etcd") == 1

            purge_stream(url, channel, insert["id"] + 2)  # retention passes the checkpoint: the insert is gone
            after = until(lambda: (h := headroom()) is not None and h <= -1 and h)
            assert after < before
            (alert,) = until(lambda: firing(api, "MqctlCheckpointExpired", vchannel=vchannel))
            assert alert["annotations"]["doctor_code"] == "CP100" and alert["labels"]["severity"] == "critical"
    finally:
        server.kill()
        server.wait()
        if exporter is not None:
            stop(exporter)
