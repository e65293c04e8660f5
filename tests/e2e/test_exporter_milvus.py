"""`mqctl exporter` on a real Milvus 2.3.5 on natsmq with its own etcd, scraped by a real Prometheus with the
shipped alert rules: while the seeded rows wait after the channel checkpoints the headroom is the stream's age
limit less their age; natsmq retention passing the checkpoints (every DML stream purged, as retention drops the
oldest messages) drives it below -1 and fires MqctlCheckpointExpired, read back through Prometheus's HTTP API.
Then `mqctl bundle --sandbox` of the same Milvus: every part read (its log included), its MinIO keys nowhere."""

from __future__ import annotations

import json
import shutil
import tarfile
from pathlib import Path

import httpx
import pytest

from tests.helpers.cli import run_cli_subprocess
from tests.helpers.metrics import firing, instant, running_prometheus, start_exporter, stop, until, value
from tests.helpers.natsmq import purge_dml_streams
from tests.helpers.paths import SAMPLES

pytestmark = [pytest.mark.milvus, pytest.mark.etcd]


def test_headroom_falls_past_zero_and_the_alert_fires_when_retention_passes_the_checkpoints(tmp_path_factory):
    from mqctl.sandbox.server import Sandbox

    folder = tmp_path_factory.mktemp("exporter") / "milvus"
    up = run_cli_subprocess(
        "sandbox", "up", "--dir", str(folder), "--mq", "natsmq", "--external-etcd", "--seed", "--json", timeout=300
    )
    assert up.code == 0, up.stderr
    exporter = None
    try:
        exporter, metrics = start_exporter("--sandbox", str(folder), "--interval", "1")
        scraped = httpx.get(metrics, timeout=60).text
        for source in ("config", "etcd", "mq", "milvus"):
            assert value(scraped, "mqctl_source_up", source=source) == 1, source
        assert value(scraped, "mqctl_doctor_verdict", verdict="ok") == 1
        assert value(scraped, "mqctl_writes_denied", source="quota") == 0  # CheckHealth: no DenyToWrite
        assert value(scraped, "mqctl_writes_denied", source="config") == 0
        assert value(scraped, "mqctl_wal_disk_free_bytes", mq="natsmq") > 0
        rules = (SAMPLES / "monitoring" / "mqctl-alerts.yml").read_text()
        with running_prometheus(folder.parent / "prometheus", metrics.split("/")[2], rules) as api:
            before = until(lambda: instant(api, "mqctl_retention_headroom_seconds"), seconds=60)
            assert all(headroom > 0 for _, headroom in before)  # the default 3-day age limit is far away
            assert not firing(api, "MqctlCheckpointExpired")
            assert purge_dml_streams(f"nats://127.0.0.1:{Sandbox(str(folder)).ports['natsmq_port']}")

            def expired() -> list[tuple[dict[str, str], float]]:
                now = instant(api, "mqctl_retention_headroom_seconds <= -1")
                return now if len(now) == len(before) else []

            assert {labels["vchannel"] for labels, _ in until(expired, seconds=60)} == {
                labels["vchannel"] for labels, _ in before
            }
            alerts = until(lambda: firing(api, "MqctlCheckpointExpired"), seconds=60)
            assert {a["labels"]["vchannel"] for a in alerts} <= {labels["vchannel"] for labels, _ in before}
            assert all(a["annotations"]["doctor_code"] == "CP100" for a in alerts)

        # the support bundle of the same sandbox: every part read, the config's MinIO keys nowhere inside
        config = Path(json.loads(up.stdout)["config"])
        assert "secretAccessKey: minioadmin" in config.read_text()
        out = folder.parent / "ticket.tar.gz"
        made = run_cli_subprocess("bundle", "--sandbox", str(folder), "--out", str(out), "--json", timeout=300)
        assert made.code == 0, made.stderr
        manifest = made.json()["manifest"]
        parts = {part["path"] for part in manifest["parts"]}
        assert {"configs/01-milvus.yaml", "doctor.json", "mq/retention.json", "mq/checkpoints.json",
                "etcd/config.json", "milvus.log", "versions.json"} <= parts, manifest["missing"]  # fmt: skip
        with tarfile.open(out, "r:gz") as archive:
            for member in archive.getmembers():
                content = archive.extractfile(member).read()  # type: ignore[union-attr]
                assert b"minioadmin" not in content, member.name
        assert json.loads(made.stdout)["manifest"]["verdict"] == "error"  # CP100: the purged checkpoints
    finally:
        if exporter is not None:
            stop(exporter)
        run_cli_subprocess("sandbox", "down", "--dir", str(folder))
        shutil.rmtree(folder, ignore_errors=True)
