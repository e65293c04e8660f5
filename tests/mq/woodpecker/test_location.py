"""Where a 2.6 config puts its Woodpecker WAL (milvus pkg/streaming/walimpls/impls/wp/builder.go
`setCustomWpConfig`): the bucket and prefix, endpoint and keys for storage minio, the folder for local; the keys
never show in a repr."""

from __future__ import annotations

import pytest

from mqctl.config.resolve.resolution import resolve
from mqctl.errors import InputError, PreconditionError
from mqctl.mq.woodpecker.location import woodpecker_location
from mqctl.mq.woodpecker.s3_url import parse_s3_url


def located(tmp_path, text: str):
    config = tmp_path / "milvus.yaml"
    config.write_text("mq:\n  type: woodpecker\n" + text)
    return woodpecker_location(resolve([config]))


def test_stock_config_is_the_a_bucket_files_wp_prefix_on_localhost(tmp_path):
    found = located(tmp_path, "")
    assert found.location == "s3://a-bucket/files/wp"
    assert found.access is not None
    assert (found.access.endpoint, found.access.access_key, found.access.secret_key) == (
        "http://localhost:9000",
        "minioadmin",
        "minioadmin",
    )
    assert "minioadmin" not in repr(found) and "minioadmin" not in repr(found.access)


def test_minio_keys_as_milvus_reads_them(tmp_path):
    found = located(
        tmp_path,
        "minio:\n  address: minio.example:9999\n  port: 443\n  useSSL: true\n  bucketName: wal-bucket\n"
        "  rootPath: /milvus/data/\n  accessKeyID: AK\n  secretAccessKey: SK-SECRET\n  region: eu-west-1\n",
    )
    assert found.location == "s3://wal-bucket/milvus/data/wp"
    assert found.access is not None
    assert (found.access.endpoint, found.access.region) == ("https://minio.example:443", "eu-west-1")
    assert (found.access.access_key, found.access.secret_key) == ("AK", "SK-SECRET")
    assert "SK-SECRET" not in repr(found)
    iam = located(tmp_path, "minio:\n  useIAM: true\n")
    assert iam.access is not None and (iam.access.access_key, iam.access.secret_key) == (None, None)


def test_local_storage_is_a_folder(tmp_path):
    found = located(tmp_path, "woodpecker:\n  storage:\n    type: local\nlocalStorage:\n  path: /data/milvus/\n")
    assert (found.location, found.access) == ("/data/milvus/wp", None)
    assert "localStorage.path" in found.reason
    found = located(tmp_path, "woodpecker:\n  storage:\n    type: local\n    rootPath: /wal\n")
    assert found.location == "/wal"
    found = located(tmp_path, "woodpecker:\n  storage:\n    type: local\n")
    assert found.location == "/var/lib/milvus/data/wp"


def test_a_service_or_unknown_storage_type_is_refused(tmp_path):
    with pytest.raises(PreconditionError, match="separate Woodpecker service"):
        located(tmp_path, "woodpecker:\n  storage:\n    type: service\n")
    with pytest.raises(InputError, match="not a storage type"):
        located(tmp_path, "woodpecker:\n  storage:\n    type: tape\n")
    with pytest.raises(InputError, match="not a port number"):
        located(tmp_path, "minio:\n  port: nine\n")


def test_s3_urls():
    assert str(parse_s3_url("s3://wal/files/wp/")) == "s3://wal/files/wp"
    assert parse_s3_url("s3://wal").prefix == ""
    assert parse_s3_url("S3://wal//a//b").prefix == "a/b"
    for bad, words in (
        ("s3://", "not a bucket name"),
        ("s3://ab/x", "not a bucket name"),
        ("s3://Upper/x", "not a bucket name"),
        ("s3://key:secret@wal/x", "names the bucket only"),
    ):
        with pytest.raises(InputError, match=words) as raised:
            parse_s3_url(bad)
        assert "secret" not in raised.value.message
