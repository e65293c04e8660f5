"""What `mqctl channels show` and `peek` report: one channel in depth, decoded messages. Apart from
mqctl.mq.channels so that `channels list` does not create these shapes (issue 33: start-up)."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from mqctl.errors import InputError
from mqctl.mq.channels import data_warnings, find_channel, require_channel
from mqctl.mq.model import ChannelInfo, MQSource, PageRow, WalSegment
from mqctl.sorting import ascii_int

if TYPE_CHECKING:  # the decoders load in the commands that decode (show, peek), not in `channels list`
    from mqctl.mq.decode.model import DecodedMessage
    from mqctl.mq.decode.schemas import CollectionSchemaInfo


@dataclass
class CollectionSeen:
    id: int | None
    name: str | None
    schema_in_stream: bool  # a CreateCollection message carries its schema


@dataclass
class ChannelDetail:
    source: str
    channel: ChannelInfo
    types: dict[str, int]
    collections: list[CollectionSeen]
    undecodable: int
    created_at: dt.datetime | None = None  # RocksMQ topic creation
    open_page_size: int | None = None  # RocksMQ: bytes in the page still being written
    pages: list[PageRow] | None = None  # RocksMQ closed pages
    stream: dict[str, Any] | None = None  # JetStream config and state
    warnings: list[str] = field(default_factory=list)  # data and metadata disagree (see data_warnings)
    segments: list[WalSegment] | None = None  # Woodpecker segments of the log
    topic: dict[str, Any] | None = None  # Kafka: partitions and offsets, watched configs, consumer groups


def show_channel(source: MQSource, name: str) -> ChannelDetail:
    """Everything known about one channel; reads every message once to count types and collections."""
    from mqctl.mq.decode import messages
    from mqctl.mq.decode.schemas import schema_from_create

    if source.mq == "woodpecker":  # every message is read anyway: the verifying read (payload bytes, every CRC)
        from mqctl.mq.woodpecker.source import WoodpeckerSource

        cast(WoodpeckerSource, source).verify = True
    channel = find_channel(source, name)
    types: Counter[str] = Counter()
    collections: dict[int | None, CollectionSeen] = {}
    undecodable = 0
    counted = 0  # the bytes of the records read, where the MQ does not say (Kafka)
    for raw in source.iter_messages(name):
        counted += len(raw.data) + sum(len(k) + len(v) for k, v in raw.headers.items())
        msg = messages.decode(raw.data, raw.headers)
        types[msg.type] += 1
        undecodable += msg.error is not None
        schema = schema_from_create(msg)
        if schema is not None:
            collections[msg.collection_id] = CollectionSeen(msg.collection_id, schema.name, True)
        elif msg.collection_id and msg.collection_id not in collections:
            collections[msg.collection_id] = CollectionSeen(msg.collection_id, msg.collection, False)
    detail = ChannelDetail(
        source.description,
        channel,
        dict(types.most_common()),
        sorted(collections.values(), key=lambda c: c.id or 0),
        undecodable,
        warnings=data_warnings(source, name),
    )
    if channel.bytes is None:
        channel.bytes = counted
    extras = source.channel_extras(name)
    detail.created_at, detail.open_page_size = extras.created_at, extras.open_page_size
    detail.pages, detail.stream, detail.segments = extras.pages, extras.stream, extras.segments
    detail.topic = extras.topic
    return detail


@dataclass
class PeekedMessage:
    id: int
    type: str
    time: dt.datetime | None
    tso: int | None
    collection: str | None
    collection_id: int | None
    partition_id: int | None
    segment_id: int | None
    shard: str | None
    rows: int
    pks: list[int | str] = field(default_factory=list)
    error: str | None = None
    position: str | None = None  # Woodpecker: `segment/entry`, as Milvus prints its message id
    vchannel: str | None = None  # 2.6: the `_vc` of the message's envelope
    txn: int | None = None  # 2.6: the id of the transaction the message belongs to (`_tx`), as stored: not buffered
    detail: str | None = None  # 2.6: what a version-2 message says beyond the other fields (decode/bodies.py)


@dataclass
class PeekResult:
    channel: str
    messages: list[PeekedMessage]
    warnings: list[str] = field(default_factory=list)  # data and metadata disagree (see data_warnings)


def parse_start(text: str | None, source: MQSource | None = None) -> tuple[int | None, int | None]:
    """--from: a message id / sequence (digits), a Woodpecker `segment/entry`, or an ISO-8601 time ->
    (start_id, start_tso)."""
    if text is None:
        return None, None
    start_id = ascii_int(text.strip())
    if start_id is not None:
        return start_id, None
    if source is not None and source.mq == "woodpecker":
        from mqctl.mq.woodpecker.source import parse_position

        position = parse_position(text)
        if position is not None:
            return position, None
    try:
        when = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError(
            f"--from {text!r} is neither a message id nor a time",
            hint="pass an id/sequence (e.g. 470633384162885633 or 15; Woodpecker also segment/entry, e.g. 3/17) or an "
            "ISO time (e.g. 2024-05-01T12:00:00Z)",
        ) from None
    from mqctl.mq.decode.tso import datetime_to_tso

    return None, datetime_to_tso(when)


def parse_types(text: str | None) -> set[int] | None:
    """--type insert,delete,1200 -> message type codes."""
    if not text:
        return None
    from mqctl.mq.decode import messages

    codes = set()
    for name in filter(None, (part.strip() for part in text.split(","))):
        code = messages.type_code(name)
        if code is None:
            raise InputError(
                f"--type {name!r} is not a Milvus message type",
                hint="use names like insert, delete, timetick, createcollection, or a number",
            )
        codes.add(code)
    if not codes:  # `--type ,` would otherwise match nothing, silently
        raise InputError(f"--type {text!r} names no message type", hint="e.g. --type insert,delete")
    return codes


def peeked(
    message_id: int, msg: DecodedMessage, headers: dict[str, str] | None, position: str | None = None
) -> PeekedMessage:
    """One decoded message as `peek` shows it, with its 2.6 envelope's vchannel and transaction when it has one."""
    from mqctl.mq.decode.envelope import has_envelope, read_envelope

    envelope = read_envelope(headers) if headers and has_envelope(headers) else None
    return PeekedMessage(
        message_id,
        msg.type,
        msg.time,
        msg.tso,
        msg.collection,
        msg.collection_id,
        msg.partition_id,
        msg.segment_id,
        msg.shard,
        msg.rows,
        msg.pks,
        msg.error,
        position,
        envelope.vchannel if envelope else None,
        envelope.txn_id if envelope else None,
        msg.detail,
    )


