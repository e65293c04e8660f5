"""`mqctl doctor` on the 2.6/3.0 state upstream's own code wrote (tests/fixtures/upstream: Woodpecker v0.1.13
through Milvus 2.6's wp adapter and v0.1.37, the streaming state marshalled with Milvus's generated types), with a
milvus.yaml that puts the Woodpecker files where the fixture's wal/ is: the WAL state is judged healthy (DR402 ok),
every checkpoint's entries are found in the segments the manifest lists, and nothing upstream wrote is reported
as damaged. The hazards' folders are tests/cli/test_upstream_hazards.py's."""

from __future__ import annotations

import shutil

import pytest

from tests.helpers import upstream_writer as upstream
from tests.helpers.cli import run_cli
from tests.helpers.files import write_yaml
from tests.helpers.streaming_meta import put

pytestmark = pytest.mark.etcd

FOLDERS = upstream.fixture_folders()
if not FOLDERS:
    pytest.skip("tests/fixtures/upstream is empty (python -m tests.helpers.upstream_writer)", allow_module_level=True)


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_doctor_finds_upstreams_wal_state_healthy_as_the_manifest_says(folder, etcd_url, tmp_path):
    import httpx

    manifest = upstream.manifest(folder)
    httpx.post(f"{etcd_url}/v3/kv/deleterange", json={"key": "AA==", "range_end": "AA=="}).raise_for_status()
    for key, value in upstream.etcd_items(folder):
        put(etcd_url, key.decode(), value)
    shutil.copytree(upstream.wal_path(folder), tmp_path / "data" / "wp")
    config = write_yaml(
        tmp_path,
        f"etcd:\n  rootPath: by-dev\nmq:\n  type: woodpecker\nlocalStorage:\n  path: {tmp_path / 'data'}\n"
        "woodpecker:\n  storage:\n    type: local\n",
    )
    result = run_cli("doctor", "--config", str(config), "--etcd", etcd_url, "--json")
    checks = result.json()["checks"]
    streaming = [c for c in checks if c["area"] == "checkpoints"]
    assert [c["code"] for c in streaming if c["severity"] in ("error", "warning")] == [], streaming
    (ok,) = [c for c in streaming if c["code"] == "DR402"]
    segments = {e["segment_id"] for e in manifest["logs"][0]["entries"]}
    assert ok["severity"] == "ok", ok
    assert "1 pchannel(s) and 1 vchannel(s) of the 2.6 WAL state" in ok["message"]
    assert f"still in the {len(segments)} segment(s) at {tmp_path / 'data' / 'wp'}" in ok["message"], ok["message"]
