"""The sessions of a stopped Milvus on a real etcd: journaled with their leases, and only those leases revoked."""

from __future__ import annotations

import base64

import pytest

pytestmark = pytest.mark.etcd


def _post(url: str, endpoint: str, body: dict) -> dict:
    import httpx

    response = httpx.post(f"{url}{endpoint}", json=body, timeout=5)
    response.raise_for_status()
    return response.json()


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _session(url: str, key: str, ttl: int = 60) -> str:
    """A key bound to a new lease, as a Milvus component registers its session; returns the lease id."""
    lease = _post(url, "/v3/lease/grant", {"TTL": ttl})["ID"]
    _post(url, "/v3/kv/put", {"key": _b64(key), "value": _b64("{}"), "lease": lease})
    return str(lease)


def _keys(url: str, prefix: str) -> list[str]:
    end = bytearray(prefix.encode())
    end[-1] += 1
    answer = _post(url, "/v3/kv/range", {"key": _b64(prefix), "range_end": base64.b64encode(bytes(end)).decode()})
    return sorted(base64.b64decode(kv["key"]).decode() for kv in answer.get("kvs", []))


def _options(etcd_url: str, root: str, tmp_path):
    from mqctl.migrate.options import MigrateOptions
    from mqctl.milvus.client import MilvusTarget

    config = tmp_path / "milvus.yaml"
    config.write_text("mq:\n  type: rocksmq\n")
    return MigrateOptions(
        configs=[str(config)], to="natsmq", milvus=MilvusTarget("http://127.0.0.1:1"), etcd=etcd_url, etcd_root=root
    )


def test_the_stopped_milvus_sessions_are_revoked_and_the_new_ones_kept(etcd_url, tmp_path):
    from mqctl.migrate.sessions import read_sessions, revoke_sessions

    options = _options(etcd_url, "sess", tmp_path)
    old_proxy = _session(etcd_url, "sess/meta/session/proxy-1")
    old_coord = _session(etcd_url, "sess/meta/session/rootcoord")
    _post(etcd_url, "/v3/kv/put", {"key": _b64("sess/meta/session/id"), "value": _b64("2")})  # no lease: kept
    stopped = read_sessions(options)
    assert sorted((s["key"], s["lease"]) for s in stopped) == [
        ("sess/meta/session/proxy-1", old_proxy),
        ("sess/meta/session/rootcoord", old_coord),
    ]
    # the new Milvus registers its own sessions (the coordinator's key again, on a lease of its own)
    _post(etcd_url, "/v3/lease/revoke", {"ID": old_coord})  # its old coordinator stopped cleanly
    new_coord = _session(etcd_url, "sess/meta/session/rootcoord")
    _session(etcd_url, "sess/meta/session/proxy-2")
    handled: dict[str, bool] = {}
    assert revoke_sessions(options, stopped, handled)
    assert handled == {old_proxy: True, old_coord: False}  # revoked now / already gone
    assert _keys(etcd_url, "sess/meta/session/") == [
        "sess/meta/session/id",
        "sess/meta/session/proxy-2",
        "sess/meta/session/rootcoord",
    ]
    assert [s["lease"] for s in read_sessions(options) if s["key"].endswith("rootcoord")] == [new_coord]


def test_revoking_waits_for_an_etcd_that_does_not_answer_yet(tmp_path):
    from mqctl.host.ports import free_ports
    from mqctl.migrate.sessions import revoke_sessions

    options = _options(f"http://127.0.0.1:{free_ports(1)[0]}", "sess", tmp_path)
    handled: dict[str, bool] = {}
    assert not revoke_sessions(options, [{"key": "sess/meta/session/proxy-1", "lease": "7"}], handled)
    assert handled == {}
