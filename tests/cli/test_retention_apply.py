"""`mqctl retention apply`: the store is touched only after a yes, and the change is all-or-nothing
(real nats-servers, natsmq stores copied from the fixture)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys

import nats
import pytest

from mqctl.mq.nats.store import read_store
from tests.helpers.files import tree_fingerprint
from tests.helpers.natsmq import max_age_keeping, natsmq_yaml, stream_limits
from tests.helpers.paths import FIXTURES, REPO
from tests.helpers.servers import start_nats

STORE = FIXTURES / "natsmq" / "store"
KEEP_ALL = max_age_keeping(STORE)  # JetStream deletes what is older than max_age, and the fixture ages


@pytest.fixture
def store(tmp_path):
    copy = tmp_path / "store"
    shutil.copytree(STORE, copy)
    return copy


def answer_on_a_terminal(args: list[str], answer: str) -> tuple[int, str]:
    """Run mqctl with a pseudo-terminal as stdin and type `answer` at its question."""
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mqctl", *args],
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
        cwd=REPO,
        text=True,
    )
    os.close(follower)
    os.write(leader, answer.encode() + b"\n")
    try:
        output, _ = proc.communicate(timeout=120)
    finally:
        os.close(leader)
    return proc.returncode, output


def test_dry_run_and_no_leave_every_byte_of_the_store(cli, tmp_path, store):
    config = natsmq_yaml(tmp_path, max_age=KEEP_ALL, max_msgs="100")
    before = tree_fingerprint(store)
    dry = cli("retention", "apply", "--config", str(config), "--nats-store", str(store), "--dry-run", "--json")
    assert dry.code == 0, dry.stderr
    losses = dry.json()["losses"]
    assert losses and all("rehearsed on a copy" in loss for loss in losses)
    assert "stream by-dev-rootcoord-dml_0: the new limits delete 21 of its 121 message(s)" in losses[0]
    assert tree_fingerprint(store) == before

    unconfirmed = cli("retention", "apply", "--config", str(config), "--nats-store", str(store))
    assert unconfirmed.code == 3 and "--yes" in unconfirmed.stderr
    assert tree_fingerprint(store) == before

    code, output = answer_on_a_terminal(
        ["retention", "apply", "--config", str(config), "--nats-store", str(store)], "n"
    )
    assert code == 3 and "not confirmed; nothing changed" in output, output
    assert "+max_msgs: 100" in output and "delete 21 of its 121" in output  # shown before the question
    assert tree_fingerprint(store) == before

    code, output = answer_on_a_terminal(
        ["retention", "apply", "--config", str(config), "--nats-store", str(store)], "y"
    )
    assert code == 0 and "verified" in output, output
    assert tree_fingerprint(store) != before
    after = cli("channels", "list", "--nats-store", str(store), "--json").json()["channels"]
    assert {c["name"]: c["messages"] for c in after if c["messages"]} == {
        f"by-dev-rootcoord-dml_{i}": 100 for i in range(4)
    }


def test_an_apply_that_empties_a_stream_of_a_milvus_23_store_is_refused(cli, tmp_path, store):
    """nats-server >= 2.10 keeps an emptied stream's last sequence in a tombstone; the 2.9.17 of Milvus 2.3
    reads it as a message with sequence 2^62+N."""
    config = natsmq_yaml(tmp_path, max_age="1")  # every fixture message is older than a minute
    before = tree_fingerprint(store)
    refused = cli("retention", "apply", "--config", str(config), "--nats-store", str(store), "--yes")
    assert refused.code == 3, refused.stderr
    assert "2^62+N" in refused.stderr and "by-dev-rootcoord-dml_0" in refused.stderr
    assert "nothing changed" in refused.stderr
    assert tree_fingerprint(store) == before

    # what the refusal prevents: the same change on a store of a newer server writes those tombstones
    proc, _url = start_nats(tmp_path, store_dir=store)
    proc.terminate()
    proc.wait()
    assert not any((store / "jetstream").rglob("*.idx"))  # rewritten by nats-server 2.10+
    applied = cli("retention", "apply", "--config", str(config), "--nats-store", str(store), "--yes", "--json")
    assert applied.code == 0, applied.stderr
    assert any(
        "would read as a message with sequence 2^62+N; fine for Milvus 2.4/2.5" in loss
        for loss in applied.json()["losses"]
    )  # told before the confirmation
    tombstoned = {name for name, stream in read_store(store).items() if stream.tombstones}
    assert {f"by-dev-rootcoord-dml_{i}" for i in range(4)} <= tombstoned


@pytest.fixture
def small_streams(tmp_path):
    """Three streams with the default duplicates window (2 min) on a server with 10 MB of file storage."""
    store = json.dumps(str(tmp_path / "js"))
    proc, url = start_nats(tmp_path, f"jetstream {{ store_dir: {store}, max_file_store: 10MB }}")  # replaces the first

    async def create():
        nc = await nats.connect(url)
        js = nc.jetstream()
        for i in range(3):
            name = f"by-dev-rootcoord-dml_{i}"
            await js.add_stream(name=name, subjects=[name])
            await js.publish(name, b"\x08")
        await nc.close()

    try:
        asyncio.run(create())
        yield url
    finally:
        proc.terminate()
        proc.wait()


def duplicate_windows(url) -> dict:
    async def read():
        nc = await nats.connect(url)
        infos = await nc.jetstream().streams_info()
        await nc.close()
        return {i.config.name: i.config.duplicate_window for i in infos}

    return asyncio.run(read())


def test_a_max_age_below_the_duplicates_window_caps_the_window(cli, tmp_path, small_streams):
    """JetStream refuses max_age below the duplicates window (error 10052); nats-server caps the window on create."""
    config = natsmq_yaml(tmp_path, max_age="1")
    assert set(duplicate_windows(small_streams).values()) == {120.0}
    dry = cli("retention", "apply", "--config", str(config), "--nats", small_streams, "--dry-run")
    assert "-duplicate_window: 2 min" in dry.stdout and "+duplicate_window: 1 min" in dry.stdout, dry.stdout
    result = cli("retention", "apply", "--config", str(config), "--nats", small_streams, "--yes", "--json")
    assert result.code == 0, result.stderr
    assert result.json()["verified"] is True
    assert set(duplicate_windows(small_streams).values()) == {60.0}
    assert {limits[0] for limits in stream_limits(small_streams).values()} == {60.0}


def test_a_refused_stream_puts_back_the_streams_already_changed(cli, tmp_path, small_streams):
    """Two 4 MB reservations fit the server's 10 MB, the third is refused (error 10047): none keeps the change."""
    config = natsmq_yaml(tmp_path, max_age="0", max_bytes=str(4 * 1024 * 1024))
    before = stream_limits(small_streams)
    result = cli("retention", "apply", "--config", str(config), "--nats", small_streams, "--yes")
    assert result.code == 3
    assert "by-dev-rootcoord-dml_2 refused the new limits" in result.stderr and "10047" in result.stderr
    assert "put back the 2 stream(s) already changed" in result.stderr
    assert stream_limits(small_streams) == before


