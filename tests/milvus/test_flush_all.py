"""`flush_all`'s wait (pure logic over a scripted Milvus): a FlushAll whose state stays false is sent again, the
first one's timestamp is what is waited for, and a refused re-send only means waiting on. The same against a
real Milvus with writes denied: tests/e2e/test_flush_all_milvus.py."""

from __future__ import annotations

import pytest

from mqctl.errors import PreconditionError
from mqctl.milvus import client as milvus_client
from mqctl.milvus.rpc import MilvusRpcError


class StuckDataNode:
    """Milvus 2.3.5's race, scripted: the FlushAll's state stays false until a later FlushAll gives the idle
    channel a flush timestamp past it (`refuse` re-sends are refused first, as a flush rate limit would)."""

    def __init__(self, refuse: int = 0) -> None:
        self.sent: list[int] = []
        self.asked: list[int] = []
        self.refuse = refuse

    def flush_all(self) -> int:
        if self.sent and self.refuse:
            self.refuse -= 1
            raise MilvusRpcError("FlushAll: rate limit exceeded")
        self.sent.append(1000 + len(self.sent))
        return self.sent[-1]

    def flush_all_done(self, flush_all_ts: int) -> bool:
        self.asked.append(flush_all_ts)
        return len(self.sent) > 1


@pytest.fixture(autouse=True)
def quick(monkeypatch):
    monkeypatch.setattr(milvus_client, "FLUSH_STATE_INTERVAL", 0.01)
    monkeypatch.setattr(milvus_client, "FLUSH_RESEND_AFTER", 0.05)
    monkeypatch.setattr(milvus_client, "FLUSH_RESEND_EVERY", 0.1)


def test_a_flush_all_stuck_short_of_its_timestamp_is_sent_again_and_its_own_timestamp_waited_for():
    milvus = StuckDataNode()
    flushed = milvus_client.flush_all(milvus, timeout=5)  # type: ignore[arg-type]
    assert flushed["flush_all_ts"] == 1000 and flushed["resent"] == 1
    assert milvus.sent == [1000, 1001] and set(milvus.asked) == {1000}
    assert flushed["seconds"] < 1


def test_a_refused_re_send_is_tried_again_later_and_the_wait_goes_on():
    milvus = StuckDataNode(refuse=2)
    flushed = milvus_client.flush_all(milvus, timeout=5)  # type: ignore[arg-type]
    assert flushed["resent"] == 1 and milvus.sent == [1000, 1001] and milvus.refuse == 0
    assert flushed["seconds"] >= 0.05 + 2 * 0.1  # the re-sends are spaced, not one per poll


def test_a_flush_all_never_done_still_ends_at_the_timeout_with_the_first_timestamp():
    class NeverDone(StuckDataNode):
        def flush_all_done(self, flush_all_ts: int) -> bool:
            self.asked.append(flush_all_ts)
            return False

    milvus = NeverDone()
    with pytest.raises(PreconditionError, match=r"FlushAll not finished after 0 s \(flush_all_ts 1000\)"):
        milvus_client.flush_all(milvus, timeout=0.4)  # type: ignore[arg-type]
    assert 2 <= len(milvus.sent) <= 5 and set(milvus.asked) == {1000}
