"""`s3://BUCKET[/PREFIX]`: how a Woodpecker WAL in a bucket is named on the command line, parsed once, checked
(a bucket name only, no endpoint or credentials in it)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mqctl.errors import InputError

S3_SCHEME = "s3://"
BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")


def is_s3_url(text: str) -> bool:
    return text.lower().startswith(S3_SCHEME)


@dataclass(frozen=True)
class S3Url:
    bucket: str
    prefix: str  # without leading or trailing slash; "" for the whole bucket

    def __str__(self) -> str:
        return f"{S3_SCHEME}{self.bucket}/{self.prefix}".rstrip("/")


def parse_s3_url(text: str) -> S3Url:
    """`s3://BUCKET[/PREFIX]`; anything else is bad input (exit 2)."""
    hint = "give s3://BUCKET/PREFIX, e.g. s3://a-bucket/files/wp (minio.bucketName, then minio.rootPath/wp)"
    if not is_s3_url(text):
        raise InputError(f"{text}: not an s3:// URL", hint=hint)
    rest = text[len(S3_SCHEME) :]
    bucket, _, prefix = rest.partition("/")
    if "@" in bucket or ":" in bucket:
        raise InputError(
            f"{S3_SCHEME}{bucket.rpartition('@')[2]}...: an s3:// URL names the bucket only",
            hint="pass the endpoint with --s3-endpoint and the credentials in the environment (AWS_ACCESS_KEY_ID...)",
        )
    if not BUCKET_NAME.match(bucket) or ".." in bucket:
        raise InputError(f"{text}: {bucket!r} is not a bucket name (3-63 of a-z, 0-9, '.', '-')", hint=hint)
    return S3Url(bucket, "/".join(part for part in prefix.split("/") if part))
