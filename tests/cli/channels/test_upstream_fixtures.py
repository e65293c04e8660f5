"""mqctl against bytes upstream wrote: the fixtures of tests/fixtures/upstream were written by Woodpecker's own
client (v0.1.13 through Milvus 2.6's wp WAL adapter; v0.1.37, the 3.0 line) with messages from Milvus's pkg/v2
builders and the streaming state marshalled with Milvus's generated types (tests/reference/writer). Each is read
through the CLI, from its folder, from a bucket (moto's S3 server) and with its etcd state loaded into a real
etcd, and compared entry by entry with the manifest the writer wrote. Regenerate them with
`python -m tests.helpers.upstream_writer`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import upstream_writer as upstream
from tests.helpers.cli import run_cli
from tests.helpers.streaming_meta import put

pytestmark = pytest.mark.etcd

FOLDERS = upstream.fixture_folders()
if not FOLDERS:
    pytest.skip("tests/fixtures/upstream is empty (python -m tests.helpers.upstream_writer)", allow_module_level=True)

IDS = [folder.name for folder in FOLDERS]


def expected_messages(manifest: dict) -> list[dict]:
    """What `channels peek --json` must say of each entry the writer wrote."""
    return [
        {
            "position": f"{e['segment_id']}/{e['entry_id']}",
            "id": e["segment_id"] * 10**10 + e["entry_id"],
            "type": e["type"],
            "vchannel": e["vchannel"],
            "tso": e["time_tick"],
            "pks": e.get("primary_keys"),
            "txn": e.get("txn_id"),
        }
        for e in manifest["logs"][0]["entries"]
    ]


def shown(messages: list[dict]) -> list[dict]:
    keys = ("position", "id", "type", "vchannel", "tso", "pks", "txn")
    return [{k: None if m.get(k) in ([], "") else m.get(k) for k in keys} for m in messages]


@pytest.fixture(scope="module", params=FOLDERS, ids=IDS)
def fixture(request, etcd_url) -> tuple[Path, dict, str]:
    """One fixture folder with its etcd.json as the only state of the module's etcd."""
    import httpx

    folder: Path = request.param
    httpx.post(f"{etcd_url}/v3/kv/deleterange", json={"key": "AA==", "range_end": "AA=="}).raise_for_status()
    for key, value in upstream.etcd_items(folder):
        put(etcd_url, key.decode(), value)
    return folder, upstream.manifest(folder), etcd_url


def test_the_manifest_names_its_upstream_modules_with_their_sums(fixture):
    folder, manifest, _ = fixture
    modules = {m["path"]: m for m in manifest["modules"]}
    assert modules["github.com/zilliztech/woodpecker"]["version"] == manifest["woodpecker"]
    assert folder.name.startswith(f"woodpecker-{manifest['woodpecker']}-{manifest['storage']}")
    assert manifest["milvus_pkg"] == modules["github.com/milvus-io/milvus/pkg/v2"]["version"]
    assert all(m["sum"].startswith("h1:") for m in modules.values())


def test_channels_woodpecker_counts_what_the_writer_appended(fixture):
    folder, manifest, etcd = fixture
    log = manifest["logs"][0]
    result = run_cli("channels", "woodpecker", str(upstream.wal_path(folder)), "--etcd", etcd, "--json")
    assert result.code == 0, result.stderr
    segments = result.json()["segments"]
    written: dict[int, list[int]] = {}
    for entry in log["entries"]:
        written.setdefault(entry["segment_id"], []).append(entry["entry_id"])
    assert {s["segment"]: s["entries"] for s in segments} == {seg: len(ids) for seg, ids in written.items()}
    assert {s["segment"]: (s["first_entry"], s["last_entry"]) for s in segments} == {
        seg: (min(ids), max(ids)) for seg, ids in written.items()
    }
    # FormatVersion 5 up to v0.1.13, 6 (with the LAC) after: server/storage/codec/format.go of each tag. A killed
    # writer's last segment has no footer: read as active, up to its last complete block (all of it, once synced).
    version = 5 if manifest["woodpecker"] == "v0.1.13" else 6
    crashed = max(written) if manifest["variant"] == "crash" else None
    assert {
        s["segment"]: (s["log_id"], s["log"], s["state"], s["footer_version"], s["problems"]) for s in segments
    } == {
        seg: (log["log_id"], log["pchannel"], "active" if seg == crashed else "finalized",
              None if seg == crashed else version, [])
        for seg in written
    }  # fmt: skip
    if version == 6:
        assert {s["segment"]: s["lac"] for s in segments} == {
            seg: None if seg == crashed else max(ids) for seg, ids in written.items()
        }


