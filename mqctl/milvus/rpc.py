"""The questions the doctor and the migration ask a running Milvus over gRPC (version, databases, collections, load
states, CheckHealth; row counts, load/release, FlushAll and its state, the zero-row insert probe), through the stubs
pymilvus generates from Milvus's protos and grpc itself, without pymilvus's client.

Importing pymilvus's package takes about 0.7 s (its __init__ pulls in pandas, numpy and its ORM); the generated
modules and grpc about 0.13 s. `mqctl.milvus.protos.pb2` loads them (under the one lock every pymilvus load
takes). The RPCs are those of MilvusService (milvus proto/milvus.proto; pymilvus's grpc_handler sends the same
requests): GetVersion, ListDatabases, ShowCollections, GetLoadState, CheckHealth, DescribeIndex,
GetCollectionStatistics, LoadCollection, ReleaseCollection, Query, FlushAll, GetFlushAllState, Insert; credentials
go as pymilvus sends them, metadata `authorization` = base64("user:password") or base64(token), the database as
`dbname` and in the request."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from mqctl.errors import PreconditionError
from mqctl.milvus.protos import pb2


class Access(Protocol):
    """How to reach Milvus (mqctl.milvus.client.MilvusTarget)."""

    uri: str
    user: str
    password: str
    token: str
    server_pem: str
    server_name: str


LOADED = "LoadStateLoaded"  # common.proto LoadState
STRONG = 0  # common.proto ConsistencyLevel.Strong: the proxy assigns the newest timestamp (pymilvus sends 0 too)
INDEX_NOT_FOUND_CODE, INDEX_NOT_EXIST_ERROR = 700, 25  # Status.code (2.4+) / ErrorCode.IndexNotExist (2.3)


class MilvusRpcError(PreconditionError):
    """A Milvus RPC that failed: gRPC's status or Milvus's own (Status.code / error_code and reason)."""


@dataclass
class MilvusGrpc:
    """One channel to a Milvus proxy; `uri` as the doctor has it (http://host:port, https://..., host:port)."""

    uri: str
    timeout: float = 10
    user: str = ""
    password: str = field(default="", repr=False)  # secrets stay out of any repr
    token: str = field(default="", repr=False)
    server_pem: str = ""
    server_name: str = ""  # the TLS name to check the certificate against, when not the host of `uri`
    _channel: Any = field(default=None, repr=False)
    _stub: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        import grpc

        parts = urlsplit(self.uri if "://" in self.uri else f"tcp://{self.uri}")
        address = f"{parts.hostname or 'localhost'}:{parts.port or 19530}"
        options: list[tuple[str, Any]] = [("grpc.max_receive_message_length", -1), ("grpc.enable_retries", 1)]
        if self.server_name:
            options.append(("grpc.ssl_target_name_override", self.server_name))
        if parts.scheme == "https" or self.server_pem:
            pem = open(self.server_pem, "rb").read() if self.server_pem else None  # noqa: SIM115
            self._channel = grpc.secure_channel(address, grpc.ssl_channel_credentials(pem), options=options)
        else:
            self._channel = grpc.insecure_channel(address, options=options)
        self._stub = pb2("milvus_pb2_grpc").MilvusServiceStub(self._channel)
        secret = self.token or (f"{self.user}:{self.password}" if self.user and self.password else "")
        self._auth = [("authorization", base64.b64encode(secret.encode()).decode())] if secret else []

    @classmethod
    def of(cls, target: Access, timeout: float = 10) -> MilvusGrpc:
        """A channel to `target` (credentials and TLS options as the operator gave them)."""
        return cls(
            target.uri,
            timeout,
            target.user,
            target.password,
            target.token,
            target.server_pem,
            target.server_name,
        )

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> MilvusGrpc:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(
        self, method: str, request: Any, db: str = "", *, check: bool = True, timeout: float | None = None
    ) -> Any:
        """The answer of `method` within `timeout` (else the channel's); MilvusRpcError when gRPC fails or (with
        `check`) Milvus's status is an error."""
        import grpc

        metadata = [*self._auth, *([("dbname", db)] if db else [])]
        try:
            answer = getattr(self._stub, method)(request, timeout=timeout or self.timeout, metadata=metadata)
        except grpc.RpcError as err:
            raise MilvusRpcError(f"{method}: {err.code().name} {err.details() or ''}".strip()) from None
        status = getattr(answer, "status", None) if check else None
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

    def has_index(self, collection: str, db: str = "") -> bool:
        """Whether the collection has an index (a collection without one cannot be loaded)."""
        request = pb2("milvus_pb2").DescribeIndexRequest(db_name=db, collection_name=collection)
        answer = self._call("DescribeIndex", request, db, check=False)
        status = answer.status
        if status.code == INDEX_NOT_FOUND_CODE or status.error_code == INDEX_NOT_EXIST_ERROR:
            return False
        if status.code != 0 or status.error_code != 0:
            raise MilvusRpcError(f"DescribeIndex: {status.reason or f'error code {status.code or status.error_code}'}")
        return len(answer.index_descriptions) > 0

    def statistics_rows(self, collection: str, db: str = "") -> int:
        """`row_count` of GetCollectionStatistics: the rows of the collection's flushed segments."""
        request = pb2("milvus_pb2").GetCollectionStatisticsRequest(db_name=db, collection_name=collection)
        stats = {kv.key: kv.value for kv in self._call("GetCollectionStatistics", request, db).stats}
        return int(stats.get("row_count", 0))

    def load(self, collection: str, db: str = "") -> None:
        """Start loading the collection (LoadCollection returns before it is loaded: see `is_loaded`)."""
        self._call(
            "LoadCollection", pb2("milvus_pb2").LoadCollectionRequest(db_name=db, collection_name=collection), db
        )

    def release(self, collection: str, db: str = "") -> None:
        request = pb2("milvus_pb2").ReleaseCollectionRequest(db_name=db, collection_name=collection)
        self._call("ReleaseCollection", request, db)

    def count_rows(self, collection: str, db: str = "", timeout: float | None = None) -> int:
        """`count(*)` with strong consistency: the rows visible now, deletes applied (the collection is loaded).
        A strong query waits until the query nodes have caught up with now (after a restart, until the time ticks
        flow again): give it the operation's `timeout`, not the channel's."""
        request = pb2("milvus_pb2").QueryRequest(
            db_name=db,
            collection_name=collection,
            expr="",
            output_fields=["count(*)"],
            guarantee_timestamp=0,
            use_default_consistency=False,
            consistency_level=STRONG,
        )
        for column in self._call("Query", request, db, timeout=timeout).fields_data:
            if column.field_name == "count(*)" and column.scalars.long_data.data:
                return int(column.scalars.long_data.data[0])
        raise MilvusRpcError(f"Query: no count(*) in the answer for {collection}")

    def flush_all(self) -> int:
        """FlushAll: its timestamp (GetFlushAllState says when every channel passed it)."""
        return int(self._call("FlushAll", pb2("milvus_pb2").FlushAllRequest()).flush_all_ts)

    def flush_all_done(self, flush_all_ts: int) -> bool:
        request = pb2("milvus_pb2").GetFlushAllStateRequest(flush_all_ts=flush_all_ts)
        return bool(self._call("GetFlushAllState", request).flushed)

    def empty_insert(self, collection: str, db: str = "") -> tuple[int, str]:
        """(error_code, reason) of an Insert of zero rows: refused either way, nothing is written (see
        `mqctl.milvus.client.write_probe`)."""
        request = pb2("milvus_pb2").InsertRequest(db_name=db, collection_name=collection, num_rows=0)
        status = self._call("Insert", request, db, check=False).status
        return int(status.error_code), str(status.reason)
