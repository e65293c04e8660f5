"""Woodpecker segments read straight from S3 (`--woodpecker s3://BUCKET/PREFIX`) through the CLI, against moto's
S3 server run in this process (an S3-compatible HTTP server checking signatures and IAM policies): the object
layout built by tests/helpers (the cited format) is uploaded to a bucket, and every read of the bucket must equal
the read of the same files from a folder, with object keys where the folder read names paths."""

from __future__ import annotations

import json

import pytest

from tests.helpers import woodpecker_segments as w
from tests.helpers.cli import run_cli
from tests.helpers.servers import free_port
from tests.helpers.woodpecker_wal import ROCKSMQ, write_wal

pytest.importorskip("moto.server", reason="moto[server] of .[test]")
pytestmark = pytest.mark.extra

from tests.helpers.s3 import moto_s3  # noqa: E402  (after the skip: it needs moto)

if not ROCKSMQ.exists():
    pytest.skip("tests/fixtures not written yet (python tests/helpers/make_fixtures.py)", allow_module_level=True)

BUCKET = "wal"


@pytest.fixture(scope="module")
def tree(tmp_path_factory, logs):
    """One folder per case, each a bucket prefix once uploaded: object layouts v6 and v5, an active last segment,
    a fenced segment, a segment with a flipped byte, a compacted one."""
    top = tmp_path_factory.mktemp("bucket")
    write_wal(top / "files" / "wp", logs, layout="object")
    write_wal(top / "v5" / "wp", logs, layout="object", version=5)
    write_wal(top / "active" / "wp", logs, layout="object", active_last=True)
    w.object_segment(top / "fenced" / "7" / "0", [w.messages(3), w.messages(2, 3)], finalized=False, fence_at=2)
    w.object_segment(top / "compacted" / "7" / "0", [w.messages(3), w.messages(2, 3)], compacted=True)
    w.object_segment(top / "corrupt" / "7" / "0", [w.messages(3), w.messages(2, 3)])
    block = top / "corrupt" / "7" / "0" / "1.blk"
    data = bytearray(block.read_bytes())
    data[-3] ^= 0xFF  # inside the last data record of block 1
    block.write_bytes(bytes(data))
    return top


@pytest.fixture(scope="module")
def s3(tree):
    with moto_s3() as server:
        server.client().create_bucket(Bucket=BUCKET)
        server.upload(tree, BUCKET)
        server.make_reader()
        server.require_signatures()
        yield server


def bucket(s3, *args: str, env: dict[str, str] | None = None):
    """`mqctl ARGS --s3-endpoint` as the reader."""
    return run_cli(*args, "--s3-endpoint", s3.endpoint, env=s3.env(**(env or {})))


def same_but_location(from_bucket: dict, from_folder: dict, folder: str, url: str) -> None:
    """Two JSON reports equal once the folder's path is written as the bucket's URL."""
    assert json.loads(json.dumps(from_folder).replace(folder, url)) == from_bucket


@pytest.mark.parametrize("prefix", ["files/wp", "v5/wp", "active/wp", "fenced", "compacted", "corrupt"])
def test_channels_woodpecker_reads_the_bucket_as_the_folder(s3, tree, prefix):
    url = f"s3://{BUCKET}/{prefix}"
    mine = bucket(s3, "channels", "woodpecker", url, "--json")
    theirs = run_cli("channels", "woodpecker", str(tree / prefix), "--json")
    assert mine.code == theirs.code, mine.stderr + theirs.stderr
    same_but_location(mine.json(), theirs.json(), str(tree / prefix), url)
    assert mine.json()["path"] == url and mine.json()["segments"]


def test_states_footers_and_the_damaged_object_by_key(s3):
    def segments(prefix: str) -> list[dict]:
        result = bucket(s3, "channels", "woodpecker", f"s3://{BUCKET}/{prefix}", "--json")
        assert result.code in (0, 1), result.stderr
        return result.json()["segments"]

    assert {(s["state"], s["footer_version"]) for s in segments("files/wp")} == {("finalized", 6)}
    assert {(s["state"], s["footer_version"]) for s in segments("v5/wp")} == {("finalized", 5)}
    active = segments("active/wp")
    last = {s["log_id"]: max(x["segment"] for x in active if x["log_id"] == s["log_id"]) for s in active}
    assert {s["state"] for s in active if s["segment"] == last[s["log_id"]]} == {"active"}
    (fenced,) = segments("fenced")
    assert (fenced["state"], fenced["entries"], fenced["blocks"]) == ("fenced", 5, 2)
    (compacted,) = segments("compacted")
    assert (compacted["compacted"], compacted["entries"]) == (True, 5)
    result = bucket(s3, "channels", "woodpecker", f"s3://{BUCKET}/corrupt", "--json")
    (corrupt,) = result.json()["segments"]
    assert result.code == 1 and corrupt["entries"] == 3
    assert corrupt["problems"] == [
        f"log 7 segment 0 block 1: s3://{BUCKET}/corrupt/7/0/1.blk at byte 0: block CRC mismatch"
    ]


