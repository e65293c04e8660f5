"""What mqctl asks Milvus over gRPC: the migration's questions (row counts, FlushAll, load state, whether writes
are let through) over the generated stubs of mqctl.milvus.rpc, without pymilvus's client and its imports; the
doctor's segment questions and the sandbox's demo data through pymilvus's ``MilvusClient`` (`connect`). Never
writes user data."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from mqctl.errors import PreconditionError
from mqctl.milvus.protos import import_pymilvus
from mqctl.milvus.rpc import MilvusGrpc, MilvusRpcError
from mqctl.urls import split_url

Client = Any  # a pymilvus MilvusClient (pymilvus ships no types)


@dataclass
class MilvusTarget:
    """How to reach Milvus. Secrets are kept out of the journal (see `public`)."""

    uri: str
    user: str = ""
    password: str = ""
    token: str = ""
    server_pem: str = ""  # CA / server certificate for TLS
    server_name: str = ""

    def __post_init__(self) -> None:
        """Credentials written into the URI (http://user:password@host) become user/password,
        so the URI can be printed and journaled."""
        if not self.uri:
            return
        parts, user, password = split_url(self.uri, "--milvus")
        self.uri = parts.geturl()
        self.user = self.user or unquote(user or "")
        self.password = self.password or unquote(password or "")

    def public(self) -> dict[str, object]:
        return {
            "uri": self.uri,
            "user": self.user,
            "password_set": bool(self.password),
            "token_set": bool(self.token),
            "server_pem": self.server_pem,
            "server_name": self.server_name,
        }


def connect(target: MilvusTarget, timeout: float = 10, db: str = "") -> Client:
    """A MilvusClient (on database `db`), or exit 3 with what failed and what to check."""
    import logging

    import_pymilvus()
    from pymilvus import MilvusClient
    from pymilvus.exceptions import MilvusException

    logging.getLogger("pymilvus").setLevel(logging.CRITICAL)  # its RPC errors become one-line PreconditionErrors
    kwargs: dict[str, object] = {}
    if target.server_pem:
        kwargs.update(server_pem_path=target.server_pem, server_name=target.server_name or None, secure=True)
    try:
        return MilvusClient(
            uri=target.uri,
            user=target.user,
            password=target.password,
            token=target.token,
            db_name=db,
            timeout=timeout,
            **kwargs,
        )
    except (MilvusException, OSError) as err:
        raise PreconditionError(
            f"Milvus at {target.uri} is not reachable: {getattr(err, 'message', err)}",
            hint="check --milvus (host:port of the gRPC proxy), credentials and TLS options",
        ) from err


@dataclass
class QuotaStates:
    """What the proxy's rate limiter enforces now, as CheckHealth reports it: states such as DenyToWrite,
    DenyToRead, WriteLimited, ReadLimited, each with the quota center's reason."""

    healthy: bool
    states: list[str]
    reasons: list[str]


def quota_states(client: Client, timeout: float) -> QuotaStates:
    """`MilvusService.CheckHealth`: the proxy answers with its rate limiter's quota states and their reasons
    (milvus internal/proxy/impl.go CheckHealth, multi_rate_limiter.go GetQuotaStates; 2.2.x-2.6). A deny set by
    `quotaAndLimits.limitWriting.forceDeny` reads `DenyToWrite` / "the writing has been deactivated by the
    administrator"; memory, disk and time-tick protection give their own reasons. pymilvus 2.6 has no
    MilvusClient method for it: the RPC goes through the client's gRPC handler, as FlushAll does."""
    import_pymilvus()
    import grpc
    from pymilvus.grpc_gen import milvus_pb2

    try:
        answer = client._get_connection()._stub.CheckHealth(milvus_pb2.CheckHealthRequest(), timeout=timeout)
    except grpc.RpcError as err:
        raise PreconditionError(f"CheckHealth failed: {err.code().name} {err.details() or ''}".strip()) from None
    return QuotaStates(
        bool(answer.isHealthy),
        [milvus_pb2.QuotaState.Name(state) for state in answer.quota_states],
        list(answer.reasons),
    )


def count_rows(client: Client, collection: str) -> int:
    """Rows visible now (deletes applied), with strong consistency; the collection must be loaded."""
    result = client.query(collection, filter="", output_fields=["count(*)"], consistency_level="Strong")
    return int(result[0]["count(*)"])


def rows_not_flushed_at_least(client: Client, collection: str) -> int:
    """The rows Milvus serves now (count(*)) minus the rows of the collection's Flushed segments (datacoord's
    GetPersistentSegmentInfo): a lower bound of the rows that exist only in growing, unflushed segments (deletes
    lower it; 2.3.5 lists no growing segment with its rows). The collection must be loaded."""
    visible = count_rows(client, collection)
    flushed = sum(int(s.num_rows) for s in client.list_persistent_segments(collection) if s.state_name == "Flushed")
    return max(visible - flushed, 0)


def wait_loaded(client: Client, collection: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if is_loaded(client, collection):
            return True
        time.sleep(0.5)
    return False


def is_loaded(client: Client, collection: str) -> bool:
    import_pymilvus()
    from pymilvus.client.types import LoadState

    return bool(client.get_load_state(collection)["state"] == LoadState.Loaded)


SEGMENT_STATS = "segment-stats"  # how a collection that cannot be loaded is counted


def collection_counts(rpc: MilvusGrpc, *, load: bool = True, load_timeout: float = 300) -> dict[str, dict[str, Any]]:
    """`db/collection` -> {rows, was_loaded, method} for every collection of every database, asked over `rpc`
    (the generated stubs, not pymilvus's client: see mqctl.milvus.rpc).

    Counting (`count(*)`, method `query`) needs a loaded collection. With `load`, collections that
    were not loaded are loaded (the verify step has to load them anyway); without, their rows are
    None. A collection without an index cannot be loaded at all: its rows are the row count of
    its flushed segments (GetCollectionStatistics, method `segment-stats`), which after FlushAll
    covers every row (deleted rows included until a compaction drops them).
    """
    return count_loaded(rpc, start_loading(rpc, load=load), load_timeout)


@dataclass
class PendingCount:
    """A collection as `start_loading` found it: its load (if it needed one) asked for, not yet waited for."""

    key: str  # db/collection
    name: str
    db: str  # "" for the default database, as the requests take it
    was_loaded: bool
    counts: dict[str, Any] | None = None  # already known (segment statistics, or not counted without `load`)


def start_loading(rpc: MilvusGrpc, *, load: bool = True) -> list[PendingCount]:
    """Every collection's state, and LoadCollection asked for each one to be counted that is not loaded, all
    at once: Milvus loads them side by side, and the verify step asks while it still waits for the deny."""
    try:
        return _start_loading(rpc, load)
    except MilvusRpcError as err:
        raise _counting_failed(rpc, err) from None


def count_loaded(rpc: MilvusGrpc, pending: list[PendingCount], load_timeout: float) -> dict[str, dict[str, Any]]:
    """Wait for each collection `start_loading` found to be loaded (up to `load_timeout` each), then count it."""
    try:
        return {
            entry.key: entry.counts if entry.counts is not None else _count(rpc, entry, load_timeout)
            for entry in pending
        }
    except MilvusRpcError as err:
        raise _counting_failed(rpc, err) from None


def _counting_failed(rpc: MilvusGrpc, err: MilvusRpcError) -> PreconditionError:
    return PreconditionError(
        f"counting rows at {rpc.uri} failed: {err.message}",
        hint="check Milvus's health and log, then run the command again",
    )


def _start_loading(rpc: MilvusGrpc, load: bool) -> list[PendingCount]:
    pending: list[PendingCount] = []
    for db in rpc.databases():
        on = "" if db == "default" else db
        for name in rpc.collections(on):
            entry = PendingCount(f"{db}/{name}", name, on, rpc.is_loaded(name, on))
            if not entry.was_loaded and not rpc.has_index(name, on):
                entry.counts = {"rows": rpc.statistics_rows(name, on), "was_loaded": False, "method": SEGMENT_STATS}
            elif not entry.was_loaded and not load:
                entry.counts = {"rows": None, "was_loaded": False}
            elif not entry.was_loaded:
                rpc.load(name, on)
            pending.append(entry)
    return pending


def _count(rpc: MilvusGrpc, entry: PendingCount, load_timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + load_timeout
    if not _wait(lambda: rpc.is_loaded(entry.name, entry.db), load_timeout, 0.2):
        raise PreconditionError(
            f"collection {entry.key} did not load within {load_timeout:.0f} s",
            hint="check the Milvus log for load errors; counts need a loaded collection",
        )
    rows = rpc.count_rows(entry.name, entry.db, timeout=max(deadline - time.monotonic(), rpc.timeout))
    return {"rows": rows, "was_loaded": entry.was_loaded, "method": "query"}


def _wait(done: Callable[[], bool], timeout: float, interval: float) -> bool:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
    return True


def release(rpc: MilvusGrpc, names: list[str]) -> None:
    """Release `db/collection`s that were loaded only to be counted."""
    for key in names:
        db, name = key.split("/", 1)
        rpc.release(name, "" if db == "default" else db)


WRITES_DENIED, WRITES_OPEN, WRITES_UNKNOWN = "denied", "open", "unknown"
FORCE_DENY_CODE = 48  # commonpb.ErrorCode.ForceDeny
EMPTY_INSERT = "num_rows should be greater than 0"


def write_probe(rpc: MilvusGrpc, collection: str, db: str = "") -> str:
    """Whether Milvus lets writes through now, asked with an insert of zero rows into `collection`.

    The proxy's rate limiter answers before the insert is looked at: with forceDeny in effect the request
    is refused with ForceDeny (code 9, error code 48); otherwise it reaches the insert task, which refuses
    an empty insert (`num_rows should be greater than 0`, 2.3.5). Either way nothing is written. Any other
    answer (another Milvus version, another limit) is `unknown`: the caller then falls back to waiting.
    Raises MilvusRpcError when Milvus does not answer.
    """
    code, reason = rpc.empty_insert(collection, db)
    if code == FORCE_DENY_CODE or "deactivated by the administrator" in reason:
        return WRITES_DENIED
    if EMPTY_INSERT in reason:
        return WRITES_OPEN
    return WRITES_UNKNOWN


FLUSH_STATE_INTERVAL = 0.1  # GetFlushAllState is a cheap read of datacoord's channel checkpoints
# FlushAll is sent again when its state is not done after FLUSH_RESEND_AFTER, then every FLUSH_RESEND_EVERY.
FLUSH_RESEND_AFTER = 2.0
FLUSH_RESEND_EVERY = 5.0


def flush_all(rpc: MilvusGrpc, timeout: float, on_wait: Callable[[float], None] | None = None) -> dict[str, Any]:
    """FlushAll, then poll GetFlushAllState every FLUSH_STATE_INTERVAL until every channel passed the flush ts.

    (`MilvusClient.flush_all` polls every 5 s; the flush step is inside the write-denied window.)

    Why FlushAll is sent again: in Milvus 2.3.5 the proxy flushes each collection first and takes the FlushAll
    timestamp after them, and the data node moves a channel's checkpoint when it reaches that collection's own,
    earlier flush timestamp, then only every minute (`updateChanCPInterval`, a constant;
    `internal/datanode/flow_graph_time_tick_node.go`, `channel_checkpoint_updater.go` at 9aceff5a6, the commit
    the PyPI package's binary names). A channel with nothing buffered can so stop just short of the FlushAll
    timestamp, and GetFlushAllState (`internal/datacoord/services.go`) stays false for up to 60 s: on a sandbox,
    1 in 150 FlushAlls with 2 collections, 37 in 150 with 18. A second FlushAll gives every channel a flush
    timestamp past the first's, so the next time tick moves it on (36 of 36 such waits ended 0.33-0.35 s after
    it). The second's own timestamp is not waited for. It writes no data: with writes denied no segment is
    growing, with writes open (the preflight's FlushAll) it seals the growing ones as any Flush does. It is not
    a write the deny refuses (DDLFlush); its refusal (a `quotaAndLimits.flushRate`) only means waiting as
    before."""
    started = time.monotonic()
    resent = 0
    try:
        flush_ts = rpc.flush_all()
        resend_at = started + FLUSH_RESEND_AFTER
        while not rpc.flush_all_done(flush_ts):
            now = time.monotonic()
            waited = now - started
            if waited > timeout:
                raise PreconditionError(
                    f"FlushAll not finished after {timeout:.0f} s (flush_all_ts {flush_ts})",
                    hint="Milvus is still flushing: run `mqctl migrate resume` to wait again",
                )
            if now >= resend_at:
                resend_at = now + FLUSH_RESEND_EVERY
                try:
                    rpc.flush_all()
                    resent += 1
                except MilvusRpcError:
                    pass  # refused or timed out: GetFlushAllState below says whether Milvus still answers
            if on_wait:
                on_wait(waited)
            time.sleep(FLUSH_STATE_INTERVAL)
    except MilvusRpcError as err:
        raise PreconditionError(
            f"FlushAll failed: {err.message}", hint="check Milvus's health and log, then `mqctl migrate resume`"
        ) from None
    return {"flush_all_ts": flush_ts, "seconds": round(time.monotonic() - started, 3), "resent": resent}
