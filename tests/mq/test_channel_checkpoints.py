"""The one entry to Milvus's channel checkpoints (mqctl/mq/channel_checkpoints.py) on a real etcd: the version decides
which state is read, a 2.6 deployment's datacoord channel checkpoints come back as the positions mqctl's readers seek
to (a Woodpecker segment/entry as `channels peek` numbers it, a RocksMQ id), dropped vchannels and collections no
longer live are left out, and a checkpoint on a WAL mqctl cannot count is refused by name. Values from
tests/helpers/streaming_meta.py (the `.proto` field numbers, pymilvus's own MsgPosition), not mqctl's decoder."""

from __future__ import annotations

import pytest

from mqctl.errors import PreconditionError
from mqctl.mq.channel_checkpoints import live_checkpoints, on_streaming
from mqctl.mq.milvus_meta import meta_reader
from mqctl.mq.woodpecker.source import message_id
from tests.helpers import streaming_meta as enc

TS = enc.tso(1_790_000_000)


def seed(etcd_url: str, root: str, wal: int, positions: dict[str, bytes], *, dropped: str | None = None) -> None:
    """A 2.6 deployment under `root`: one pchannel's WAL checkpoint, collection 100 on its vchannels, a channel
    checkpoint per vchannel (and `dropped` with the MaxUint64 sentinel)."""
    pchannel = f"{root}-rootcoord-dml_0"
    meta = f"{root}/meta"
    checkpoint = next(iter(positions.values()))
    enc.put(
        etcd_url, f"{meta}/streamingnode-meta/wal/{pchannel}/consume-checkpoint", enc.wal_checkpoint(checkpoint, TS)
    )
    vchannels = {f"{pchannel}_100v{n}": pchannel for n in range(len(positions))}
    enc.put(etcd_url, f"{meta}/root-coord/database/collection-info/1/100", enc.collection_info(100, "films", vchannels))
    for (vchannel, _), raw in zip(vchannels.items(), positions.values(), strict=True):
        enc.put(etcd_url, f"{meta}/datacoord-meta/channel-cp/{vchannel}", enc.msg_position(vchannel, wal, raw, TS))
    if dropped is not None:
        gone = f"{pchannel}_{dropped}"
        enc.put(
            etcd_url,
            f"{meta}/datacoord-meta/channel-cp/{gone}",
            enc.msg_position(gone, wal, next(iter(positions.values())), enc.MAX_UINT64),
        )


def test_a_woodpecker_deployment_resumes_each_vchannel_at_its_segment_and_entry(etcd_url):
    seed(etcd_url, "wp26", enc.WOODPECKER, {"a": enc.wp_id_bytes(5, 10), "b": enc.wp_id_bytes(2, 1)}, dropped="200v0")
    reader = meta_reader(etcd_url, "wp26")
    assert on_streaming(reader, None) and on_streaming(reader, (2, 6, 17))
    found = live_checkpoints(reader)
    assert [(c.vchannel, c.pchannel, c.collection, c.position, c.ts, c.origin) for c in found] == [
        ("wp26-rootcoord-dml_0_100v0", "wp26-rootcoord-dml_0", "films", message_id(5, 10), TS, "channel-cp"),
        ("wp26-rootcoord-dml_0_100v1", "wp26-rootcoord-dml_0", "films", message_id(2, 1), TS, "channel-cp"),
    ]


def test_a_rocksmq_wal_resumes_at_its_message_id(etcd_url):
    seed(etcd_url, "rmq26", enc.ROCKSMQ, {"a": (470633384162885984).to_bytes(8, "little")})
    (found,) = live_checkpoints(meta_reader(etcd_url, "rmq26"))
    assert (found.position, found.collection) == (470633384162885984, "films")


def test_a_checkpoint_on_a_wal_mqctl_cannot_count_is_refused_by_name(etcd_url):
    seed(etcd_url, "pulsar26", enc.PULSAR, {"a": enc.pulsar_id_bytes(7, 3)})
    with pytest.raises(PreconditionError, match=r"pulsar26-rootcoord-dml_0_100v0 is a pulsar position"):
        live_checkpoints(meta_reader(etcd_url, "pulsar26"))


def test_the_version_decides_which_state_is_read(etcd_url):
    seed(etcd_url, "old25", enc.WOODPECKER, {"a": enc.wp_id_bytes(1, 1)})
    reader = meta_reader(etcd_url, "old25")
    assert not on_streaming(reader, (2, 5, 4))
    # read as 2.3-2.5 (the version says so), the 2.6 WAL checkpoints make the old reading refuse, as it always did
    with pytest.raises(PreconditionError, match=r"2\.2-2\.5 reading does not apply"):
        live_checkpoints(reader, (2, 5, 4))
    empty = meta_reader(etcd_url, "nothing-here")
    assert not on_streaming(empty, None)
    assert live_checkpoints(empty) == []
