"""One Milvus message dumped by an MQ's own tools (a Kafka record from kcat, a Pulsar message from pulsar-client,
a RocksMQ value), decoded as `mqctl channels peek` decodes a stored one.

mqctl reads no Pulsar or Kafka topic itself; what those MQs hold is the same message in another wrapping:
- Milvus 2.3-2.5 (msgstream) writes the marshalled msgpb request as the message's payload;
- Milvus 2.6 (the streaming service) writes the 2.6 envelope: its payload as the Kafka record value with its
  properties as Kafka headers (milvus pkg/streaming/walimpls/impls/kafka/wal.go `Append`, stored commit
  0ad9be097536: `kafka.Message{Value: msg.Payload(), Headers: <one per property>}`), or as a Pulsar message's payload
  and properties (pkg/streaming/walimpls/impls/pulsar/wal.go `Append`, stored commit 1bf3af6b7ca3:
  `pulsar.ProducerMessage{Payload: pb.Payload, Properties: pb.Properties}`);
- a RocksMQ value written by 2.6 carries both behind the `STREAM` prefix (decode/envelope.py `unwrap_rocksmq`).
So the payload bytes and the properties, however the tool printed them, are all there is to decode.
"""

from __future__ import annotations

import binascii
import json
import os
import re
import sys
from pathlib import Path

from mqctl.errors import InputError, PreconditionError
from mqctl.mq.channel_detail import PeekResult, peeked
from mqctl.mq.decode import messages
from mqctl.mq.decode.envelope import has_envelope, unwrap_rocksmq

MAX_PAYLOAD = 256 << 20  # a Milvus message is at most a few MiB (Pulsar's 5 MiB, Kafka's 1 MiB default)
MAX_PROPERTIES = 1 << 20  # Kafka headers and Pulsar properties of one message: far below a MiB
_HEX_NOISE = re.compile(r"0x|[\s:,]", re.IGNORECASE)
PROPERTIES_FIX = 'give a JSON object ({"_t": "2", "_v": "1", ...}) or kcat\'s headers array (["_t", "2", ...])'


def read_payload(path: str, *, hex_text: bool = False) -> bytes:
    """The payload bytes from a file (`-`: standard input); `hex_text`: the file holds them as hex digits (spaces,
    colons, commas and `0x` ignored), as `pulsar-admin` and hex dumps print them."""
    try:
        data = sys.stdin.buffer.read(MAX_PAYLOAD + 1) if path == "-" else _read_capped(path, MAX_PAYLOAD)
    except FileNotFoundError:
        raise InputError(
            f"{path}: no such file", hint="give the file the payload was saved to, or - for stdin"
        ) from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, not a payload file") from None
    except OSError as err:
        raise PreconditionError(f"cannot read {path}: {err.strerror}") from None
    if len(data) > MAX_PAYLOAD:
        raise InputError(f"{path}: more than {MAX_PAYLOAD >> 20} MiB: not one message")
    if not hex_text:
        return data
    text = data.decode("ascii", "replace")
    digits = _HEX_NOISE.sub("", text)
    try:
        return binascii.unhexlify(digits)
    except (binascii.Error, ValueError) as err:
        raise InputError(
            f"{path}: not hex digits ({err})", hint="drop --hex to read the file's bytes as they are"
        ) from None


def parse_properties(pairs: list[str], file: str | None = None) -> dict[str, str]:
    """Properties from `KEY=VALUE` options and a JSON file: an object (Pulsar's properties) or a flat array of
    alternating names and values (kcat -J's `headers`); the options win over the file."""
    found: dict[str, str] = {}
    if file is not None:
        for key, value in _property_items(file):
            if not isinstance(key, str) or not isinstance(value, (str, int)) or isinstance(value, bool):
                raise InputError(f"{file}: property {key!r}: names and values must be strings", hint=PROPERTIES_FIX)
            if isinstance(value, int) and not -(1 << 63) <= value < 1 << 64:
                raise InputError(f"{file}: property {key!r}: the number is beyond 64 bits", hint=PROPERTIES_FIX)
            found[key] = str(value)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError(f"--property {pair!r}: not KEY=VALUE", hint="e.g. --property _t=2 --property _v=1")
        if not _is_utf8(pair):
            shown = pair.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            raise InputError(
                f"--property {shown!r}: not UTF-8 text (a property is a string)",
                hint="pass the value as the MQ printed it; a binary header goes in a --properties JSON file as text",
            )
        found[key] = value
    return found