def test_list_and_peek_equal_the_folder_read(s3, tree, logs):
    url, folder = f"s3://{BUCKET}/files", str(tree / "files")
    mine = bucket(s3, "channels", "list", "--woodpecker", url, "--json")
    theirs = run_cli("channels", "list", "--woodpecker", folder, "--json")
    assert mine.code == 0 and theirs.code == 0, mine.stderr + theirs.stderr
    same_but_location(mine.json(), theirs.json(), folder, url)
    listed = {c["name"]: c for c in mine.json()["channels"]}
    assert {name: c["messages"] for name, c in listed.items()} == {str(log.log_id): len(log.messages) for log in logs}
    assert all(c["first_time"] and c["last_time"] for c in listed.values())
    log = max(logs, key=lambda log: len(log.messages))
    peek = ("channels", "peek", str(log.log_id), "--limit", "500", "--json")
    mine = bucket(s3, *peek, "--woodpecker", url)
    theirs = run_cli(*peek, "--woodpecker", folder)
    assert mine.code == 0, mine.stderr
    same_but_location(mine.json(), theirs.json(), folder, url)
    assert len(mine.json()["messages"]) == len(log.messages)
    assert [m["position"] for m in mine.json()["messages"][:2]] == ["0/0", "0/1"]
    show = ("channels", "show", str(log.log_id), "--json")
    mine, theirs = bucket(s3, *show, "--woodpecker", url), run_cli(*show, "--woodpecker", folder)
    assert mine.code == 0, mine.stderr
    same_but_location(mine.json(), theirs.json(), folder, url)


def test_a_corrupt_object_is_a_warning_naming_its_key(s3):
    result = bucket(s3, "channels", "list", "--woodpecker", f"s3://{BUCKET}/corrupt")
    assert result.code == 1
    assert f"s3://{BUCKET}/corrupt/7/0/1.blk at byte 0: block CRC mismatch" in " ".join(result.stderr.split())


def test_wrong_keys_are_exit_3_without_the_secret(s3):
    secret = "not-the-reader-secret-Zq81"
    for env in (
        {"AWS_SECRET_ACCESS_KEY": secret},
        {"AWS_ACCESS_KEY_ID": "AKIANOSUCHKEY0000000", "AWS_SECRET_ACCESS_KEY": secret},
    ):
        for args in (
            ("channels", "list", "--woodpecker", f"s3://{BUCKET}/files"),
            ("channels", "woodpecker", f"s3://{BUCKET}/files", "--json"),
        ):
            result = bucket(s3, *args, env=env)
            assert result.code == 3, result.stderr
            assert "access denied" in result.stderr and "AWS_ACCESS_KEY_ID" in result.stderr
            assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
            assert secret not in result.stdout + result.stderr and s3.reader_secret not in result.stderr


