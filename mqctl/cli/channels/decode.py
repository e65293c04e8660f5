"""`mqctl channels decode`: one Milvus message dumped by an MQ's own tools."""

from __future__ import annotations

from typing import Annotated

import typer

from mqctl.cli.channels.group import app, emit_with_warnings
from mqctl.cli.channels.peek import render_peek
from mqctl.cli.common import (
    output,
)


@app.command()
def decode(
    payload: Annotated[
        str, typer.Argument(help="File holding one message's payload as the MQ stored it (- for standard input).")
    ],
    *,
    properties: Annotated[
        list[str] | None,
        typer.Option(
            "--property",
            help="A property (Kafka header, Pulsar property) as KEY=VALUE, repeatable: e.g. --property _t=2.",
        ),
    ] = None,
    properties_file: Annotated[
        str | None,
        typer.Option(
            "--properties",
            help="The properties from a JSON file: an object, kcat's headers array, or a whole kcat -J record.",
        ),
    ] = None,
    hex_text: Annotated[bool, typer.Option("--hex", help="The file holds the payload as hex digits.")] = False,
) -> None:
    """Decode one Milvus message dumped by an MQ's own tools (a Kafka record value, a Pulsar payload, a RocksMQ
    value): a 2.6 message by its envelope when its properties are given (Milvus 2.6 keeps them as Kafka headers
    and Pulsar properties) or the value is a 2.6 RocksMQ one, else as the msgpb request 2.3–2.5 wrote. Exit 1 when
    the bytes are not the message they claim to be (or are encrypted), 2 for a missing file or bad properties.
    2.6 format from Milvus v2.6.x source; not yet verified on a running 2.6."""
    from mqctl.mq.dumped import decode_dumped, parse_properties, read_payload

    data = read_payload(payload, hex_text=hex_text)
    result = decode_dumped(data, parse_properties(properties or [], properties_file), payload)
    emit_with_warnings(output(), result, render_peek)


# --- channels checkpoints ------------------------------------------------------------------------------