def _read_capped(path: str, cap: int) -> bytes:
    """At most `cap` + 1 bytes of a file. A FIFO is opened without waiting for a writer: one nobody writes to
    reads as empty at once instead of hanging, while `<(kcat ...)` (a pipe with its writer) is read as usual."""
    fd = os.open(Path(path).expanduser(), os.O_RDONLY | os.O_NONBLOCK)
    try:
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        size = 0
        while size <= cap:
            chunk = os.read(fd, min(1 << 20, cap + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _property_items(file: str) -> list[tuple[object, object]]:
    """The (name, value) pairs of a --properties JSON file, read up to MAX_PROPERTIES bytes (a FIFO or
    /dev/zero is refused, never read into memory without end); nesting and numbers are bounded by JSON's
    own parser, whose RecursionError or digit limit becomes one line."""
    try:
        raw = _read_capped(file, MAX_PROPERTIES)
    except FileNotFoundError:
        raise InputError(f"{file}: no such file", hint=PROPERTIES_FIX) from None
    except IsADirectoryError:
        raise InputError(f"{file}: is a folder, not a JSON file", hint=PROPERTIES_FIX) from None
    except OSError as err:
        raise InputError(f"{file}: cannot read it: {err.strerror or err}", hint=PROPERTIES_FIX) from None
    if len(raw) > MAX_PROPERTIES:
        raise InputError(
            f"{file}: more than {MAX_PROPERTIES >> 10} KiB: not the properties of one message", hint=PROPERTIES_FIX
        )
    try:
        loaded = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise InputError(f"{file}: not UTF-8 text (byte {err.start})", hint=PROPERTIES_FIX) from None
    except json.JSONDecodeError as err:
        raise InputError(f"{file}:{err.lineno}: not JSON: {err.msg}", hint=PROPERTIES_FIX) from None
    except RecursionError:
        raise InputError(f"{file}: nested too deeply: not a properties object", hint=PROPERTIES_FIX) from None
    except ValueError:  # an integer past Python's digit limit (4300)
        raise InputError(f"{file}: a number with thousands of digits: not a property", hint=PROPERTIES_FIX) from None
    if isinstance(loaded, dict) and isinstance(loaded.get("headers"), list):
        loaded = loaded["headers"]  # a whole kcat -J record
    if isinstance(loaded, dict):
        return list(loaded.items())
    if isinstance(loaded, list) and len(loaded) % 2 == 0:
        return list(zip(loaded[::2], loaded[1::2], strict=True))
    raise InputError(f"{file}: neither an object nor an even list of names and values", hint=PROPERTIES_FIX)


def _is_utf8(text: str) -> bool:
    """False for a command-line argument holding bytes that are not UTF-8 (Python keeps them as surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def decode_dumped(data: bytes, properties: dict[str, str], label: str) -> PeekResult:
    """The message these bytes and properties are: a 2.6 envelope when the properties carry one (or the bytes are a
    2.6 RocksMQ value), else a 2.3-2.5 msgpb request."""
    unwrapped = unwrap_rocksmq(data)
    if unwrapped is not None:
        data, stored = unwrapped
        properties = {**stored, **properties}
    enveloped = has_envelope(properties)
    if not data and not enveloped:
        raise InputError(
            f"{label}: empty: no message to decode (a 2.3-2.5 message starts with its header)",
            hint="give the file the record's value or payload was saved to; a 2.6 message also needs its "
            "properties (--property _v=1 --property _t=N ..., or --properties FILE)",
        )
    msg = messages.decode(data, properties or None)
    if msg.error is None and not enveloped and msg.type_code == 0:
        msg.error = "not a Milvus message: its header names no message type (MsgType 0)"
    return PeekResult(label, [peeked(0, msg, properties or None)], [f"{label}: {msg.error}"] if msg.error else [])
