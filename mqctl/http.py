"""One HTTP client per process: building one loads the CA bundle (~40 ms), and health checks poll."""

from __future__ import annotations

import functools


@functools.lru_cache(maxsize=1)
def client():
    import httpx

    return httpx.Client()
