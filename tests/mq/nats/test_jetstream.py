"""The JetStream reader against a real nats-server: the natsmq store a real Milvus 2.3.5 wrote,
and servers with streams created here (auth, limits)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mqctl.errors import InputError, PreconditionError
from mqctl.mq.decode import messages
from mqctl.mq.decode.columns import insert_columns
from mqctl.mq.nats.client import JetStreamSource
from mqctl.mq.nats.connect import public_url
from mqctl.mq.nats.reads import sequence_and_pending
from mqctl.mq.nats.server import nats_server_binary, private_nats_server
from tests.helpers.files import tree_fingerprint
from tests.helpers.make_fixtures import load_expected, rows_by_pk
from tests.helpers.paths import FIXTURES
from tests.helpers.servers import free_port, start_nats

STORE = FIXTURES / "natsmq" / "store"


@pytest.fixture(scope="module")
def fixture_server():
    with private_nats_server(STORE) as url:
        yield url


@pytest.fixture
def source(fixture_server):
    with JetStreamSource(fixture_server) as src:
        yield src


def test_lists_the_milvus_streams(source):
    expected = load_expected()
    channels = source.list_channels()
    names = [c.name for c in channels]
    dml = [f"{expected['channel_prefix']}{i}" for i in range(expected["dml_channels"])]
    assert set(dml) <= set(names)
    assert names == sorted(
        names, key=lambda n: [int(p) if p.isdigit() else p for p in __import__("re").split(r"(\d+)", n)]
    )
    for channel in channels:
        details = source.stream(channel.name)
        assert (channel.messages, channel.bytes, channel.consumers) == (
            details.messages,
            details.bytes,
            details.consumers,
        )
        scanned = list(source.iter_messages(channel.name))
        assert len(scanned) == channel.messages
        if scanned:
            assert (channel.first_id, channel.last_id) == (scanned[0].id, scanned[-1].id)
            assert channel.first_time == messages.decode(scanned[0].data).time
            assert channel.last_time == messages.decode(scanned[-1].data).time
        else:
            assert channel.first_time is None and channel.first_id is None


def test_post_switch_inserts_and_deletes_decode(source):
    expected = load_expected()
    inserted: dict[str, dict] = {}
    deleted: dict[str, list] = {}
    for channel in source.list_channels():
        for raw in source.iter_messages(channel.name):
            msg = messages.decode(raw.data, raw.headers)
            assert msg.error is None
            if msg.type_code == 400:
                columns = insert_columns(msg)
                inserted.setdefault(str(msg.collection), {}).update(
                    {pk: {name: values[i] for name, values in columns.items()} for i, pk in enumerate(msg.pks)}
                )
                assert "traceparent" in raw.headers  # seen on Milvus 2.3.5: trace context travels as a header on NATS
            elif msg.type_code == 401:
                deleted.setdefault(str(msg.collection), []).extend(msg.pks)
    for name, _info in expected["collections"].items():
        want = rows_by_pk(expected, name, "natsmq")
        if name in ("scratch",):
            continue
        assert set(inserted[name]) == set(want)
        for pk, row in want.items():
            got = inserted[name][pk]
            for field, value in row.items():
                if field in got:
                    value_got = got[field].hex() if isinstance(got[field], bytes) else got[field]
                    assert (json.loads(value_got) if field == "meta" else value_got) == value
        want_deleted = sorted(
            pk for d in expected["deletes"] if d["collection"] == name and d["phase"] == "natsmq" for pk in d["pks"]
        )
        assert sorted(deleted[name]) == want_deleted


def test_reading_leaves_no_consumer_behind(source):
    name = max(source.list_channels(), key=lambda c: c.messages).name
    before = source.stream(name).consumers
    ids = [m.id for m in source.iter_messages(name, 10, 20)]
    assert ids == list(range(10, 21))
    for first in source.iter_messages(name):  # noqa: B007
        break  # abandoned generator: the consumer is removed on close
    assert first.id == 1
    import gc

    gc.collect()
    assert source.stream(name).consumers == before
    assert source.id_range(name) == (1, source.stream(name).last_seq)


def _fill(url: str, stream: str, count: int, *, delete: tuple[int, ...] = (), purge_below: int = 0) -> None:
    """A stream of `count` messages with a header each; some deleted inside, the head purged."""
    import asyncio

    import nats

    async def fill():
        nc = await nats.connect(url)
        js = nc.jetstream()
        await js.add_stream(name=stream, subjects=[stream])
        for n in range(1, count + 1):
            await nc.publish(stream, f"m{n}".encode(), headers={"msg_type": str(n % 7)})
        await nc.flush()
        while (await js.stream_info(stream)).state.messages < count:
            await asyncio.sleep(0.05)
        for seq in delete:
            await js.delete_msg(stream, seq)
        if purge_below:
            await js.purge_stream(stream, seq=purge_below)
        await nc.close()

    asyncio.run(fill())


def test_reads_many_batches_with_bounds_gaps_trimmed_head_and_headers(tmp_path):
    proc, url = start_nats(tmp_path)
    try:
        _fill(url, "gappy", 5_000, delete=(2_500, 4_000, 5_000), purge_below=101)
        _fill(url, "empty", 0)
        with JetStreamSource(url, timeout=2) as src:
            started = time.monotonic()
            everything = list(src.iter_messages("gappy"))
            want = [n for n in range(101, 5_000) if n not in (2_500, 4_000)]
            assert [m.id for m in everything] == want
            for _ in range(10):  # the last batches may arrive, and end the read, while a batch is handed over
                assert [m.id for m in src.iter_messages("gappy")] == want
            assert everything[0].data == b"m101" and everything[0].headers == {"msg_type": str(101 % 7)}
            assert [m.id for m in src.iter_messages("gappy", 1, 105)] == list(range(101, 106))
            assert [m.id for m in src.iter_messages("gappy", 2_498, 2_502)] == [2_498, 2_499, 2_501, 2_502]
            assert [m.id for m in src.iter_messages("gappy", 3_999, 4_000)] == [3_999]
            assert [m.id for m in src.iter_messages("gappy", 4_999)] == [4_999]
            assert list(src.iter_messages("gappy", 6_000)) == [] and list(src.iter_messages("empty")) == []
            assert time.monotonic() - started < 5, "a read waited for a pull request to expire"
            assert src.stream("gappy").consumers == 0
    finally:
        proc.terminate()
        proc.wait()


def test_sequence_and_pending_from_both_reply_subject_forms():
    assert sequence_and_pending("$JS.ACK.dml_0.c1.1.4711.12.1700000000000000000.88") == (4711, 88)
    assert sequence_and_pending("$JS.ACK.hub.ACCHASH.dml_0.c1.1.4711.12.1700000000000000000.88.tok") == (4711, 88)
    assert sequence_and_pending("$JS.ACK.hub.ACCHASH.dml_0.c1.1.4711.12.1700000000000000000.88") == (4711, 88)


def test_unknown_stream_is_input_error(source):
    with pytest.raises(InputError, match="no stream named"):
        source.id_range("nope")


def test_private_server_leaves_the_store_untouched(tmp_path):
    copy = tmp_path / "nats"
    shutil.copytree(STORE, copy)
    before = tree_fingerprint(copy)
    with private_nats_server(copy) as url, JetStreamSource(url) as src:
        assert sum(c.messages for c in src.list_channels()) > 0
    after = tree_fingerprint(copy)
    assert after == before


def _holding(path: Path, mode: str, *argv: str) -> subprocess.Popen:
    """A process outside mqctl's calling tree with `path` open in `mode` (and `argv` on its command line)."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"f = open({str(path)!r}, {mode!r}); import time; print('ok', flush=True); time.sleep(60)",
            *argv,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "ok"
    return holder


