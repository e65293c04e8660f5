"""Overrides Milvus reads above its yaml: environment variables and etcd keys under `<root>/config/`.

Milvus matches both to config keys after normalising names (lower-case, `/ _ .` dropped),
so `MQ_TYPE` and `by-dev/config/mq/type` both mean `mq.type`. Precedence: etcd > env > yaml.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from mqctl.config.known_keys import normalize_key
from mqctl.config.settings import Setting
from mqctl.errors import InputError, PreconditionError
from mqctl.urls import safe_url, split_url


def env_settings(env: dict[str, str], wanted: dict[str, str]) -> dict[str, Setting]:
    """Environment variables whose normalised name is one of `wanted` (normal form -> display key)."""
    found: dict[str, Setting] = {}
    for name, value in env.items():
        normal = normalize_key(name)
        if normal in wanted:
            found[normal] = Setting(wanted[normal], value, None, None, "env", name)
    return found


@dataclass
class EtcdValue:
    key: str  # raw etcd key, e.g. by-dev/config/mq/type
    value: str


class NormalizedKeys(dict[str, EtcdValue]):
    """Milvus keys as written in etcd ('mq.type'); lookups match the way Milvus does, so
    `keys["mq.type"]`, `keys["mqtype"]` and `keys["MQ_TYPE"]` find the same entry."""

    def __init__(self) -> None:
        super().__init__()
        self._index: dict[str, str] = {}

    def __setitem__(self, key: str, value: EtcdValue) -> None:
        self._index[normalize_key(key)] = key
        super().__setitem__(key, value)

    def _real(self, key: str) -> str:
        return self._index.get(normalize_key(key), key)

    def __getitem__(self, key: str) -> EtcdValue:
        return super().__getitem__(self._real(key))

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and normalize_key(key) in self._index

    def get(self, key: str, default: EtcdValue | None = None) -> EtcdValue | None:  # type: ignore[override]
        return super().get(self._real(key), default)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _prefix_end(prefix: str) -> str:
    """The range_end that makes an etcd range request cover every key with `prefix`."""
    raw = bytearray(prefix.encode())
    raw[-1] += 1
    return base64.b64encode(bytes(raw)).decode()


DEFAULT_ETCD_ROOT = "by-dev"  # Milvus's etcd.rootPath default (configs/milvus.yaml)
DEFAULT_CHANNEL_PREFIX = "by-dev"  # Milvus's msgChannel.chanNamePrefix.cluster default: the same word, another key


class EtcdConfig:
    """Milvus config overrides in etcd, through etcd v3's JSON gateway (no gRPC needed)."""

    def __init__(self, url: str, root: str = DEFAULT_ETCD_ROOT, timeout: float = 5.0):
        if not url.startswith(("http://", "https://")):
            url = "http://" + url
        from urllib.parse import unquote

        parts, user, password = split_url(url, "--etcd")
        # user:password@ (the password up to the last @) is sent as basic auth, never as part of the URL, so
        # neither httpx's parser nor an error quoting the URL ever sees it
        self.url = parts.geturl().rstrip("/")
        self.auth = None if user is None else (unquote(user), unquote(password or ""))
        self.shown = safe_url(url.rstrip("/"))
        self.root = root.strip("/")
        self.timeout = timeout

    @property
    def prefix(self) -> str:
        return f"{self.root}/config/"

    def _post(self, endpoint: str, body: dict[str, object]) -> dict[str, Any]:
        import json

        import httpx

        from mqctl import http

        try:
            response = http.request("POST", f"{self.url}{endpoint}", json=body, timeout=self.timeout, auth=self.auth)
        except httpx.HTTPError as err:
            raise PreconditionError(
                f"etcd at {self.shown} is unreachable: {err}",
                hint="check --etcd URL (the client port, e.g. http://127.0.0.1:2379)",
            ) from None
        except (http.DeadlineExceeded, http.BodyTooLarge) as err:
            raise PreconditionError(
                f"etcd at {self.shown} did not answer {endpoint} in time: {str(err).replace(self.url, self.shown)}",
                hint="check that --etcd is etcd's client URL and that etcd is healthy",
            ) from None
        if response.status_code != 200:
            raise PreconditionError(
                f"etcd at {self.shown} answered {endpoint} with HTTP {response.status_code}: "
                f"{response.text.strip()[:200]}"
            )
        try:
            answer = json.loads(response.content)
        except (ValueError, RecursionError):
            answer = None
        if not isinstance(answer, dict):
            raise PreconditionError(
                f"{self.shown} did not answer like etcd's JSON gateway", hint="give etcd's client URL"
            ) from None
        return answer

    def get_prefix(self, prefix: str) -> list[tuple[str, bytes]]:
        """Every (key, raw value) under `prefix`, in key order; values stay bytes (Milvus meta is protobuf)."""
        answer = self._post("/v3/kv/range", {"key": _b64(prefix), "range_end": _prefix_end(prefix)})
        kvs = answer.get("kvs", [])
        try:
            if not isinstance(kvs, list):
                raise TypeError("kvs is not a list")
            return [
                (base64.b64decode(kv["key"], validate=True).decode(errors="replace"),
                 base64.b64decode(kv.get("value", ""), validate=True))
                for kv in kvs
            ]  # fmt: skip
        except (TypeError, KeyError, ValueError, AttributeError) as err:
            raise PreconditionError(
                f"etcd at {self.shown} answered a range under {prefix!r} that is not etcd's: {err}",
                hint="give etcd's client URL (the JSON gateway's keys and values are base64)",
            ) from None

    def read(self) -> NormalizedKeys:
        """Milvus key ('mq.type', matched as Milvus normalises it) -> raw etcd key and value."""
        values = NormalizedKeys()
        for raw_key, value in self.get_prefix(self.prefix):
            values[raw_key[len(self.prefix) :].replace("/", ".")] = EtcdValue(raw_key, value.decode(errors="replace"))
        return values

    def count_under(self, sub: str) -> int:
        """How many keys lie under `<root>/<sub>/` (e.g. `meta/session`: the sessions of a running Milvus)."""
        prefix = f"{self.root}/{sub.strip('/')}/"
        answer = self._post("/v3/kv/range", {"key": _b64(prefix), "range_end": _prefix_end(prefix), "count_only": True})
        return int(answer.get("count", 0))

    def leases_under(self, sub: str) -> list[tuple[str, str]]:
        """(key, lease id) of every key under `<root>/<sub>/` that is bound to a lease (e.g. `meta/session`)."""
        prefix = f"{self.root}/{sub.strip('/')}/"
        answer = self._post("/v3/kv/range", {"key": _b64(prefix), "range_end": _prefix_end(prefix), "keys_only": True})
        try:
            return [
                (base64.b64decode(kv["key"], validate=True).decode(errors="replace"), str(kv["lease"]))
                for kv in answer.get("kvs", [])
                if str(kv.get("lease", "0")) != "0"
            ]
        except (TypeError, KeyError, ValueError, AttributeError) as err:
            raise PreconditionError(
                f"etcd at {self.shown} answered a range under {prefix!r} that is not etcd's: {err}"
            ) from None

    def revoke_lease(self, lease: str) -> bool:
        """Revoke a lease (its keys go with it); False when etcd knows no such lease (expired or revoked)."""
        try:
            self._post("/v3/lease/revoke", {"ID": lease})
        except PreconditionError as err:
            if "lease not found" in err.message:
                return False
            raise
        return True

    def _full_key(self, path: str) -> str:
        path = path.strip("/")
        if not path:
            raise InputError("empty etcd config path", hint="e.g. quotaAndLimits/limitWriting/forceDeny")
        return self.prefix + path

    def put(self, path: str, value: str) -> None:
        """Set `<root>/config/<path>`; path like 'quotaAndLimits/limitWriting/forceDeny'."""
        self._post("/v3/kv/put", {"key": _b64(self._full_key(path)), "value": _b64(value)})

    def delete(self, path: str) -> None:
        self._post("/v3/kv/deleterange", {"key": _b64(self._full_key(path))})

    def settings(self, wanted: dict[str, str]) -> dict[str, Setting]:
        """Overrides found in etcd as Settings; keys mqctl does not know keep their etcd spelling."""
        found: dict[str, Setting] = {}
        for key, item in self.read().items():
            normal = normalize_key(key)
            found[normal] = Setting(wanted.get(normal, key), item.value, None, None, "etcd", item.key)
        return found
