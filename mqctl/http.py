"""One HTTP client per process (building one loads the CA bundle, ~40 ms, and health checks poll), and
requests bounded by an overall deadline: httpx's timeouts apply to each read, so a server that sends its
headers and then drips the body one byte at a time would otherwise hold a command for as long as it likes."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

MAX_BODY = 64 * 1024 * 1024  # bytes: an answer larger than this is no etcd or health answer mqctl reads


class DeadlineExceeded(Exception):
    """The whole request (connect, headers and body) took longer than its deadline."""


class BodyTooLarge(Exception):
    """The answer's body passed MAX_BODY bytes."""


@dataclass(frozen=True)
class Answer:
    status_code: int
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")


@functools.lru_cache(maxsize=1)
def client() -> httpx.Client:
    import httpx

    return httpx.Client()


def request(method: str, url: str, *, timeout: float, json: Any = None, auth: tuple[str, str] | None = None) -> Answer:
    """One request that ends within `timeout` seconds overall, body included, or raises DeadlineExceeded
    (httpx.HTTPError for connection failures, BodyTooLarge past MAX_BODY)."""
    deadline = time.monotonic() + timeout
    with client().stream(method, url, json=json, timeout=timeout, auth=auth) as response:
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_BODY:
                raise BodyTooLarge(f"{url} answered more than {MAX_BODY} bytes")
            if time.monotonic() > deadline:
                raise DeadlineExceeded(f"{url} did not finish its answer within {timeout:g} s")
        if time.monotonic() > deadline:
            raise DeadlineExceeded(f"{url} did not finish its answer within {timeout:g} s")
        return Answer(response.status_code, b"".join(chunks))