def test_no_keys_at_all_says_the_request_went_unsigned(s3):
    result = bucket(
        s3,
        "channels",
        "list",
        "--woodpecker",
        f"s3://{BUCKET}/files",
        env={"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""},
    )
    assert result.code == 3 and "unsigned" in result.stderr and "Traceback" not in result.stderr


def test_bad_input_is_one_line(s3):
    cases = [
        (("channels", "list", "--woodpecker", "s3://no-such-bucket/files"), 2, "does not exist"),
        (("channels", "woodpecker", "s3://no-such-bucket/files"), 2, "does not exist"),
        (("channels", "list", "--woodpecker", "s3://Bad_Bucket/x"), 2, "not a bucket name"),
        (("channels", "list", "--woodpecker", f"s3://{BUCKET}/nothing-here"), 2, "no Woodpecker segment"),
    ]
    for args, code, words in cases:
        result = bucket(s3, *args)
        assert (result.code, words in result.stderr) == (code, True), result.stderr
        assert "Traceback" not in result.stderr
    unreachable = f"http://127.0.0.1:{free_port()}"
    result = run_cli(
        "channels", "list", "--woodpecker", f"s3://{BUCKET}/files", "--s3-endpoint", unreachable, env=s3.env()
    )
    assert result.code == 3 and "cannot reach" in result.stderr and "Connection refused" in result.stderr
    result = run_cli(
        "channels", "list", "--woodpecker", f"s3://{BUCKET}/files", "--s3-endpoint", "ftp://x", env=s3.env()
    )
    assert result.code == 2 and "http(s)://HOST[:PORT]" in result.stderr
    with_keys = "http://reader:pw-in-url-Xy7@127.0.0.1:9000"
    result = run_cli(
        "channels", "list", "--woodpecker", f"s3://{BUCKET}/files", "--s3-endpoint", with_keys, env=s3.env()
    )
    assert result.code == 2 and "carries credentials" in result.stderr and "pw-in-url-Xy7" not in result.stderr
    result = run_cli("channels", "list", "--woodpecker", "s3://reader:pw-in-url-Xy7@wal/files", env=s3.env())
    assert result.code == 2 and "names the bucket only" in result.stderr and "pw-in-url-Xy7" not in result.stderr
    result = run_cli("channels", "list", "--rocksmq", str(ROCKSMQ), "--s3-endpoint", s3.endpoint)
    assert result.code == 2 and "--s3-endpoint" in result.stderr


def test_the_endpoint_from_the_environment(s3, tree):
    """AWS_ENDPOINT_URL, and no region anywhere: the SDK asks the bucket for it (GetBucketLocation)."""
    url = f"s3://{BUCKET}/v5"
    env = s3.env(AWS_ENDPOINT_URL=s3.endpoint, AWS_REGION="", AWS_DEFAULT_REGION="")
    result = run_cli("channels", "list", "--woodpecker", url, "--json", env=env)
    assert result.code == 0, result.stderr
    assert result.json() == json.loads(
        json.dumps(run_cli("channels", "list", "--woodpecker", str(tree / "v5"), "--json").json()).replace(
            str(tree / "v5"), url
        )
    )


def test_a_truncated_block_object_reads_up_to_it(s3, tree, tmp_path):
    """An active segment whose last block object is cut short (as a copy taken mid-write could be): the blocks
    before it are read, from the bucket as from the folder."""
    folder = tmp_path / "cut" / "7" / "0"
    w.object_segment(folder, [w.messages(3), w.messages(2, 3)], finalized=False)
    data = (folder / "1.blk").read_bytes()
    (folder / "1.blk").write_bytes(data[: len(data) - 4])
    s3.require_signatures(False)
    try:
        s3.upload(tmp_path, BUCKET)
    finally:
        s3.require_signatures()
    mine = bucket(s3, "channels", "woodpecker", f"s3://{BUCKET}/cut", "--json")
    theirs = run_cli("channels", "woodpecker", str(tmp_path / "cut"), "--json")
    assert mine.code == theirs.code == 0, mine.stderr
    (segment,) = mine.json()["segments"]
    assert (segment["state"], segment["entries"], segment["blocks"]) == ("active", 3, 1)
    same_but_location(mine.json(), theirs.json(), str(tmp_path / "cut"), f"s3://{BUCKET}/cut")


def minio_config(path, s3, **keys: str):
    """A milvus.yaml of a 2.6 whose Woodpecker writes to the moto bucket (woodpecker.storage.type minio, the
    default)."""
    port = s3.endpoint.rsplit(":", 1)[1]
    minio = {
        "address": "127.0.0.1:1",  # a port written here is dropped, as Milvus drops it: minio.port counts
        "port": port,
        "bucketName": BUCKET,
        "rootPath": "files",
        "accessKeyID": s3.reader_key,
        "secretAccessKey": s3.reader_secret,
        **keys,
    }
    path.write_text("mq:\n  type: woodpecker\nminio:\n" + "".join(f"  {k}: {v}\n" for k, v in minio.items()))
    return path


def test_a_config_with_minio_storage_reads_its_bucket(s3, tree, tmp_path):
    """The bucket minio.bucketName, prefix <minio.rootPath>/wp, endpoint minio.address/port, the config's keys first
    (the environment's are wrong here)."""
    config = minio_config(tmp_path / "milvus.yaml", s3)
    env = s3.env(AWS_SECRET_ACCESS_KEY="wrong-secret-in-env")
    mine = run_cli("channels", "list", "--config", str(config), "--json", env=env)
    theirs = run_cli("channels", "list", "--woodpecker", str(tree / "files" / "wp"), "--json")
    assert mine.code == 0, mine.stderr
    same_but_location(mine.json(), theirs.json(), str(tree / "files" / "wp"), f"s3://{BUCKET}/files/wp")
    assert mine.json()["source"] == f"woodpecker:s3://{BUCKET}/files/wp"
    assert s3.reader_secret not in mine.stdout + mine.stderr
    log = theirs.json()["channels"][0]["name"]
    mine = run_cli("channels", "peek", log, "--config", str(config), "--limit", "5", "--json", env=env)
    assert mine.code == 0 and len(mine.json()["messages"]) == 5, mine.stderr


def test_channels_woodpecker_reads_the_bucket_a_config_names(s3, tmp_path):
    """`channels woodpecker --config F` without PATH: the bucket and prefix the config names, with its endpoint and
    keys (the environment's are wrong here), the same report as the explicit URL's; the keys in no output."""
    config = minio_config(tmp_path / "milvus.yaml", s3)
    env = s3.env(AWS_SECRET_ACCESS_KEY="wrong-secret-in-env")
    mine = run_cli("channels", "woodpecker", "--config", str(config), "--json", env=env)
    theirs = bucket(s3, "channels", "woodpecker", f"s3://{BUCKET}/files/wp", "--json")
    assert mine.code == theirs.code == 0, mine.stderr
    assert mine.json() == theirs.json() and mine.json()["path"] == f"s3://{BUCKET}/files/wp"
    assert s3.reader_secret not in mine.stdout + mine.stderr


def test_replay_reads_the_bucket_a_config_names_as_its_executors_will(s3, tmp_path):
    """`replay --config F`: the config's keys reach the driver's reads and the executors through the environment
    (put there when it holds no AWS keys), as an explicit s3:// URL's keys do; planning reads the bucket (the replay
    stops after it, at --partition-by, before Spark) as with the URL. Keys the environment holds win there: a wrong
    one stops the replay in one line, exit 3, before Spark, without any secret."""
    config = minio_config(tmp_path / "milvus.yaml", s3)
    tail = ("--output", str(tmp_path / "out"), "--shape", "messages", "--partition-by", "nope")
    no_keys = s3.env(AWS_ACCESS_KEY_ID="", AWS_SECRET_ACCESS_KEY="")
    mine = run_cli("replay", "--to-spark", "--config", str(config), *tail, env=no_keys)
    theirs = run_cli(
        "replay",
        "--to-spark",
        "--woodpecker",
        f"s3://{BUCKET}/files/wp",
        *tail,
        "--s3-endpoint",
        s3.endpoint,
        env=s3.env(),
    )
    assert (mine.code, mine.stderr) == (theirs.code, theirs.stderr)
    assert mine.code == 2 and "--partition-by 'nope' is not a column" in mine.stderr, mine.stderr
    wrong = run_cli("replay", "--to-spark", "--config", str(config), *tail, env=s3.env(AWS_SECRET_ACCESS_KEY="wrong-1"))
    assert wrong.code == 3 and "access denied" in wrong.stderr, wrong.stderr
    assert s3.reader_secret not in mine.stderr + mine.stdout + wrong.stderr + wrong.stdout
    assert "wrong-1" not in wrong.stderr + wrong.stdout and not (tmp_path / "out").exists()


def test_a_config_with_wrong_minio_keys_is_exit_3_without_them(s3, tmp_path):
    secret = "config-secret-that-is-wrong-Pk02"
    config = minio_config(tmp_path / "milvus.yaml", s3, secretAccessKey=secret)
    for json_flag in ((), ("--json",)):
        result = run_cli("channels", "list", "--config", str(config), *json_flag, env=s3.env())
        assert result.code == 3 and "access denied" in result.stderr, result.stderr
        assert secret not in result.stdout + result.stderr and "Traceback" not in result.stderr
    missing = minio_config(tmp_path / "other.yaml", s3, bucketName="no-such-bucket")
    result = run_cli("channels", "list", "--config", str(missing), env=s3.env())
    assert result.code == 2 and "'no-such-bucket' does not exist" in result.stderr