def peek(
    source: MQSource,
    name: str,
    *,
    start: str | None = None,
    limit: int = 20,
    types: str | None = None,
    collection: str | None = None,
) -> PeekResult:
    """Decoded messages of one channel, oldest first, after the filters; stops after `limit` matches."""
    if limit < 1:
        raise InputError(f"--limit {limit} must be at least 1", hint="e.g. --limit 20")
    start_id, start_tso = parse_start(start, source)
    wanted_types = parse_types(types)
    from mqctl.mq.decode import messages
    from mqctl.mq.decode.schemas import schema_from_create
    from mqctl.mq.woodpecker.source import position_of

    require_channel(source, name)
    schemas: dict[int, CollectionSchemaInfo] = {}
    found = []
    for raw in source.iter_messages(name, start_id=start_id):
        msg = messages.decode(raw.data, raw.headers, schemas=schemas)
        schema = schema_from_create(msg)
        if schema is not None and schema.collection_id:
            schemas[schema.collection_id] = schema
        if start_tso is not None and (msg.tso or 0) < start_tso:
            continue
        if wanted_types is not None and msg.type_code not in wanted_types:
            continue
        if collection is not None and msg.collection != collection:
            continue
        found.append(peeked(raw.id, msg, raw.headers, position_of(raw.id) if source.mq == "woodpecker" else None))
        if len(found) >= limit:
            break
    # Woodpecker: a corrupt segment among those read, whose entries after the damage are not among those peeked
    return PeekResult(name, found, _peek_warnings(source, name) if source.mq == "woodpecker" else [])


def _peek_warnings(source: MQSource, name: str) -> list[str]:
    from typing import cast

    from mqctl.mq.woodpecker.source import WoodpeckerSource

    found = cast(WoodpeckerSource, source).data_warnings(read_so_far=True)
    return [message for channel, message in found if channel in (None, name)]