@pytest.mark.parametrize(
    "limits, key, line",
    [({"max_age": "153722868"}, "maxAge", 8), ({"max_age": "2e8"}, "maxAge", 8)],  # 2e8: yaml.v2 reads 200000000
)
def test_a_limit_beyond_64_bits_is_bad_input_at_its_line(cli, tmp_path, store, limits, key, line):
    """JetStream keeps limits in Go int64 (max_age in nanoseconds): it would refuse them (error 10025)."""
    config = natsmq_yaml(tmp_path, **limits)
    before = tree_fingerprint(store)
    for command in (("retention", "apply", "--yes"), ("retention", "show")):
        result = cli(*command, "--config", str(config), "--nats-store", str(store))
        assert result.code == 2 and "Traceback" not in result.stderr
        assert result.stderr.startswith(f"error: {config}:{line}: natsmq.server.retention.{key} "), result.stderr
        assert "is too large" in result.stderr
    assert tree_fingerprint(store) == before


def test_a_damaged_store_is_not_changed(cli, tmp_path, store):
    """A stream folder nats-server cannot load would be skipped by the change and vanish for Milvus: refuse."""
    (store / "jetstream" / "$G" / "streams" / "by-dev-rootcoord-dml_1" / "meta.inf").write_text("garbage")
    before = tree_fingerprint(store)
    result = cli(
        "retention",
        "apply",
        "--config",
        str(natsmq_yaml(tmp_path, max_age=KEEP_ALL)),
        "--nats-store",
        str(store),
        "--yes",
    )
    assert (
        result.code == 3
        and "the store's data and metadata disagree (stream by-dev-rootcoord-dml_1: its folder "
        "holds 121 message(s) but nats-server did not load it"
        in result.stderr
    ), result.stderr
    assert "nothing changed" in result.stderr
    assert tree_fingerprint(store) == before


