"""`mqctl bundle` end to end on the RocksMQ fixture and a real etcd, with secrets planted everywhere mqctl reads
(the config's keys, URLs and comments, the environment, etcd config keys, the options' URLs, the migration journal,
Milvus's log): none of them is in any file of the archive, and the manifest lists every part."""

from __future__ import annotations

import json
import tarfile

import pytest

from tests.helpers.metrics import sample_config
from tests.helpers.milvus_meta import put
from tests.helpers.paths import FIXTURES
from tests.helpers.servers import free_port

ROCKSMQ = str(FIXTURES / "rocksmq" / "rdb_data")


PLANTED = {
    "config key": "PLANTED-minio-secret-1a",
    "config access key": "PLANTED-access-id-2b",
    "config pulsar token": "PLANTED-pulsar-token-3c",
    "config url": "PLANTED-pulsar-url-4d",
    "config comment": "PLANTED-comment-5e",
    "config kafka": "PLANTED-kafka-sasl-6f",
    "environment": "PLANTED-env-aws-7g",
    "environment url": "PLANTED-env-url-8h",
    "etcd key": "PLANTED-etcd-secret-9i",
    "option url": "PLANTED-grpc-url-10j",
    "journal": "PLANTED-journal-11k",
    "log pair": "PLANTED-log-pair-12l",
    "log url": "PLANTED-log-url-13m",
}


def read_archive(path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as archive:
        return {m.name: archive.extractfile(m).read() for m in archive.getmembers() if m.isfile()}  # type: ignore[union-attr]


@pytest.mark.etcd
def test_no_planted_secret_reaches_the_archive_and_the_manifest_lists_every_part(tmp_path, cli, etcd_url):
    config = sample_config(tmp_path / "cfg", etcd=etcd_url)
    text = config.read_text().replace("rootPath: by-dev", "rootPath: bundle")
    text = text.replace("secretAccessKey: minioadmin", f"secretAccessKey: {PLANTED['config key']}")
    text = text.replace("accessKeyID: minioadmin", f"accessKeyID: {PLANTED['config access key']}")
    assert PLANTED["config key"] in text and PLANTED["config access key"] in text
    text = text.replace(
        "  address: localhost # Address of pulsar",
        f"  address: pulsar://admin:{PLANTED['config url']}@pulsar.example # the old one: password: "
        f"{PLANTED['config comment']}\n  authParams: token:{PLANTED['config pulsar token']}",
    )
    text += f"kafka:\n  saslPassword: {PLANTED['config kafka']}\n"
    config.write_text(text)
    put(etcd_url, "bundle/config/minio/secretAccessKey", PLANTED["etcd key"].encode())
    put(etcd_url, "bundle/config/mq/type", b"rocksmq")
    (config.parent / ".mqctl-migrate.json").write_text(
        json.dumps({"id": "m1", "milvus_token": PLANTED["journal"], "state": "planned"})
    )
    log = tmp_path / "milvus.log"
    log.write_text(
        "[INFO] starting\n" * 5
        + f'[INFO] connect minio secretAccessKey="{PLANTED["config key"]}" password={PLANTED["log pair"]}\n'
        + f"[WARN] dial http://milvus:{PLANTED['log url']}@10.0.0.1:9000 failed\n"
        + "[INFO] last line\n"
    )
    out = tmp_path / "ticket.tar.gz"
    env = {
        "AWS_SECRET_ACCESS_KEY": PLANTED["environment"],
        "MQCTL_TEST_PROXY": f"http://u:{PLANTED['environment url']}@proxy.example:3128",
    }
    result = cli(
        "bundle", "--out", str(out), "--config", str(config), "--rocksmq", ROCKSMQ, "--log", str(log),
        "--milvus", f"http://root:{PLANTED['option url']}@127.0.0.1:{free_port()}", "--timeout", "1",
        "--milvus-version", "2.3.5", "--json", env=env,
    )  # fmt: skip
    assert result.code == 0, result.stderr
    for where, secret in PLANTED.items():
        assert secret not in result.stdout + result.stderr, where
    files = read_archive(out)
    for name, content in files.items():
        for where, secret in PLANTED.items():
            assert secret.encode() not in content and secret not in name, f"{where} in {name}"
    root = "ticket"
    manifest = json.loads(files[f"{root}/MANIFEST.json"])
    listed = {part["path"] for part in manifest["parts"]}
    assert {f"{root}/{path}" for path in listed} == set(files) - {f"{root}/MANIFEST.json"}
    assert {
        "configs/01-milvus.yaml", "doctor.json", "metrics.prom", "mq/retention.json", "mq/checkpoints.json",
        "etcd/config.json", "migration/journal.json", "milvus.log", "versions.json",
    } <= listed  # fmt: skip
    assert {m["part"] for m in manifest["missing"]} == {"etcd/wal-state.json"}  # not a 2.6 etcd
    for part in manifest["parts"]:
        assert part["bytes"] == len(files[f"{root}/{part['path']}"])
    masked = files[f"{root}/configs/01-milvus.yaml"].decode()
    assert "secretAccessKey: '******'" in masked and "type: rocksmq" in masked and "pulsar.example" in masked
    assert "mqctl_channel_messages{" in files[f"{root}/metrics.prom"].decode()
    assert json.loads(files[f"{root}/etcd/config.json"])["bundle/config/mq/type"] == "rocksmq"
    assert files[f"{root}/milvus.log"].decode().endswith("[INFO] last line\n")
    assert json.loads(files[f"{root}/doctor.json"])["verdict"] == result.json()["manifest"]["verdict"]
    assert out.stat().st_mode & 0o077 == 0


def test_a_bad_destination_is_exit_2_in_one_line_and_leaves_nothing(tmp_path, cli):
    args = ("--rocksmq", ROCKSMQ)
    missing = cli("bundle", "--out", str(tmp_path / "absent" / "b.tar.gz"), *args)
    assert missing.code == 2 and "does not exist" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert cli("bundle", "--out", str(a_file / "b.tar.gz"), *args).code == 2
    assert cli("bundle", "--out", str(tmp_path / "b.zip"), *args).code == 2
    done = cli("bundle", "--out", str(tmp_path / "b.tar.gz"), *args)
    assert done.code == 0, done.stderr
    again = cli("bundle", "--out", str(tmp_path / "b.tar.gz"), *args)
    assert again.code == 2 and "already exists" in again.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.tar.gz", "file"]  # no .partial left behind
