"""The protobuf wire format, enough to write Milvus and Woodpecker meta by hand from `.proto` field numbers
(independently of mqctl's decoders, so a wrong field number shows as a failure)."""

from __future__ import annotations

import struct


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # a negative int64 is written in two's complement: 10 bytes
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field_int(number: int, value: int) -> bytes:
    """A varint field; 0 is left out, as proto3 writes it."""
    return varint(number << 3) + varint(value) if value else b""


def field_fixed64(number: int, value: int) -> bytes:
    return varint(number << 3 | 1) + struct.pack("<Q", value) if value else b""


def field_bytes(number: int, value: bytes | str) -> bytes:
    raw = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(raw)) + raw


def field_packed(number: int, values: list[int]) -> bytes:
    """A repeated varint field, packed as proto3 writes it (left out when empty)."""
    return field_bytes(number, b"".join(varint(v) for v in values)) if values else b""


def field_bool(number: int, value: bool) -> bytes:
    return field_int(number, 1 if value else 0)
