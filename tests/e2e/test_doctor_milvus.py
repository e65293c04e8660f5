"""`mqctl doctor` on a real Milvus 2.3.5: found with no arguments from /proc, healthy; then mq.type edited to
natsmq on disk without a migration is the drift error naming the MQ, the restart and the migration."""

from __future__ import annotations

import re
import time

import pytest

from tests.helpers.imports import imported_by, pymilvus_client_parts

pytestmark = pytest.mark.milvus


def _doctor(cli, pid: int, *args: str):
    """`mqctl doctor` with no target argument; another Milvus on this host (a parallel run) makes it ask for
    --pid, which is then given."""
    result = cli("doctor", "--json", *args, timeout=120)
    if result.code == 2 and "Milvus standalone processes run here" in result.stderr:
        assert f"pid {pid} in" in result.stderr
        return cli("doctor", "--json", "--pid", str(pid), *args, timeout=120), "--pid"
    return result, "discovered"


BARE_PYMILVUS = """
import sys
from pymilvus import MilvusClient
client = MilvusClient(uri=sys.argv[1])
client.get_server_version()
for db in client.list_databases():
    each = client if db == "default" else MilvusClient(uri=sys.argv[1], db_name=db)
    for name in each.list_collections():
        each.get_load_state(name)
client._get_connection()._stub.CheckHealth(__import__("pymilvus.grpc_gen.milvus_pb2").grpc_gen.milvus_pb2.CheckHealthRequest())
"""


def _bare_pymilvus_seconds(uri: str) -> float:
    """Wall seconds of a plain pymilvus script asking what the doctor asks over gRPC (the anchor of its figure)."""
    import subprocess
    import sys

    started = time.monotonic()
    subprocess.run([sys.executable, "-c", BARE_PYMILVUS, uri], check=True, capture_output=True, timeout=120)
    return time.monotonic() - started


def test_doctor_finds_a_real_sandbox_and_catches_mq_type_edited_without_a_migration(tmp_path, cli):
    from mqctl.sandbox import server as sandbox
    from mqctl.sandbox.demo import DEMO_COLLECTIONS

    directory = str(tmp_path / "sandbox")
    info = sandbox.up(directory, seed=True, timeout=240)
    try:
        assert info.pid is not None
        started = time.monotonic()
        result, found_by = _doctor(cli, info.pid)
        elapsed = time.monotonic() - started
        report = result.json()
        assert result.code == 0, report
        target = report["target"]
        assert report["verdict"] == "ok", [c for c in report["checks"] if c["severity"] in ("error", "warning")]
        assert target["pid"] == info.pid and target["found_by"] == found_by
        assert target["configs"] == [info.config] and target["version"] == "2.3.5"
        assert target["mq"]["mq"] == "rocksmq" and "mqType=rocksmq" in target["mq"]["evidence"]
        assert target["env"]["DEPLOY_MODE"] == "STANDALONE" and target["etcd"] == info.etcd
        codes = {c["code"]: c for c in report["checks"]}
        assert codes["DR110"]["severity"] == "ok" and codes["DR600"]["severity"] == "ok"
        assert codes["DR400"]["severity"] == "ok"  # the seeded collections' checkpoints, read from the etcd found
        assert codes["DR602"]["severity"] == "ok" and "2 collection(s), all loaded" in codes["DR602"]["message"]
        anchor = _bare_pymilvus_seconds(info.uri)
        print(
            f"doctor on a healthy sandbox: {elapsed:.2f} s wall, {report['seconds']:.2f} s examining; a bare pymilvus "
            f"script asking the same gRPC questions {anchor:.2f} s (figures only; docs/benchmarks.md#doctor)"
        )
        # its gRPC questions go through the generated stubs and grpc: pymilvus's package (pandas, numpy) never loads
        names = imported_by("doctor", "--json", "--pid", str(info.pid))
        assert "grpc" in names and "pymilvus.grpc_gen.milvus_pb2_grpc" in names and "mqctl.milvus.rpc" in names
        assert not pymilvus_client_parts(names)

        # mq.type edited on disk, no migration: the next restart would start an empty natsmq
        assert cli("config", "set", info.config, "mq.type", "natsmq", "--yes").code == 0
        result, _ = _doctor(cli, info.pid)
        assert result.code == 1
        report = result.json()
        assert report["verdict"] == "error" and report["target"]["next_mq"] == "natsmq"
        drift = next(c for c in report["checks"] if c["code"] == "DR110")
        assert drift["severity"] == "error"
        assert "Milvus runs rocksmq now, but the next restart starts an empty natsmq" in drift["message"]
        assert f"mqctl config set {info.config} mq.type rocksmq --yes" in drift["fix"]
        assert "mqctl migrate --config" in drift["fix"] and "--to natsmq" in drift["fix"]
        unflushed = re.search(
            r"(\d+) message\(s\) after the channel checkpoints, not flushed \((\d+) inserted row\(s\)\)",
            drift["impact"],
        )
        # --seed leaves its rows unflushed: what a restart loses
        assert (
            unflushed and int(unflushed.group(1)) > 0 and 0 < int(unflushed.group(2)) <= sum(DEMO_COLLECTIONS.values())
        )

        # forceDeny left true in the file Milvus reads: writes refused
        for key, value in (("quotaAndLimits.enabled", "true"), ("quotaAndLimits.limitWriting.forceDeny", "true")):
            assert cli("config", "set", info.config, key, value, "--yes").code == 0
        result, _ = _doctor(cli, info.pid)
        deny = next(c for c in result.json()["checks"] if c["code"] == "DR200")
        assert result.code == 1 and deny["severity"] == "error"
        assert f"mqctl config set {info.config} quotaAndLimits.limitWriting.forceDeny false --yes" in deny["fix"]

        # the same through --sandbox
        by_folder = cli("doctor", "--sandbox", directory, "--json", timeout=120)
        assert by_folder.code == 1 and by_folder.json()["target"]["found_by"] == "--sandbox"
        drift = next(c for c in by_folder.json()["checks"] if c["code"] == "DR110")
        assert drift["severity"] == "error" and f"mqctl migrate --sandbox {directory} --to natsmq" in drift["fix"]
        screen = cli("doctor", "--sandbox", directory, timeout=120)
        assert screen.code == 1 and screen.stdout.startswith("verdict: error") and "DR110" in screen.stdout
        print(screen.stdout)
    finally:
        sandbox.down(directory, timeout=10)
