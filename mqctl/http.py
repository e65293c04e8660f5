"""One HTTP client per process: building one loads the CA bundle (~40 ms), and health checks poll."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx


@functools.lru_cache(maxsize=1)
def client() -> httpx.Client:
    import httpx

    return httpx.Client()
