"""Values no real deployment writes, but a damaged store, a typo or a hostile file can: each ends in one error line
(exit 2) or a finding (exit 1) that names it, never an internal error, a traceback, exit 0 on nothing decoded, or
a piece of a password on the terminal or in the JSON."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers.cli import CliResult, run_cli
from tests.helpers.paths import FIXTURES, SAMPLES
from tests.helpers.servers import start_nats

ROCKSMQ = FIXTURES / "rocksmq" / "rdb_data"
CONFIG = str(SAMPLES / "milvus-2.3-standalone-rocksmq.yaml")
NATS_CONFIG = str(SAMPLES / "milvus-2.3-standalone-natsmq.yaml")
# a password holding every character that ends a naive userinfo: '@', ':', '/', '%' (no valid %-escape)
SECRET = "pa@ss:w/rd%zz"
PIECES = ("pa@ss", "ss:w", "w/rd", "rd%zz", "%zz", "ss:w/rd")


def one_error_line(result: CliResult, code: int = 2) -> str:
    """The one error line of a failed run (its hint on the same line; a progress note may come before it), no
    internal error, no traceback."""
    assert result.code == code, (result.code, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr + result.stdout
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1 and lines[-1] == errors[0], result.stderr
    return errors[0]


def assert_no_secret(result: CliResult) -> None:
    shown = result.stdout + result.stderr
    leaked = [piece for piece in PIECES if piece in shown]
    assert not leaked, (leaked, shown)


# --- class 4: internal errors become one line ------------------------------------------------------------------
BROKEN_ENDPOINTS = ["http://[::1", "http://::1]:2379", "http://[::1]x:2379", "http://h:99999", "http://h:12ab"]


@pytest.mark.parametrize("endpoint", BROKEN_ENDPOINTS)
@pytest.mark.parametrize(
    "command",
    [
        ["config", "explain", CONFIG, "--etcd", "{url}"],
        ["channels", "checkpoints", "--config", CONFIG, "--etcd", "{url}"],
        ["doctor", "--config", CONFIG, "--etcd", "{url}"],
        ["channels", "list", "--nats", "{url}"],
        ["channels", "woodpecker", "s3://bucket/wp", "--s3-endpoint", "{url}"],
        ["migrate", "plan", "--config", CONFIG, "--to", "natsmq", "--milvus", "{url}"],
        [
            "migrate",
            "plan",
            "--config",
            CONFIG,
            "--to",
            "natsmq",
            "--milvus",
            "http://127.0.0.1:9",
            "--health-url",
            "{url}",
        ],
    ],
    ids=["config-etcd", "checkpoints-etcd", "doctor-etcd", "nats", "s3-endpoint", "milvus", "health-url"],
)
def test_an_endpoint_with_a_missing_bracket_or_a_bad_port_is_one_line_naming_its_option(command, endpoint):
    args = [endpoint if arg == "{url}" else arg for arg in command]
    result = run_cli(*args)
    line = one_error_line(result)
    option = command[command.index("{url}") - 1]
    assert option in line and "is not a valid URL" in line, line
    as_json = run_cli(*args, "--json")
    assert as_json.code == 2 and as_json.json()["error"]["kind"] == "input"


def test_a_time_tick_beyond_64_bits_is_shown_as_out_of_range_in_show_peek_and_decode(tmp_path):
    from tests.helpers import rocksmq26

    store = tmp_path / "rdb_data"
    shutil.copytree(ROCKSMQ, store)
    shutil.copytree(ROCKSMQ.with_name("rdb_data_meta_kv"), tmp_path / "rdb_data_meta_kv")
    topic = "by-dev-rootcoord-dml_3"
    huge = "z" * 20  # 36**20: past any uint64 TSO (the example of the issue: `year ... is out of range`)
    rocksmq26.append(store, topic, [(b"", {"_v": "1", "_t": "1", "_tt": huge})])
    for command in (["show", topic], ["peek", topic, "--limit", "10000"]):
        result = run_cli("channels", *command, "--rocksmq", str(store), "--json")
        assert "internal error" not in result.stderr and "Traceback" not in result.stderr, result.stderr
        assert result.code in (0, 1), result.stderr
    peeked = run_cli("channels", "peek", topic, "--rocksmq", str(store), "--limit", "10000", "--json")
    last = peeked.json()["messages"][-1]
    assert last["time"] is None and last["tso"] is None and "beyond 64 bits" in last["error"]
    table = run_cli("channels", "peek", topic, "--rocksmq", str(store), "--limit", "10000", "--wide")
    assert "beyond 64 bits" in table.stdout and "Traceback" not in table.stderr  # the error column says so
    payload = tmp_path / "tick.bin"
    payload.write_bytes(b"")
    decoded = run_cli(
        "channels", "decode", str(payload), "--property", "_v=1", "--property", "_t=1", "--property", f"_tt={huge}"
    )
    assert decoded.code == 1 and "beyond 64 bits" in decoded.stderr and "Traceback" not in decoded.stderr


def test_a_property_with_bytes_that_are_not_utf8_is_one_line(tmp_path):
    payload = tmp_path / "garbage.bin"
    payload.write_bytes(b"\x08\x01")
    undecodable = "_vc=\udcff\udcfe"  # what Python makes of the bytes FF FE in argv (surrogateescape)
    line = one_error_line(run_cli("channels", "decode", str(payload), "--property", undecodable))
    assert "--property" in line and "not UTF-8" in line and "\\xff" in line


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"_t": ' + "9" * 5000 + "}", "thousands of digits"),
        ('{"_t": ' + str(1 << 70) + "}", "beyond 64 bits"),
        (b"\xff\xfe{}", "not UTF-8"),
    ],
    ids=["deep", "digits", "int65", "not-utf8"],
)
def test_a_properties_file_with_hostile_json_is_one_line(tmp_path, content, said):
    payload = tmp_path / "garbage.bin"
    payload.write_bytes(b"\x08\x01")
    properties = tmp_path / "properties.json"
    if isinstance(content, bytes):
        properties.write_bytes(content)
    else:
        properties.write_text(content)
    line = one_error_line(run_cli("channels", "decode", str(payload), "--properties", str(properties)))
    assert said in line and str(properties) in line


def test_a_properties_file_without_end_or_writer_is_refused_without_reading_it_whole(tmp_path):
    """/dev/zero is read up to the cap (1 MiB) only; a FIFO nobody writes to reads as empty at once."""
    import os

    payload = tmp_path / "garbage.bin"
    payload.write_bytes(b"\x08\x01")
    line = one_error_line(run_cli("channels", "decode", str(payload), "--properties", "/dev/zero", timeout=60))
    assert "/dev/zero" in line and "more than" in line
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    line = one_error_line(run_cli("channels", "decode", str(payload), "--properties", str(fifo), timeout=60))
    assert "not JSON" in line
    line = one_error_line(run_cli("channels", "decode", str(fifo), timeout=60))
    assert "empty" in line


# --- channels decode: an empty or malformed payload is never exit 0 -------------------------------------------
def test_an_empty_payload_is_exit_2_and_a_payload_without_a_message_type_a_finding(tmp_path):
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    line = one_error_line(run_cli("channels", "decode", str(empty)))
    assert "empty" in line and str(empty) in line
    assert run_cli("channels", "decode", str(empty), "--json").json()["error"]["kind"] == "input"
    typeless = tmp_path / "typeless.bin"  # parses as a MsgHeader (an unknown field 15), but names no type
    typeless.write_bytes(bytes([0x78, 0x01]))
    result = run_cli("channels", "decode", str(typeless), "--json")
    assert result.code == 1 and "names no message type" in result.json()["messages"][0]["error"]
    malformed = tmp_path / "malformed.bin"
    malformed.write_bytes(b"\xff\xff\xff")
    result = run_cli("channels", "decode", str(malformed))
    assert result.code == 1 and "not a Milvus message" in result.stderr


# --- class 5: no piece of a password is ever shown -------------------------------------------------------------
def test_url_redaction_masks_every_password_whole():
    from mqctl.secrets import REDACTED, mask_url_passwords
    from mqctl.urls import safe_url, split_url, without_password

    for url in (
        f"http://user:{SECRET}@127.0.0.1:2379",
        f"user:{SECRET}@127.0.0.1:2379",
        f"nats://:{SECRET}@[::1]:4222",
        f"http://user:{SECRET}@host:9000/path",
    ):
        for shown in (safe_url(url), mask_url_passwords(url), mask_url_passwords(f"at {url!r}, then")):
            assert not any(piece in shown for piece in PIECES) and REDACTED in shown, (url, shown)
        assert not any(piece in without_password(url) for piece in PIECES)
        _, _, password = split_url(url, "--etcd")
        assert password == SECRET
    listed = mask_url_passwords(f"u:{SECRET}@h1:9092,v:{SECRET}@h2:9092 and http://a:{SECRET}@h3,http://b:x@h4")
    assert not any(piece in listed for piece in PIECES) and "h2:9092" in listed and "h4" in listed


@pytest.mark.parametrize(
    "command",
    [
        ["config", "explain", CONFIG, "--etcd", "{url}"],
        ["channels", "checkpoints", "--config", CONFIG, "--etcd", "{url}"],
        ["doctor", "--config", CONFIG, "--etcd", "{url}"],
        ["channels", "list", "--nats", "{url}", "--timeout", "1"],
        ["retention", "show", "--config", NATS_CONFIG, "--nats", "{url}", "--timeout", "1"],
        ["migrate", "plan", "--config", CONFIG, "--to", "natsmq", "--milvus", "{url}"],
        ["migrate", "plan", "--config", CONFIG, "--to", "natsmq", "--etcd", "{url}"],
        ["channels", "woodpecker", "s3://bucket/wp", "--s3-endpoint", "{url}"],
    ],
    ids=["config", "checkpoints", "doctor", "nats", "retention", "milvus", "migrate-etcd", "s3-endpoint"],
)
@pytest.mark.parametrize(
    "url",
    [
        f"http://user:{SECRET}@127.0.0.1:9",
        f"user:{SECRET}@127.0.0.1:9",
        f"http://user:{SECRET}@[::1",
        f"http://user:{SECRET}@127.0.0.1:port",
    ],
    ids=["scheme", "no-scheme", "bracket", "port"],
)
def test_no_piece_of_a_password_reaches_the_terminal_or_the_json(command, url):
    args = [url if arg == "{url}" else arg for arg in command]
    for json_mode in ([], ["--json"]):
        result = run_cli(*args, *json_mode, timeout=120)
        assert_no_secret(result)
        assert "internal error" not in result.stderr + result.stdout and "Traceback" not in result.stderr
        if json_mode and result.stdout.strip():
            json.loads(result.stdout)  # one JSON object, failures included


@pytest.fixture(scope="module")
def nats_with_password(tmp_path_factory):
    """A real nats-server whose user's password holds '@', ':', '/' and '%'."""
    folder: Path = tmp_path_factory.mktemp("nats-auth")
    conf = f"authorization {{ user: admin, password: {json.dumps(SECRET)} }}"
    proc, url = start_nats(folder, conf)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def test_a_password_with_at_colon_slash_percent_in_the_url_logs_in_and_is_never_shown(nats_with_password):
    host = nats_with_password.removeprefix("nats://")
    result = run_cli("channels", "list", "--nats", f"nats://admin:{SECRET}@{host}", "--json")
    assert result.code == 0, result.stderr  # logged in: the password reached nats-server whole
    assert_no_secret(result)
    refused = run_cli("channels", "list", "--nats", f"nats://admin:{SECRET}x@{host}")
    assert refused.code == 3 and "Traceback" not in refused.stderr
    assert_no_secret(refused)


