"""`mqctl channels decode`: one message as Kafka or Pulsar tools dump it, decoded as `channels peek` decodes the same
message where mqctl reads it. The messages are the RocksMQ fixture's (written by a real Milvus 2.3.5): as they are
(what 2.3-2.5 writes as a Pulsar or Kafka payload), in the 2.6 envelope with the properties given the ways kcat and
Pulsar's tools print them (tests/helpers/woodpecker_wal.py `envelope`), and as a 2.6 RocksMQ value
(tests/helpers/rocksmq26.py); each is compared with `channels peek --rocksmq` of the fixture."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers import rocksmq26
from tests.helpers.cli import run_cli, run_cli_subprocess
from tests.helpers.woodpecker_wal import ROCKSMQ, fixture_logs

if not ROCKSMQ.exists():
    pytest.skip("tests/fixtures not written yet (python tests/helpers/make_fixtures.py)", allow_module_level=True)

COMPARED = ("type", "tso", "collection", "collection_id", "partition_id", "segment_id", "rows", "pks")


@pytest.fixture(scope="module")
def samples() -> list[tuple[bytes, dict[str, str], dict[str, Any]]]:
    """(payload, 2.6 properties, the message as `peek --rocksmq` shows it) for the first message of each type in
    the fixture's busiest topic."""
    log = max(fixture_logs(), key=lambda found: len(found.messages))
    result = run_cli("channels", "peek", log.channel, "--rocksmq", str(ROCKSMQ), "--limit", "100000", "--json")
    assert result.code == 0, result.stderr
    peeked = {(m["type"], m["tso"]): m for m in result.json()["messages"]}
    chosen: dict[str, tuple[bytes, dict[str, str], dict[str, Any]]] = {}
    from tests.helpers.streaming_meta import base36

    by_tso = {base36(m["tso"]): m for m in peeked.values()}
    for payload, properties in log.messages:
        stored = by_tso[properties["_tt"]]
        chosen.setdefault(stored["type"], (payload, properties, stored))
    assert {"Insert", "TimeTick"} <= set(chosen), chosen.keys()
    return list(chosen.values())


def _decoded(*args: str) -> dict[str, Any]:
    result = run_cli("channels", "decode", *args, "--json")
    assert result.code == 0, result.stderr + result.stdout
    (message,) = result.json()["messages"]
    return message


def test_a_2_5_payload_decodes_as_peek_shows_it(tmp_path, samples):
    for payload, _, stored in samples:
        path = tmp_path / "payload.bin"
        path.write_bytes(payload)
        decoded = _decoded(str(path))
        assert {k: decoded[k] for k in COMPARED} == {k: stored[k] for k in COMPARED}
        assert decoded["shard"] == stored["shard"]


def test_a_2_6_message_with_its_properties_given_every_way(tmp_path, samples):
    for payload, properties, stored in samples:
        path = tmp_path / "value.bin"
        path.write_bytes(payload)
        as_object = tmp_path / "properties.json"
        as_object.write_text(json.dumps(properties))  # Pulsar: a map of properties
        kcat = tmp_path / "record.json"  # kcat -J: headers as a flat array of names and values
        kcat.write_text(json.dumps({"topic": "t", "headers": [x for kv in properties.items() for x in kv]}))
        options = [arg for key, value in properties.items() for arg in ("--property", f"{key}={value}")]
        hex_path = tmp_path / "payload.hex"
        hex_path.write_text(" ".join(f"{b:02x}" for b in payload) + "\n")
        forms = [
            _decoded(str(path), "--properties", str(as_object)),
            _decoded(str(path), "--properties", str(kcat)),
            _decoded(str(path), *options),
            _decoded(str(hex_path), "--hex", "--properties", str(as_object)),
        ]
        for decoded in forms:
            assert {k: decoded[k] for k in COMPARED} == {k: stored[k] for k in COMPARED}
            assert decoded["vchannel"] == properties.get("_vc")
        rocksmq_value = tmp_path / "rocksmq.bin"  # a 2.6 RocksMQ value carries its properties itself
        rocksmq_value.write_bytes(rocksmq26.value(payload, properties))
        assert {k: _decoded(str(rocksmq_value))[k] for k in COMPARED} == {k: stored[k] for k in COMPARED}


def test_the_envelope_decides_the_type_and_an_encrypted_payload_is_not_decoded(tmp_path, samples):
    payload, properties, _ = next(s for s in samples if s[2]["type"] == "Insert")
    path = tmp_path / "insert.bin"
    path.write_bytes(payload)
    relabelled = run_cli("channels", "decode", str(path), "--property", "_v=1", "--property", "_t=6", "--json")
    assert relabelled.json()["messages"][0]["type"] == "DropCollection"  # the envelope's word, not the bytes'
    options = [arg for key, value in properties.items() for arg in ("--property", f"{key}={value}")]
    result = run_cli("channels", "decode", str(path), *options, "--property", "_ch=c2VjcmV0", "--json")
    assert result.code == 1
    (message,) = result.json()["messages"]
    assert "payload is encrypted" in message["error"] and message["rows"] == 0 and message["pks"] == []
    assert "c2VjcmV0" not in result.stdout + result.stderr


def test_bad_input_is_one_line_with_its_exit_code(tmp_path):
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(b"\xff\x00not a message")
    result = run_cli("channels", "decode", str(garbage))
    assert result.code == 1 and "not a Milvus message" in result.stderr
    odd = tmp_path / "odd.json"
    odd.write_text('["_t", "2", "_v"]')
    broken = tmp_path / "broken.json"
    broken.write_text('{"_t": 2,\n')
    for args, said in (
        (("missing.bin",), "missing.bin: no such file"),
        ((str(garbage), "--hex"), "not hex digits"),
        ((str(garbage), "--property", "_t"), "not KEY=VALUE"),
        ((str(garbage), "--properties", str(odd)), "neither an object nor an even list"),
        ((str(garbage), "--properties", str(broken)), f"{broken}:2: not JSON"),
        ((str(tmp_path),), "is a folder"),
    ):
        result = run_cli("channels", "decode", *args)
        assert result.code == 2, (args, result.stderr)
        assert said in result.stderr and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) <= 2  # the error and its hint


def test_standard_input_through_a_real_process(tmp_path, samples):
    """`kcat ... -f '%s' | mqctl channels decode -`: the payload from a pipe."""
    import subprocess
    import sys

    payload, _, stored = next(s for s in samples if s[2]["type"] == "Insert")
    from tests.helpers.paths import REPO

    proc = subprocess.run(
        [sys.executable, "-m", "mqctl", "channels", "decode", "-", "--json"],
        input=payload,
        capture_output=True,
        cwd=REPO,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    (message,) = json.loads(proc.stdout)["messages"]
    assert {k: message[k] for k in COMPARED} == {k: stored[k] for k in COMPARED}
    table = run_cli_subprocess("channels", "decode", str(_write(tmp_path, payload)))
    assert table.code == 0 and "Insert" in table.stdout and str(stored["rows"]) in table.stdout


def _write(tmp_path, payload: bytes):
    path = tmp_path / "piped.bin"
    path.write_bytes(payload)
    return path
