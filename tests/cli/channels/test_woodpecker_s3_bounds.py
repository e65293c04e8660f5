"""S3 reads under a total deadline and a size cap (issue 29, class 2), against a deliberately broken S3 server on
127.0.0.1: one that drips an object's body a byte at a time, answers a listing only after the deadline, or answers
`IsTruncated=true` with the same continuation token forever, and one that lists a key ending in a newline (which
moto does not store). Each run ends within the deadline with one line and exit 3, or with the named problem."""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from xml.sax.saxutils import escape

import pytest

from tests.helpers import woodpecker_segments as w
from tests.helpers.cli import run_cli

DEADLINE = 1.5
ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_REGION": "us-east-1",
    "AWS_ENDPOINT_URL": "",
    "AWS_ENDPOINT_URL_S3": "",
    "MQCTL_S3_DEADLINE": str(DEADLINE),
}


class BrokenS3(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, mode: str, objects: dict[str, bytes]):
        super().__init__(("127.0.0.1", 0), Handler)
        self.mode, self.objects, self.stopping = mode, objects, threading.Event()


class Handler(BaseHTTPRequestHandler):
    server: BrokenS3

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        if "list-type" in query:
            return self._list(query)
        key = urllib.parse.unquote(url.path.split("/", 2)[2])
        body = self.server.objects[key]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.server.mode == "drip":
            for byte in body:
                if self.server.stopping.wait(0.2):
                    return
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
        elif self.server.mode == "short" and key.endswith("/1.blk"):  # the announced length, then closed half way
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
        else:
            self.wfile.write(body)

    def _list(self, query: dict[str, list[str]]) -> None:
        mode = self.server.mode
        if mode == "slow-list":
            self.server.stopping.wait(60)
        contents = (
            ""
            if mode == "endless"
            else "".join(
                f"<Contents><Key>{escape(key).replace(chr(10), '&#10;')}</Key><LastModified>2026-01-01T00:00:00.000Z"
                f'</LastModified><ETag>"e"</ETag><Size>{len(body)}</Size><StorageClass>STANDARD</StorageClass></Contents>'
                for key, body in sorted(self.server.objects.items())
            )
        )
        truncated = (
            "<IsTruncated>true</IsTruncated><NextContinuationToken>same</NextContinuationToken>"
            if mode == ("endless")
            else "<IsTruncated>false</IsTruncated>"
        )
        xml = (
            '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            f"<Name>wal</Name><Prefix>{escape(query.get('prefix', [''])[0])}</Prefix><MaxKeys>1000</MaxKeys>"
            f"{truncated}{contents}</ListBucketResult>"
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(xml)))
        self.end_headers()
        self.wfile.write(xml)


def _segment_objects(prefix: str, tmp_path: Path) -> dict[str, bytes]:
    folder = tmp_path / "seg"
    w.object_segment(folder, [w.messages(2), w.messages(2, 2)])
    return {f"{prefix}/7/0/{path.name}": path.read_bytes() for path in sorted(folder.iterdir())}


@pytest.fixture
def broken(request, tmp_path) -> Iterator[str]:
    mode, extra = request.param
    objects = _segment_objects("wp", tmp_path)
    objects.update({key: objects[source] for key, source in extra.items()})
    server = BrokenS3(mode, objects)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.stopping.set()
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "broken",
    [("drip", {}), ("slow-list", {}), ("endless", {})],
    ids=["dripping body", "slow listing", "same token forever"],
    indirect=True,
)
def test_a_stuck_server_ends_in_one_line_within_the_deadline(broken):
    started = time.monotonic()
    result = run_cli("channels", "woodpecker", "s3://wal/wp", "--s3-endpoint", broken, env=ENV)
    took = time.monotonic() - started
    assert result.code == 3, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("error: ") and f"no whole answer within {DEADLINE:g} s" in lines[0], lines
    assert "Traceback" not in result.stderr
    assert took < DEADLINE * 10, took  # a hang guard, generous: the point is that it ends


@pytest.mark.parametrize("broken", [("plain", {"wp/7/0/1.blk\n": "wp/7/0/1.blk"})], indirect=True)
def test_a_key_ending_in_a_newline_is_named_not_read_as_a_block(broken):
    result = run_cli("channels", "woodpecker", "s3://wal/wp", "--s3-endpoint", broken, "--json", env=ENV)
    assert result.code == 1, result.stderr
    (segment,) = result.json()["segments"]
    assert (segment["state"], segment["entries"], segment["blocks"]) == ("finalized", 4, 2)
    (problem,) = segment["problems"]
    assert "'1.blk\\n' is not a canonical block name" in problem and "s3://wal/wp/7/0/1.blk\n" in problem


@pytest.mark.parametrize("broken", [("plain", {})], indirect=True)
def test_an_object_past_the_size_cap_is_named_not_read(broken):
    result = run_cli(
        "channels", "woodpecker", "s3://wal/wp", "--s3-endpoint", broken, "--json",
        env={**ENV, "MQCTL_WOODPECKER_MAX_BYTES": "100"},
    )  # fmt: skip
    assert result.code == 1, result.stderr
    (segment,) = result.json()["segments"]
    assert segment["entries"] == 0
    assert any("0.blk holds" in p and "more than the 100-byte cap" in p for p in segment["problems"])


@pytest.mark.parametrize("broken", [("short", {})], indirect=True)
def test_a_body_cut_short_is_an_error_not_fewer_entries(broken):
    """A GET whose body ends before its Content-Length (the connection closed half way) is never read as a shorter
    object: the blocks' CRCs are computed by the fetching threads, from what was received in full only."""
    result = run_cli("channels", "woodpecker", "s3://wal/wp", "--s3-endpoint", broken, env=ENV)
    assert result.code == 3, result.stdout + result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: reading s3://wal/wp/7/0/1.blk at ") and "IncompleteRead" in line, line