DEEP = "[" * 100_000 + "]" * 100_000


def test_a_state_file_of_hostile_json_is_one_line(tmp_path):
    """The files mqctl reads back (a replay checkpoint, a migration journal, a sandbox's state) hold hostile
    JSON: one line naming the file, never a RecursionError or a digit-limit error as an internal error."""
    checkpoint = tmp_path / "checkpoint.json"
    for content in (DEEP, '{"format": ' + "1" * 5000 + "}"):
        checkpoint.write_text(content)
        replay = f"replay --to-spark --collection items --rocksmq {ROCKSMQ} --output {tmp_path / 'out'}".split()
        result = run_cli(*replay, "--checkpoint", str(checkpoint))
        line = one_error_line(result)
        assert str(checkpoint) in line, line
    state = tmp_path / "state"
    state.mkdir()
    (state / ".mqctl-migrate.json").write_text(DEEP)
    line = one_error_line(run_cli("migrate", "status", "--state-dir", str(state)))
    assert "unreadable migration journal" in line


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--master", "spark://[::1"),
        ("--master", "spark://h1:7077,[::1:7077"),
        ("--master", "k8s://https://[::1:443"),
        ("--master", "spark://h:port"),
        ("--remote", "sc://[::1"),
    ],
)
def test_a_spark_master_or_connect_url_with_a_missing_bracket_is_one_line_before_spark_starts(tmp_path, option, value):
    replay = f"replay --to-spark --collection items --rocksmq {ROCKSMQ} --output {tmp_path / 'out'}".split()
    line = one_error_line(run_cli(*replay, option, value))
    assert option in line and "is not a valid URL" in line and "Spark" not in line.split("—")[0], line