@pytest.mark.parametrize("writable", [False, True])
def test_private_server_refuses_a_store_another_process_writes(tmp_path, writable):
    copy = tmp_path / "nats"
    shutil.copytree(STORE, copy)
    holder = _holding(next(copy.rglob("*.blk")), "r+b")
    try:
        with pytest.raises(PreconditionError, match=rf"in use by {holder.pid} "):
            with private_nats_server(copy, writable=writable):
                pass
    finally:
        holder.kill()
        holder.wait()


def test_another_reader_of_the_store_is_no_user_for_a_read_but_is_for_a_write(tmp_path):
    """Two inspections of one store at a time (a file open for reading, another mqctl naming the store) do
    not refuse each other's read; a write (retention apply's writable server) still waits for both."""
    copy = tmp_path / "nats"
    shutil.copytree(STORE, copy)
    reader = _holding(next(copy.rglob("*.blk")), "rb")
    other_mqctl = _holding(tmp_path / "elsewhere", "w", "-m", "mqctl", "channels", "list", "--nats-store", str(copy))
    try:
        with private_nats_server(copy) as url:
            with JetStreamSource(url) as src:
                assert sum(c.messages for c in src.list_channels()) > 0
        with pytest.raises(PreconditionError, match="in use by") as refused:
            with private_nats_server(copy, writable=True):
                pass
        assert f"{reader.pid} (python" in str(refused.value) and f"{other_mqctl.pid} (python" in str(refused.value)
    finally:
        for proc in (reader, other_mqctl):
            proc.kill()
            proc.wait()


