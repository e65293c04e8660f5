"""An S3-compatible server in this process: moto's server mode (moto[server] of .[test]) on 127.0.0.1, with a
bucket filled from a folder and a reader whose keys may list and read it. Once `require_signatures` is called,
moto checks every request's signature and the reader's IAM policy, so wrong keys are refused as S3 refuses them.
"""

from __future__ import annotations

import contextlib
import json
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers.servers import free_port

REGION = "us-east-1"
ADMIN = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}  # moto's, before signatures count


@dataclass
class S3Server:
    endpoint: str
    reader_key: str = ""
    reader_secret: str = ""

    def client(self, service: str = "s3") -> Any:
        import boto3

        return boto3.client(service, endpoint_url=self.endpoint, region_name=REGION, **ADMIN)

    def upload(self, folder: Path, bucket: str, prefix: str = "") -> list[str]:
        """Every file below `folder` as `<prefix>/<relative path>`; returns the keys."""
        s3 = self.client()
        keys = []
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            key = "/".join(part for part in (prefix, path.relative_to(folder).as_posix()) if part)
            s3.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
            keys.append(key)
        return keys

    def make_reader(self) -> None:
        """An IAM user allowed to list and read every bucket, with an access key (the reader's)."""
        iam = self.client("iam")
        iam.create_user(UserName="wal-reader")
        policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
        iam.put_user_policy(UserName="wal-reader", PolicyName="read", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName="wal-reader")["AccessKey"]
        self.reader_key, self.reader_secret = key["AccessKeyId"], key["SecretAccessKey"]

    def require_signatures(self, on: bool = True) -> None:
        """From now on every request must be signed by known keys allowed to do it (moto's reset-auth)."""
        body = b"0" if on else b"inf"
        url = f"{self.endpoint}/moto-api/reset-auth"
        request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "text/plain"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200

    def env(self, **overrides: str) -> dict[str, str]:
        """The environment of a CLI run as the reader (no endpoint: tests pass --s3-endpoint or a config)."""
        return {
            "AWS_ACCESS_KEY_ID": self.reader_key,
            "AWS_SECRET_ACCESS_KEY": self.reader_secret,
            "AWS_SESSION_TOKEN": "",
            "AWS_REGION": REGION,
            "AWS_ENDPOINT_URL": "",
            "AWS_ENDPOINT_URL_S3": "",
            "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
            "MINIO_ACCESS_KEY": "",
            "MINIO_SECRET_KEY": "",
            **overrides,
        }


@contextlib.contextmanager
def moto_s3() -> Iterator[S3Server]:
    """moto's S3 (and IAM) on a free port of 127.0.0.1, stopped afterwards; signatures off again at the end."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    s3 = S3Server(f"http://127.0.0.1:{port}")
    # moto keeps its buckets and users per process, not per server: a second server in this process starts empty
    urllib.request.urlopen(urllib.request.Request(f"{s3.endpoint}/moto-api/reset", method="POST"), timeout=30).close()
    try:
        yield s3
    finally:
        with contextlib.suppress(Exception):
            s3.require_signatures(False)
        server.stop()
