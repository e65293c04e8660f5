"""`mqctl replay --to-spark --woodpecker PATH --from checkpoint` on Milvus 2.6 state in a real etcd: the RocksMQ
fixture's messages as Woodpecker segments (tests/helpers/woodpecker_wal.py), the logs named after their pchannels
through Woodpecker's etcd meta, and datacoord's channel checkpoints / the streaming node's WAL checkpoints encoded
from the `.proto` field numbers (tests/helpers/streaming_meta.py). Expected sets come from `channels peek`."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.helpers import streaming_meta as enc
from tests.helpers.cli import run_cli, run_cli_subprocess
from tests.helpers.woodpecker_wal import write_wal

ITEMS = 470633384395407379  # the fixture's `items` collection: shards on dml_0 and dml_1
DML = [f"by-dev-rootcoord-dml_{n}" for n in range(4)]
V0, V1 = f"{DML[0]}_{ITEMS}v0", f"{DML[1]}_{ITEMS}v1"
GHOST = f"{DML[0]}_999v0"  # another collection's vchannel on dml_0, with an earlier checkpoint
GONE = f"{DML[2]}_555v0"  # a dropped vchannel: its channel checkpoint is the MaxUint64 sentinel
LIVE = f"{DML[3]}_777v0"  # a live vchannel datacoord has no checkpoint for yet: its pchannel's WAL checkpoint counts
WAL_CP = (0, 2)  # dml_3's WAL checkpoint


def _name_logs(etcd_url: str, root: str, logs) -> None:
    """Woodpecker's etcd meta (`<root>/woodpecker/logs/<pchannel>`): what names each log after its pchannel."""
    for log in logs:
        enc.put(etcd_url, f"{root}/woodpecker/logs/{log.channel}", enc.log_meta(log.log_id, 1_700_000_000))


@pytest.fixture(scope="module")
def stored(etcd_url, wal, logs):
    """(pchannel, id) -> message, every log of the WAL, read through `channels peek` with the logs named."""
    _name_logs(etcd_url, "names", logs)
    found = {}
    for channel in DML:
        result = run_cli(
            "channels", "peek", channel, "--woodpecker", str(wal), "--etcd", etcd_url, "--etcd-root", "names",
            "--limit", "100000", "--json",
        )  # fmt: skip
        assert result.code == 0, result.stderr
        found.update({(channel, m["id"]): m for m in result.json()["messages"]})
    return found


def _vchannel(etcd_url: str, root: str, vchannel: str, pchannel: str, *, state: int = 1, cid: int = ITEMS) -> None:
    key = f"{root}/meta/streamingnode-meta/wal/{pchannel}/vchannel/{vchannel}"
    enc.put(etcd_url, key, enc.vchannel_meta(vchannel, state, cid, enc.tso(1_700_000_000)))


def _channel_cp(etcd_url: str, root: str, vchannel: str, segment: int, entry: int, **kwargs) -> None:
    wal, timestamp = kwargs.get("wal", enc.WOODPECKER), kwargs.get("timestamp", enc.tso(1_700_000_000))
    msg_id = enc.wp_id_bytes(segment, entry) if wal == enc.WOODPECKER else (1234).to_bytes(8, "little")
    enc.put(
        etcd_url,
        f"{root}/meta/datacoord-meta/channel-cp/{vchannel}",
        enc.msg_position(vchannel, wal, msg_id, timestamp),
    )


@pytest.fixture(scope="module")
def checkpoints(etcd_url, stored, logs):
    """v0 checkpointed after its second insert, v1 at its collection's creation, the ghost before both; GONE
    dropped, LIVE only with its pchannel's WAL checkpoint; dml_2 and dml_3 carry no other vchannel."""
    root = "wpcp"
    _name_logs(etcd_url, root, logs)
    v0_inserts = sorted(id_ for (ch, id_), m in stored.items() if m["shard"] == V0 and m["type"] == "Insert")
    creates = {ch: id_ for (ch, id_), m in stored.items() if m["type"] == "CreateCollection"}
    cps = {V0: v0_inserts[1], V1: creates[DML[1]], GHOST: creates[DML[0]]}
    for vchannel, cp in cps.items():
        pchannel = vchannel.rsplit("_", 1)[0]
        _vchannel(etcd_url, root, vchannel, pchannel, cid=ITEMS if vchannel != GHOST else 999)
        _channel_cp(etcd_url, root, vchannel, *divmod(cp, 10**10))
    _vchannel(etcd_url, root, GONE, DML[2], state=2, cid=555)
    _channel_cp(etcd_url, root, GONE, 3, 1, timestamp=enc.MAX_UINT64)
    _vchannel(etcd_url, root, LIVE, DML[3], cid=777)
    checkpoint = enc.wal_checkpoint(enc.wp_message_id(*WAL_CP), enc.tso(1_700_000_000))
    enc.put(etcd_url, f"{root}/meta/streamingnode-meta/wal/{DML[3]}/consume-checkpoint", checkpoint)
    cps[LIVE] = WAL_CP[0] * 10**10 + WAL_CP[1]
    return root, cps