def test_store_dir_errors(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        with private_nats_server(tmp_path / "missing"):
            pass
    with pytest.raises(InputError, match="no jetstream/ folder"):
        with private_nats_server(tmp_path):
            pass


def test_unreachable_server_is_precondition_error():
    with pytest.raises(PreconditionError, match="cannot connect to NATS"):
        JetStreamSource(f"nats://127.0.0.1:{free_port()}", timeout=1)


def test_user_password_and_token_auth(tmp_path):
    proc, url = start_nats(tmp_path, 'authorization { user: admin, password: "s3cret!" }')
    try:
        with pytest.raises(PreconditionError):
            JetStreamSource(url, timeout=1)
        with JetStreamSource(url, user="admin", password="s3cret!") as src:
            assert src.list_channels() == []
            assert "s3cret" not in src.description
    finally:
        proc.terminate()
        proc.wait()
    token_dir = tmp_path / "token"
    token_dir.mkdir()
    proc, url = start_nats(token_dir, 'authorization { token: "tok-123" }')
    try:
        with JetStreamSource(url, token="tok-123") as src:
            assert src.list_channels() == []
    finally:
        proc.terminate()
        proc.wait()


def test_update_config(tmp_path):
    import asyncio

    import nats

    proc, url = start_nats(tmp_path, "")
    try:

        async def create():
            nc = await nats.connect(url)
            js = nc.jetstream()
            await js.add_stream(name="by-dev-rootcoord-dml_0", subjects=["by-dev-rootcoord-dml_0"], max_age=3600)
            for i in range(5):
                await js.publish("by-dev-rootcoord-dml_0", b"\xff" * i)
            await nc.close()

        asyncio.run(create())
        with JetStreamSource(url) as src:
            config = {**src.stream_config("by-dev-rootcoord-dml_0"), "max_age": 0, "max_bytes": 10_000, "max_msgs": 3}
            details = src.update_config("by-dev-rootcoord-dml_0", config)
            assert (details.max_age_seconds, details.max_bytes, details.max_msgs) == (0, 10_000, 3)
            assert details.messages == 3  # the server applies the new limit at once
            bad = [messages.decode(m.data) for m in src.iter_messages("by-dev-rootcoord-dml_0")]
            assert len(bad) == 3 and all(m.error for m in bad[1:])
    finally:
        proc.terminate()
        proc.wait()


def test_public_url_hides_credentials():
    assert public_url("nats://admin:pw@127.0.0.1:4222") == "nats://127.0.0.1:4222"
    assert public_url("127.0.0.1:4222") == "nats://127.0.0.1:4222"


def test_nkey_auth(tmp_path):
    nkeys = pytest.importorskip("nkeys")
    seed = nkeys.encode_seed(bytes(range(32)), nkeys.PREFIX_BYTE_USER)
    public = nkeys.from_seed(bytearray(seed)).public_key.decode()
    seed_file = tmp_path / "user.nk"
    seed_file.write_bytes(seed)
    proc, url = start_nats(tmp_path, f"authorization {{ users = [ {{ nkey: {public} }} ] }}")
    try:
        with pytest.raises(PreconditionError):
            JetStreamSource(url, timeout=1)
        with JetStreamSource(url, nkey=str(seed_file)) as src:
            assert src.list_channels() == []
    finally:
        proc.terminate()
        proc.wait()
    with pytest.raises(InputError, match="--nkey"):
        JetStreamSource(url, nkey=str(tmp_path / "missing.nk"))


def test_tls_and_client_certificates(tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
        check=True,
        capture_output=True,
    )
    proc, url = start_nats(
        tmp_path, f'tls {{ cert_file: "{cert}", key_file: "{key}", ca_file: "{cert}", verify: true }}'
    )
    try:
        with pytest.raises(PreconditionError):  # no client certificate
            JetStreamSource(url, tls_ca=str(cert), timeout=1)
        with JetStreamSource(url, tls_ca=str(cert), tls_cert=str(cert), tls_key=str(key)) as src:
            assert src.list_channels() == []
    finally:
        proc.terminate()
        proc.wait()
    with pytest.raises(InputError, match="go together"):
        JetStreamSource(url, tls_cert=str(cert))


def test_store_in_use_is_told_by_command_line_and_config_not_by_a_prefix(tmp_path):
    """An idle server keeps no store file open: its -sd argument or config file tells it serves the store; a
    config naming `store_live` does not claim `store`, and the caller's own command line never counts."""
    store, live = tmp_path / "store", tmp_path / "store_live"
    shutil.copytree(STORE, store)
    shutil.copytree(STORE, live)
    renamed = tmp_path / "milvus"  # Milvus's process name, serving the store given on its command line
    shutil.copy(nats_server_binary(), renamed)
    port = free_port()
    by_argument = subprocess.Popen(
        [str(renamed), "-js", "-sd", str(store), "-a", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    by_config, _ = start_nats(tmp_path, store_dir=live)
    try:
        deadline = time.monotonic() + 10
        while not list(store.rglob("jetstream")) and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(PreconditionError, match=r"in use by \d+ \(milvus\)"):
            with private_nats_server(store):
                pass
        by_argument.terminate()
        by_argument.wait()
        wrapper = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from mqctl.mq.nats.server import private_nats_server\n"
                "with private_nats_server(sys.argv[1]) as url: print(url)",
                str(store),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert wrapper.returncode == 0 and wrapper.stdout.startswith("nats://127.0.0.1:"), wrapper.stderr
        with pytest.raises(PreconditionError, match=r"in use by \d+"):
            with private_nats_server(live):
                pass
    finally:
        for proc in (by_argument, by_config):
            proc.terminate()
            proc.wait()


def test_a_config_names_a_store_only_by_its_whole_path(tmp_path):
    from mqctl.host.procfs import mentions_path

    config = tmp_path / "server.conf"
    config.write_text('jetstream { store_dir: "/backup/data/nats" }\n')
    assert not mentions_path(str(config), "/data/nats") and not mentions_path(str(config), "/backup/data/na")
    config.write_text('jetstream { store_dir: "/data/nats" }\n')
    assert mentions_path(str(config), "/data/nats")


def test_ready_wait_reads_a_half_written_ports_file_again(tmp_path):
    """nats-server writes its ports file in place: an empty or partial file is read again, not an error."""
    import threading

    from mqctl.mq.nats.server import _wait_ready

    log = tmp_path / "nats.log"
    log.write_text("[1] Server is ready\n")
    ports = tmp_path / "nats-server_1.ports"
    ports.write_text('{"nats": ["nats://127.0')  # cut in the middle, as seen once under load
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        timer = threading.Timer(0.3, ports.write_text, args=('{"nats": ["nats://127.0.0.1:4333"]}',))
        timer.start()
        assert _wait_ready(proc, tmp_path, log, timeout=10) == "nats://127.0.0.1:4333"
    finally:
        proc.kill()
        proc.wait()