def test_peek_decodes_every_entry_as_the_manifest_says(fixture):
    folder, manifest, etcd = fixture
    pchannel = manifest["logs"][0]["pchannel"]
    result = run_cli(
        "channels", "peek", pchannel, "--woodpecker", str(upstream.wal_path(folder)), "--etcd", etcd,
        "--limit", "1000", "--json",
    )  # fmt: skip
    assert result.code == 0, result.stderr
    messages = result.json()["messages"]
    assert [m.get("error") for m in messages] == [None] * len(messages)
    assert shown(messages) == expected_messages(manifest)


def test_list_counts_and_times_match_the_manifest(fixture):
    folder, manifest, etcd = fixture
    result = run_cli("channels", "list", "--woodpecker", str(upstream.wal_path(folder)), "--etcd", etcd, "--json")
    assert result.code == 0, result.stderr
    (channel,) = result.json()["channels"]
    entries = manifest["logs"][0]["entries"]
    assert (channel["name"], channel["messages"]) == (manifest["logs"][0]["pchannel"], len(entries))
    assert (channel["first_id"], channel["last_id"]) == tuple(
        e["segment_id"] * 10**10 + e["entry_id"] for e in (entries[0], entries[-1])
    )


def test_checkpoints_decode_upstreams_streaming_state(fixture):
    folder, manifest, etcd = fixture
    log = manifest["logs"][0]
    last = log["entries"][-1]
    result = run_cli(
        "channels", "checkpoints", "--etcd", etcd, "--woodpecker", str(upstream.wal_path(folder)), "--json"
    )
    assert result.code == 0, result.stdout + result.stderr
    report = result.json()
    (pchannel,) = report["pchannels"]
    position = f"{last['segment_id']}/{last['entry_id']}"
    assert (pchannel["pchannel"], pchannel["wal"], pchannel["checkpoint"], pchannel["log_id"]) == (
        log["pchannel"], "woodpecker", position, log["log_id"],
    )  # fmt: skip
    # the last entry Woodpecker's segment meta records: a killed writer's segment is still Active there, with none
    sealed = [e for e in log["entries"] if manifest["variant"] != "crash" or e["segment_id"] != last["segment_id"]]
    assert (pchannel["status"], pchannel["state"], pchannel["term"], pchannel["last_entry"]) == (
        "ok", "assigned", 2, f"{sealed[-1]['segment_id']}/{sealed[-1]['entry_id']}",
    )  # fmt: skip
    # embedded Woodpecker's placeholder quorum (127.0.0.1:59456, milvus #53582): v0.1.37 records it in every
    # segment's meta (SegmentMetadata.quorum 9), v0.1.13 writes no quorum field at all
    segments = len({e["segment_id"] for e in log["entries"]})
    assert (pchannel["segments"], pchannel["loopback_segments"]) == (
        segments, 0 if manifest["woodpecker"] == "v0.1.13" else segments,
    )  # fmt: skip
    first = log["entries"][0]
    assert pchannel["first_retained"] == f"{first['segment_id']}/{first['entry_id']}"
    (vchannel,) = report["vchannels"]
    assert (vchannel["vchannel"], vchannel["wal"], vchannel["position"], vchannel["state"], vchannel["status"]) == (
        last["vchannel"], "woodpecker", position, "normal", "ok",
    )  # fmt: skip
    # Woodpecker's own meta prefix: the legacy `woodpecker` up to v0.1.29, `<etcd.rootPath>/woodpecker` after
    # (meta/metadata_etcd.go of v0.1.37), as Milvus 3.0's builder configures it
    assert report["woodpecker_prefix"] == ("woodpecker" if manifest["woodpecker"] == "v0.1.13" else "by-dev/woodpecker")
    assert report["findings"] == []