def _unpersisted(stored, cps) -> set[tuple[str, int]]:
    """Messages after the earliest checkpoint of their pchannel, less each vchannel's persisted ones; pchannels
    without a checkpointed vchannel (dml_2: only a dropped one) are not read."""
    earliest = {DML[0]: min(cps[V0], cps[GHOST]), DML[1]: cps[V1], DML[3]: cps[LIVE]}
    return {
        (channel, id_)
        for (channel, id_), m in stored.items()
        if channel in earliest and id_ > earliest[channel] and not (m["shard"] in cps and id_ <= cps[m["shard"]])
    }


def _written(folder) -> list[dict]:
    return [json.loads(line) for part in folder.rglob("part-*.json") for line in part.read_text().splitlines()]


def _one_error(stderr: str) -> bool:
    """One `error:` line (after the progress line the replay prints first), no traceback."""
    return len([line for line in stderr.splitlines() if line.startswith("error:")]) == 1 and "Traceback" not in stderr


def _args(wal, etcd_url: str, root: str, out, *extra: str) -> list[str]:
    return [
        "replay", "--to-spark", "--woodpecker", str(wal), "--from", "checkpoint", "--etcd", etcd_url,
        "--etcd-root", root, "--output", str(out), *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def batch_replay(etcd_url, wal, checkpoints, tmp_path_factory):
    """The batch `--from checkpoint` replay of the WAL in the messages shape, through the CLI: (its --json result,
    the rows it wrote)."""
    root, _ = checkpoints
    out = tmp_path_factory.mktemp("batch") / "messages"
    args = _args(wal, etcd_url, root, out, "--shape", "messages", "--format", "json")
    result = run_cli_subprocess(*args, "--master", "local[2]", "--json")
    assert result.code == 0, result.stderr
    return result.json(), _written(out)


@pytest.mark.etcd
@pytest.mark.spark
def test_replays_only_what_milvus_has_not_persisted(checkpoints, stored, batch_replay):
    _, cps = checkpoints
    summary, written = batch_replay
    assert {c["name"] for c in summary["channels"]} == {DML[0], DML[1], DML[3]}
    got = [(m["channel"], m["id"]) for m in written]
    assert len(got) == len(set(got)) and set(got) == _unpersisted(stored, cps)
    # dml_0 is read after the ghost's earlier checkpoint (0/0); 0/1 is v0's, persisted: 0/2 comes first
    assert stored[(DML[0], 1)]["shard"] == V0 and min(id_ for channel, id_ in got if channel == DML[0]) == 2
    assert not any(m.get("shard") == V0 and m["id"] <= cps[V0] for m in written)
    assert any(m.get("shard") == V0 for m in written)  # v0's inserts after its checkpoint are there


@pytest.mark.etcd
@pytest.mark.spark
def test_a_follow_query_from_checkpoint_writes_what_the_batch_replay_writes(
    etcd_url, wal, checkpoints, stored, batch_replay, tmp_path
):
    """`--follow --from checkpoint --available-now` through the CLI (real etcd, real local Spark): on the pchannels
    with a checkpointed vchannel, every row of the batch replay of the same folder from the same checkpoints, each
    once, column for column; dml_2, whose only vchannel is dropped, from its first message (a follow query reads
    such a channel whole, docs/replay.md); a restart on the same checkpoint then adds nothing and ignores `--from`."""
    root, _ = checkpoints
    out, ckpt = tmp_path / "messages", tmp_path / "ckpt"
    args = [
        *_args(wal, etcd_url, root, out, "--shape", "messages", "--format", "json"),
        "--follow", "--available-now", "--checkpoint-location", str(ckpt), "--master", "local[2]", "--json",
    ]  # fmt: skip
    result = run_cli_subprocess(*args)
    assert result.code == 0, result.stderr
    summary = result.json()
    assert summary["started_from"] == "checkpoint" and summary["resumed"] is False

    def rows(messages: list[dict]) -> list[str]:
        return sorted(json.dumps(m, sort_keys=True) for m in messages)

    _, batch = batch_replay
    followed = _written(out)
    written = rows([m for m in followed if m["channel"] != DML[2]])
    assert written == rows(batch) and len(written) == len(set(written))
    whole = sorted(m["id"] for m in followed if m["channel"] == DML[2])
    assert whole == sorted(id_ for channel, id_ in stored if channel == DML[2])
    assert summary["rows"] == len(followed) == len(batch) + len(whole)
    again = run_cli_subprocess(*args)
    assert again.code == 0, again.stderr
    assert again.json()["resumed"] is True and again.json()["rows"] == 0 and rows(_written(out)) == rows(followed)


@pytest.mark.etcd
def test_a_checkpoint_on_another_wal_is_refused(etcd_url, wal, logs, tmp_path):
    root = "mismatch"
    _name_logs(etcd_url, root, logs)
    _vchannel(etcd_url, root, V0, DML[0])
    _channel_cp(etcd_url, root, V0, 0, 0, wal=enc.ROCKSMQ)
    result = run_cli(*_args(wal, etcd_url, root, tmp_path / "out"))
    assert result.code == 3, result.stderr
    assert f"{root}/meta/datacoord-meta/channel-cp/{V0}" in result.stderr
    assert "is a rocksmq position, not a Woodpecker one" in result.stderr
    assert _one_error(result.stderr) and not (tmp_path / "out").exists()


@pytest.mark.etcd
def test_a_dropped_sentinel_on_a_live_vchannel_is_refused(etcd_url, wal, logs, tmp_path):
    root = "sentinel"
    _name_logs(etcd_url, root, logs)
    _vchannel(etcd_url, root, V0, DML[0])  # still normal in the streaming node's meta
    _channel_cp(etcd_url, root, V0, 1, 0, timestamp=enc.MAX_UINT64)
    result = run_cli(*_args(wal, etcd_url, root, tmp_path / "out"))
    assert result.code == 3, result.stderr
    assert f"vchannel {V0} has the dropped-channel checkpoint (timestamp MaxUint64)" in result.stderr
    assert "still lists it as live" in result.stderr and _one_error(result.stderr)


def _lose_the_head_of_dml_0(folder, etcd_url: str, root: str, logs) -> None:
    """dml_0's segments 0 and 1 removed from `folder` (truncated), while V0's channel checkpoint stays at 0/3."""
    dml_0 = next(log for log in logs if log.channel == DML[0])
    for segment in (0, 1):
        shutil.rmtree(folder / str(dml_0.log_id) / str(segment))
    _name_logs(etcd_url, root, logs)
    _vchannel(etcd_url, root, V0, DML[0])
    _channel_cp(etcd_url, root, V0, 0, 3)


@pytest.mark.etcd
def test_a_checkpoint_before_the_first_stored_entry_is_lost_data(etcd_url, wal, logs, tmp_path):
    """dml_0's segments 0 and 1 removed (truncated past the checkpoint 0/3): its entries 0/4.. are gone."""
    copy = tmp_path / "wp"
    shutil.copytree(wal, copy)
    _lose_the_head_of_dml_0(copy, etcd_url, "lost", logs)
    result = run_cli(*_args(copy, etcd_url, "lost", tmp_path / "out"))
    assert result.code == 3, result.stderr
    assert f"vchannel {V0}: channel checkpoint 0/3 precedes the first entry 2/0 stored for {DML[0]}" in result.stderr
    assert "are lost" in result.stderr and _one_error(result.stderr)


@pytest.mark.etcd
def test_a_bucket_is_checked_for_lost_entries_at_its_own_endpoint(etcd_url, logs, tmp_path):
    """The same lost-data check on a WAL read straight from a bucket (moto's S3 server): the check reads the bucket
    at --s3-endpoint with the environment's keys, as the executors will, and none of them is printed."""
    from tests.helpers.s3 import moto_s3

    folder = tmp_path / "bucket" / "wp"
    write_wal(folder, logs, layout="object", active_last=True)
    root = "lostbucket"
    _lose_the_head_of_dml_0(folder, etcd_url, root, logs)
    with moto_s3() as s3:
        s3.client().create_bucket(Bucket="milvus-wal")
        s3.upload(tmp_path / "bucket", "milvus-wal")
        s3.make_reader()
        s3.require_signatures()
        args = _args("s3://milvus-wal/wp", etcd_url, root, tmp_path / "out", "--s3-endpoint", s3.endpoint)
        result = run_cli(*args, env=s3.env())
    assert result.code == 3, result.stderr
    assert f"vchannel {V0}: channel checkpoint 0/3 precedes the first entry 2/0 stored for {DML[0]}" in result.stderr
    assert _one_error(result.stderr) and s3.reader_secret not in result.stdout + result.stderr


@pytest.mark.etcd
def test_from_checkpoint_on_woodpecker_needs_etcd(wal, tmp_path):
    result = run_cli(
        "replay", "--to-spark", "--woodpecker", str(wal), "--from", "checkpoint", "--output", str(tmp_path / "o")
    )
    assert result.code == 2 and "--from checkpoint on a Woodpecker WAL needs --etcd URL" in result.stderr


@pytest.mark.etcd
def test_a_follow_query_from_checkpoint_starts_after_the_same_positions(etcd_url, wal, checkpoints):
    """`--follow --from checkpoint` fixes the positions when the query starts (Spark itself is tested with the
    batch replay above and in test_woodpecker_follow.py): the same vchannel -> (pchannel, id) as the batch replay."""
    from mqctl.mq.sources import SourceOptions
    from mqctl.replay.follow import FollowRequest, _start_options
    from mqctl.replay.model import ReplayRequest

    root, cps = checkpoints
    source = SourceOptions(woodpecker=str(wal), etcd=etcd_url, etcd_root=root)
    replay = ReplayRequest(source, output="out", start="checkpoint", etcd=etcd_url, etcd_root=root)
    options = _start_options(FollowRequest(replay, "ckpt"))
    after = {vchannel: (pchannel, position) for vchannel, pchannel, position in json.loads(options["after"])}
    assert after == {vchannel: (vchannel.rsplit("_", 1)[0], position) for vchannel, position in cps.items()}


def _config(wal, folder) -> str:
    """A milvus.yaml of a 2.6 on Woodpecker whose local storage puts the WAL in `wal` (<localStorage.path>/wp)."""
    path = folder / "milvus.yaml"
    path.write_text(
        f"mq:\n  type: woodpecker\nwoodpecker:\n  storage:\n    type: local\nlocalStorage:\n  path: {wal.parent}\n"
    )
    return str(path)


@pytest.mark.etcd
def test_etcd_names_the_logs_of_a_wal_the_config_derives(etcd_url, wal, checkpoints, tmp_path):
    """--etcd without --from checkpoint names the logs after their pchannels, in batch and with --follow, as it does
    for --woodpecker: --channels takes a pchannel (the replay stops later, at --partition-by); without --etcd the
    logs go by their ids (a batch replay checks the channels before Spark starts)."""
    root, _ = checkpoints
    config = _config(wal, tmp_path)
    follow = ("--follow", "--checkpoint-location", str(tmp_path / "ck"))
    for extra in ((), follow):
        args = ["replay", "--to-spark", "--output", str(tmp_path / "out"), "--channels", DML[0], *extra]
        named = ("--etcd", etcd_url, "--etcd-root", root, "--partition-by", "nope")
        derived = run_cli(*args, "--config", config, *named)
        explicit = run_cli(*args, "--woodpecker", str(wal), *named)
        assert (derived.code, derived.stderr) == (explicit.code, explicit.stderr)
        assert derived.code == 2 and "--partition-by 'nope' is not a column" in derived.stderr, derived.stderr
        if extra:
            continue
        unnamed = run_cli(*args, "--config", config)
        assert unnamed.code == 2 and DML[0] in unnamed.stderr and "not a column" not in unnamed.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.etcd
@pytest.mark.spark
def test_from_checkpoint_on_a_wal_the_config_derives(etcd_url, wal, checkpoints, stored, batch_replay, tmp_path):
    """`--config F --from checkpoint --etcd URL`: the same rows as `--woodpecker PATH` gives (the batch replay)."""
    root, cps = checkpoints
    result = run_cli_subprocess(
        "replay", "--to-spark", "--config", _config(wal, tmp_path), "--from", "checkpoint", "--etcd", etcd_url,
        "--etcd-root", root, "--output", str(tmp_path / "derived"), "--shape", "messages", "--format", "json",
        "--master", "local[2]", "--json",
    )  # fmt: skip
    assert result.code == 0, result.stderr
    assert result.json()["source"] == f"woodpecker:{wal.resolve()}"
    assert {c["name"] for c in result.json()["channels"]} == {DML[0], DML[1], DML[3]}
    derived = sorted(json.dumps(row, sort_keys=True) for row in _written(tmp_path / "derived"))
    _, explicit = batch_replay
    assert derived == sorted(json.dumps(row, sort_keys=True) for row in explicit)
    got = {(m["channel"], m["id"]) for m in map(json.loads, derived)}
    assert len(got) == len(derived) and got == _unpersisted(stored, cps)
