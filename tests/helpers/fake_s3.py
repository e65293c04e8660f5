"""A fake of the two calls storage.S3Prefix makes of the MinIO SDK (list_objects, get_object) over a dict, counting
them: for tests/mq/woodpecker/test_s3_reads.py (one listing, each object once, the GETs at once) and the in-memory
figure of bench/woodpecker_scale.py (the reader without a network)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

BUCKET = "a-bucket"


class Response:
    def __init__(self, store: FakeS3, data: bytes):
        self.store, self.data, self.at = store, data, 0
        self.headers = {"Content-Length": str(len(data))}

    def read(self, size: int) -> bytes:
        chunk = self.data[self.at : self.at + size]
        self.at += len(chunk)
        return chunk

    def close(self) -> None:
        with self.store.lock:
            self.store.open_now -= 1

    def release_conn(self) -> None:
        pass


class Item:
    def __init__(self, name: str):
        self.object_name = name


class FakeS3:
    """The two calls storage.S3Prefix makes of the MinIO SDK, over a dict, counting them."""

    def __init__(self, objects: dict[str, bytes], round_trip: float = 0.005):
        self.objects, self.round_trip = objects, round_trip
        self.listings = 0
        self.gets: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.open_now = self.most_open = 0

    def list_objects(self, bucket: str, prefix: str, recursive: bool = False) -> Any:
        assert bucket == BUCKET and recursive
        self.listings += 1
        return (Item(key) for key in sorted(self.objects) if key.startswith(prefix))

    def get_object(self, bucket: str, key: str) -> Response:
        with self.lock:
            self.gets[key] += 1
            self.open_now += 1
            self.most_open = max(self.most_open, self.open_now)
        time.sleep(
            self.round_trip
        )  # so that GETs made at once overlap (0: the reader alone, bench/woodpecker_scale.py)
        return Response(self, self.objects[key])