def test_a_flipped_byte_is_found_by_its_crc_with_its_location(fixture, tmp_path):
    folder = fixture[0]
    copy = tmp_path / "wal"
    shutil.copytree(folder / "wal", copy)
    wal = upstream.wal_path(tmp_path)
    target = min(p for p in wal.rglob("*") if p.name in ("data.log", "1.blk"))
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    result = run_cli("channels", "woodpecker", str(wal), "--json")
    assert result.code == 1, result.stdout + result.stderr
    problems = [p for s in result.json()["segments"] for p in s["problems"]]
    assert problems and str(target) in " ".join(problems) and "CRC" in " ".join(problems)


@pytest.fixture(scope="module")
def bucket():
    """moto's S3 with every minio fixture's objects uploaded under its folder name (keys as Woodpecker wrote them)."""
    pytest.importorskip("moto.server", reason="moto[server] of .[test]")
    from tests.helpers.s3 import moto_s3

    with moto_s3() as s3:
        s3.client().create_bucket(Bucket=upstream.BUCKET)
        for folder in FOLDERS:
            if folder.name.endswith("-minio"):
                s3.upload(folder / "wal", upstream.BUCKET, folder.name)
                # and as the whole bucket of a deployment, for --config (bucket names: no underscores)
                s3.client().create_bucket(Bucket=folder.name.replace(".", "-"))
                s3.upload(folder / "wal", folder.name.replace(".", "-"))
        s3.make_reader()
        s3.require_signatures()
        yield s3


@pytest.mark.extra
@pytest.mark.parametrize("folder", [f for f in FOLDERS if f.name.endswith("-minio")], ids=lambda f: f.name)
def test_the_bucket_woodpecker_wrote_is_read_straight_from_s3(bucket, folder):
    manifest = upstream.manifest(folder)
    url = f"s3://{upstream.BUCKET}/{folder.name}/files/wp"
    result = run_cli(
        "channels", "peek", str(manifest["logs"][0]["log_id"]), "--woodpecker", url, "--s3-endpoint", bucket.endpoint,
        "--limit", "1000", "--json", env=bucket.env(),
    )  # fmt: skip
    assert result.code == 0, result.stderr
    assert shown(result.json()["messages"]) == expected_messages(manifest)


CLEAN = [f for f in FOLDERS if upstream.manifest(f)["variant"] == "normal"]


@pytest.mark.parametrize("folder", CLEAN, ids=[f.name for f in CLEAN])
def test_a_stock_config_derives_where_woodpecker_wrote(folder, tmp_path, request):
    """`--config` finds the WAL where Milvus puts it: `<localStorage.path>/wp` (with the `files/wp` nesting Woodpecker
    writes below it) for local storage, `s3://<bucketName>/<rootPath>/wp` at `minio.address:port` for minio."""
    manifest = upstream.manifest(folder)
    config = tmp_path / "milvus.yaml"
    env = None
    if manifest["storage"] == "local":
        shutil.copytree(folder / "wal", tmp_path / "data" / "wp")
        config.write_text(f"mq:\n  type: woodpecker\nlocalStorage:\n  path: {tmp_path / 'data'}\n"
                          "woodpecker:\n  storage:\n    type: local\n")  # fmt: skip
        location = str(tmp_path / "data" / "wp")
    else:
        pytest.importorskip("moto.server", reason="moto[server] of .[test]")
        s3 = request.getfixturevalue("bucket")
        host, port = s3.endpoint.removeprefix("http://").split(":")
        name = folder.name.replace(".", "-")
        config.write_text(
            f"mq:\n  type: woodpecker\nminio:\n  address: {host}\n  port: {port}\n  bucketName: {name}\n"
            f"  rootPath: files\n  accessKeyID: {s3.reader_key}\n  secretAccessKey: {s3.reader_secret}\n"
        )
        env = s3.env(AWS_ACCESS_KEY_ID="", AWS_SECRET_ACCESS_KEY="")
        location = f"s3://{name}/files/wp"
    result = run_cli("channels", "list", "--config", str(config), "--json", env=env)
    assert result.code == 0, result.stderr
    report = result.json()
    entries = manifest["logs"][0]["entries"]
    assert (report["source"], [c["messages"] for c in report["channels"]]) == (f"woodpecker:{location}", [len(entries)])