def test_an_interrupted_apply_puts_back_the_streams_already_changed(cli, tmp_path):
    """Ctrl-C in the middle of 300 updates: the streams changed so far get their old limits back (all or none)."""
    import signal
    import time

    proc, url = start_nats(tmp_path)
    names = [f"by-dev-rootcoord-dml_{i}" for i in range(300)]

    async def create():
        nc = await nats.connect(url)
        js = nc.jetstream()
        for name in names:
            await js.add_stream(name=name, subjects=[name], max_age=3600)
        await nc.close()

    async def changed() -> int:
        nc = await nats.connect(url)
        infos = await nc.jetstream().streams_info()
        await nc.close()
        return sum(info.config.max_msgs == 5 for info in infos)

    try:
        asyncio.run(create())
        config = natsmq_yaml(tmp_path, max_age="60", max_msgs="5")
        apply = subprocess.Popen(
            [sys.executable, "-m", "mqctl", "retention", "apply", "--config", str(config), "--nats", url, "--yes"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            cwd=REPO,
            text=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not asyncio.run(changed()):
            time.sleep(0.02)
        apply.send_signal(signal.SIGINT)
        _, stderr = apply.communicate(timeout=60)
        assert apply.returncode in (0, 3, 130) and "Traceback" not in stderr, stderr  # 3: click's "Aborted."
        # none, or all when the signal came after the last update (while verifying)
        assert asyncio.run(changed()) in (0, len(names))
    finally:
        proc.terminate()
        proc.wait()


# --- channel checkpoints (a real etcd with hand-encoded Milvus meta, see tests/helpers/milvus_meta.py) -----------------
CP_CHANNEL = "by-dev-rootcoord-dml_0"  # 121 messages, 1..121; the fixture's `items` collection writes to it


def _checkpoint_at(etcd_url, root: str, sequence: int) -> str:
    """Milvus meta under `root`: the fixture's `items` collection, its vchannel's checkpoint at `sequence`."""
    from tests.helpers.milvus_meta import collection_info, position, put

    peeked = subprocess.run(
        [
            sys.executable,
            "-m",
            "mqctl",
            "channels",
            "peek",
            CP_CHANNEL,
            "--nats-store",
            str(STORE),
            "--type",
            "insert",
            "--json",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    insert = json.loads(peeked.stdout)["messages"][0]
    vchannel, cid = insert["shard"], insert["collection_id"]
    put(
        etcd_url,
        f"{root}/meta/root-coord/database/collection-info/1/{cid}",
        collection_info(cid, insert["collection"], {vchannel: CP_CHANNEL}),
    )
    put(etcd_url, f"{root}/meta/datacoord-meta/channel-cp/{vchannel}", position(vchannel, sequence, insert["tso"]))
    return vchannel


@pytest.mark.etcd
def test_limits_that_delete_messages_after_a_checkpoint_are_refused(cli, tmp_path, store, etcd_url):
    vchannel = _checkpoint_at(etcd_url, "behind", 10)  # max_msgs 100 deletes 1..21: 11..21 are still needed
    config = natsmq_yaml(tmp_path, max_age=KEEP_ALL, max_msgs="100")
    args = [
        "retention",
        "apply",
        "--config",
        str(config),
        "--nats-store",
        str(store),
        "--etcd",
        etcd_url,
        "--etcd-root",
        "behind",
    ]
    before = tree_fingerprint(store)
    refused = cli(*args, "--yes")
    assert refused.code == 3, refused.stdout + refused.stderr
    assert (
        f"default.items ({vchannel}): the new limits of stream {CP_CHANNEL} delete messages 11..21, after its "
        "checkpoint 10" in refused.stderr
    )
    assert "nothing changed" in refused.stderr and "--force" in refused.stderr
    assert tree_fingerprint(store) == before

    dry = cli(*args, "--dry-run", "--json")  # a dry run shows the same loss beside the others
    assert dry.code == 0, dry.stderr
    assert any(vchannel in loss and "11..21" in loss for loss in dry.json()["losses"])

    forced = cli(*args, "--yes", "--force", "--json")
    assert forced.code == 0, forced.stderr
    assert forced.json()["verified"] is True and any(vchannel in loss for loss in forced.json()["losses"])
    assert tree_fingerprint(store) != before


@pytest.mark.etcd
def test_limits_that_keep_everything_after_the_checkpoints_apply(cli, tmp_path, store, etcd_url):
    vchannel = _checkpoint_at(etcd_url, "ahead", 30)  # past the 21 messages max_msgs 100 deletes
    config = natsmq_yaml(tmp_path, max_age=KEEP_ALL, max_msgs="100")
    applied = cli(
        "retention",
        "apply",
        "--config",
        str(config),
        "--nats-store",
        str(store),
        "--etcd",
        etcd_url,
        "--etcd-root",
        "ahead",
        "--yes",
        "--json",
    )
    assert applied.code == 0, applied.stderr
    assert applied.json()["verified"] is True and not any(vchannel in loss for loss in applied.json()["losses"])
    assert "not checked" not in applied.stderr


@pytest.mark.etcd
def test_the_configs_etcd_is_read_and_an_unreachable_one_is_a_warning(cli, tmp_path, store, etcd_url):
    from tests.helpers.servers import free_port

    vchannel = _checkpoint_at(etcd_url, "fromconfig", 10)
    limits = natsmq_yaml(tmp_path, max_age=KEEP_ALL, max_msgs="100")
    reachable = tmp_path / "etcd.yaml"
    reachable.write_text(f"etcd:\n  endpoints: {etcd_url.removeprefix('http://')}\n  rootPath: fromconfig\n")
    refused = cli(
        "retention", "apply", "--config", str(limits), "--config", str(reachable), "--nats-store", str(store), "--yes"
    )
    assert refused.code == 3 and vchannel in refused.stderr, refused.stderr

    unreachable = tmp_path / "gone.yaml"
    unreachable.write_text(f"etcd:\n  endpoints: 127.0.0.1:{free_port()}\n")
    applied = cli(
        "retention", "apply", "--config", str(limits), "--config", str(unreachable), "--nats-store", str(store), "--yes"
    )
    assert applied.code == 0, applied.stderr
    assert "warning: channel checkpoints not checked" in applied.stderr and "--etcd" in applied.stderr
    lower = natsmq_yaml(tmp_path, max_age=KEEP_ALL, max_msgs="90", name="lower.yaml")
    assert (
        cli(
            "retention",
            "apply",
            "--config",
            str(lower),
            "--nats-store",
            str(store),
            "--etcd",
            f"http://127.0.0.1:{free_port()}",
            "--yes",
        ).code
        == 3
    )  # an etcd given on the command line must answer


@pytest.mark.etcd
def test_a_live_server_is_checked_by_sequence_for_max_msgs_and_by_time_for_max_age(cli, tmp_path, store, etcd_url):
    vchannel = _checkpoint_at(etcd_url, "live", 10)  # its time is the fixture insert's, long ago
    proc, url = start_nats(tmp_path, store_dir=store)
    try:
        by_count = natsmq_yaml(tmp_path, max_age=KEEP_ALL, max_msgs="100")
        by_age = natsmq_yaml(tmp_path, max_age="60", name="age.yaml")
        for config, expected in ((by_count, "delete messages 11..21"), (by_age, "is older than the new max_age")):
            refused = cli(
                "retention",
                "apply",
                "--config",
                str(config),
                "--nats",
                url,
                "--etcd",
                etcd_url,
                "--etcd-root",
                "live",
                "--yes",
            )
            assert refused.code == 3, refused.stdout + refused.stderr
            assert f"default.items ({vchannel})" in refused.stderr and expected in refused.stderr, refused.stderr
        untouched = cli("channels", "list", "--nats", url, "--json").json()["channels"]
        assert next(c for c in untouched if c["name"] == CP_CHANNEL)["messages"] == 121
    finally:
        proc.terminate()
        proc.wait()
