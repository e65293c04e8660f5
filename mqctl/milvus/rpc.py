"""The few questions the doctor asks a running Milvus over gRPC (version, databases, collections, load states,
CheckHealth), through the stubs pymilvus generates from Milvus's protos and grpc itself, without pymilvus's client.

Importing pymilvus's package takes about 0.7 s (its __init__ pulls in pandas, numpy and its ORM); the generated
modules and grpc about 0.13 s. `mqctl.milvus.protos.pb2` loads them (under the one lock every pymilvus load
takes). The RPCs are those of MilvusService (milvus proto/milvus.proto; pymilvus's grpc_handler sends the same
requests): GetVersion, ListDatabases, ShowCollections, GetLoadState, CheckHealth; credentials go as pymilvus sends
them, metadata `authorization` = base64("user:password") or base64(token), the database as `dbname` and in the
request."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from mqctl.errors import PreconditionError
from mqctl.milvus.protos import pb2

LOADED = "LoadStateLoaded"  # common.proto LoadState


class MilvusRpcError(PreconditionError):
    """A Milvus RPC that failed: gRPC's status or Milvus's own (Status.code / error_code and reason)."""


@dataclass
class MilvusGrpc:
    """One channel to a Milvus proxy; `uri` as the doctor has it (http://host:port, https://..., host:port)."""

    uri: str
    timeout: float = 10
    user: str = ""
    password: str = ""
    token: str = ""
    server_pem: str = ""
    _channel: Any = field(default=None, repr=False)
    _stub: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        import grpc

        parts = urlsplit(self.uri if "://" in self.uri else f"tcp://{self.uri}")
        address = f"{parts.hostname or 'localhost'}:{parts.port or 19530}"
        options = [("grpc.max_receive_message_length", -1), ("grpc.enable_retries", 1)]
        if parts.scheme == "https" or self.server_pem:
            pem = open(self.server_pem, "rb").read() if self.server_pem else None  # noqa: SIM115
            self._channel = grpc.secure_channel(address, grpc.ssl_channel_credentials(pem), options=options)
        else:
            self._channel = grpc.insecure_channel(address, options=options)
        self._stub = pb2("milvus_pb2_grpc").MilvusServiceStub(self._channel)
        secret = self.token or (f"{self.user}:{self.password}" if self.user and self.password else "")
        self._auth = [("authorization", base64.b64encode(secret.encode()).decode())] if secret else []

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> MilvusGrpc:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, request: Any, db: str = "") -> Any:
        import grpc

        metadata = [*self._auth, *([("dbname", db)] if db else [])]
        try:
            answer = getattr(self._stub, method)(request, timeout=self.timeout, metadata=metadata)
        except grpc.RpcError as err:
            raise MilvusRpcError(f"{method}: {err.code().name} {err.details() or ''}".strip()) from None
        status = getattr(answer, "status", None)
        if status is not None and (status.code != 0 or status.error_code != 0):
            raise MilvusRpcError(f"{method}: {status.reason or f'error code {status.code or status.error_code}'}")
        return answer

    def server_version(self) -> str:
        """`v2.3.5-lite` -> `2.3.5`."""
        answer = self._call("GetVersion", pb2("milvus_pb2").GetVersionRequest())
        return str(answer.version).lstrip("v").split("-")[0]

    def databases(self) -> list[str]:
        return list(self._call("ListDatabases", pb2("milvus_pb2").ListDatabasesRequest()).db_names)

    def collections(self, db: str = "") -> list[str]:
        request = pb2("milvus_pb2").ShowCollectionsRequest(db_name=db)
        return sorted(self._call("ShowCollections", request, db).collection_names)

    def is_loaded(self, collection: str, db: str = "") -> bool:
        request = pb2("milvus_pb2").GetLoadStateRequest(collection_name=collection, db_name=db)
        state = self._call("GetLoadState", request, db).state
        return bool(pb2("common_pb2").LoadState.Name(state) == LOADED)

    def check_health(self) -> tuple[bool, list[str], list[str]]:
        """(healthy, quota states by name, reasons) as the proxy's CheckHealth reports them."""
        milvus_pb2 = pb2("milvus_pb2")
        answer = self._call("CheckHealth", milvus_pb2.CheckHealthRequest())
        return (
            bool(answer.isHealthy),
            [milvus_pb2.QuotaState.Name(state) for state in answer.quota_states],
            list(answer.reasons),
        )
