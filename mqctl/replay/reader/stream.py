"""Follow mode: `milvus_mq` as a Spark Structured Streaming source (`spark.readStream.format("milvus_mq")`).

Offsets are one position per channel, as JSON: the next RocksMQ message id / JetStream sequence to read
(`{"by-dev-rootcoord-dml_0": 470633384162885984, ...}`). Spark keeps them in its checkpoint, so nothing is
acknowledged and no durable consumer exists: the MQ is only read (RocksMQ read-only, JetStream through
ephemeral consumers with `ack_policy: none`, as the batch reader does).

- **Visibility**: a Milvus DML channel is emitted only up to its latest time tick. After a time tick T no
  message with a TSO at or below T follows on that channel, so every batch ends on a consistent cut, the
  one Milvus itself reads up to; what follows the tick waits for the next one. Channels that carry no time
  ticks (`by-dev-replicate-msg`) are emitted up to their last message. A Woodpecker log (Milvus 2.6, offsets are
  message ids) is emitted up to its last complete entry. On what 2.6 wrote (Woodpecker, RocksMQ `STREAM` values)
  no batch ends inside an open transaction (open_transactions.py).
- **Deterministic batches**: `partitions(start, end)` depends only on the offsets (and on which messages
  the MQ still holds), so a retried batch reads the same messages.
- **Admission control**: `maxMessagesPerTrigger` caps the messages of one batch, shared among the channels
  by their backlog (natively through `getDefaultReadLimit` on pyspark >= 4.2; on 4.0/4.1 the same cap is
  applied inside `latestOffset`).
- **Data loss**: a channel whose first stored message lies after the query's position lost messages to
  retention (RocksMQ purge, JetStream max_age/max_bytes); the query fails with the channel, the first
  missing position and how many were lost, unless `failOnDataLoss` is false (then it warns and goes on).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition

from mqctl.replay.reader.open_transactions import transaction_safe_end, transaction_safe_start
from mqctl.replay.reader.positions import WOODPECKER, count_messages, end_after, share, visible_end
from mqctl.replay.reader.worker import ChannelRangePartition, _arrow_schema, _load_runtime

if TYPE_CHECKING:
    from mqctl.mq.model import MQSource
    from mqctl.replay.reader.options import ReplayOptions

try:  # pyspark >= 4.2: admission control and Trigger.AvailableNow for Python sources
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )

    _AVAILABLE_NOW: tuple[type, ...] = (SupportsTriggerAvailableNow,)
except ImportError:  # pyspark 4.0/4.1
    ReadAllAvailable = ReadMaxRows = None  # type: ignore[assignment,misc]
    _AVAILABLE_NOW = ()

STARTS = ("earliest", "latest")
# stream options (beside the batch read's, see options.py)
STARTING_OFFSETS = "startingoffsets"
MAX_MESSAGES = "maxmessagespertrigger"
FAIL_ON_DATA_LOSS = "failondataloss"


class StreamPartition(ChannelRangePartition):
    """A piece of one channel for one micro-batch; `loss_from`: the batch's start in this channel, where the
    executor checks that no message was lost before it reads (only on the channel's first piece)."""

    def __init__(self, channel: str, first: int, last: int, messages: int, store: str | None, loss_from: int | None):
        super().__init__(channel, first, last, messages, store)
        self.loss_from = loss_from


@dataclass(frozen=True)
class StreamSettings:
    """The stream-only options, parsed."""

    starting: str | dict[str, int]  # earliest | latest | {channel: position}
    max_messages: int | None
    fail_on_data_loss: bool


def stream_settings(options: dict[str, str]) -> StreamSettings:
    from mqctl.errors import InputError
    from mqctl.sorting import ascii_int

    opts = {str(k).lower(): str(v) for k, v in dict(options).items() if v is not None}
    if opts.get("to") or opts.get("ranges"):
        raise InputError("a stream reads without an end: options 'to' and 'ranges' are for spark.read only")
    text = (opts.get(STARTING_OFFSETS) or "earliest").strip()
    starting: str | dict[str, int]
    if text.lower() in STARTS:
        starting = text.lower()
    else:
        try:
            starting = {str(k): int(v) for k, v in json.loads(text).items()}
        except (ValueError, TypeError, AttributeError):
            raise InputError(
                f"option startingOffsets {text!r} is neither earliest, latest nor JSON like "
                '{"by-dev-rootcoord-dml_0": POSITION, ...}'
            ) from None
    cap = None
    if opts.get(MAX_MESSAGES):
        cap = ascii_int(opts[MAX_MESSAGES].strip())
        if cap is None or cap < 1:
            raise InputError(f"option maxMessagesPerTrigger {opts[MAX_MESSAGES]!r} is not a positive whole number")
    fail = (opts.get(FAIL_ON_DATA_LOSS) or "true").strip().lower()
    if fail not in ("true", "false"):
        raise InputError(f"option failOnDataLoss {opts[FAIL_ON_DATA_LOSS]!r} is not true or false")
    return StreamSettings(starting, cap, fail == "true")


# -------------------------------------------------------------------------------- positions
@dataclass
class LostRange:
    channel: str
    first_missing: int  # the query's position, the first message it did not get
    first_stored: int  # the first message the MQ still holds
    lost: int | None  # None: RocksMQ, whose ids have gaps, cannot tell

    def describe(self) -> str:
        count = (
            f"{self.lost:,} message(s)"
            if self.lost is not None
            else "messages (how many is unknown: RocksMQ and Woodpecker ids have gaps)"
        )
        return (
            f"channel {self.channel}: {count} lost before the query read them, positions {self.first_missing} "
            f"to {self.first_stored - 1} (retention removed them; the first message kept is {self.first_stored})"
        )


def lost_range(source: MQSource, channel: str, position: int, first_stored: int | None) -> LostRange | None:
    """Messages the query had not read and the MQ no longer holds (position 0: a channel read from its start). On
    Woodpecker the next segment's first entry continues a position (truncation removes whole segments)."""
    if position <= 0 or first_stored is None or first_stored <= position:
        return None
    if source.mq == WOODPECKER:
        from mqctl.replay.reader.woodpecker import continues

        if continues(position, first_stored):
            return None
    lost = first_stored - position if source.sequential_ids else None
    return LostRange(channel, position, first_stored, lost)


def _kafka_topic_lost(
    source: MQSource, topic: str, position: int, bounds: tuple[int, int] | None, listed: bool, fail: bool
) -> None:
    """A Kafka topic the query has read that is gone, or that ends before the query's position: deleted (and, as
    Milvus's producers auto-create topics, maybe created again with offsets from 0), so what it held after the
    position is lost and the offsets no longer mean what the checkpoint recorded (Spark's Kafka source reports the
    same as data loss)."""
    if not listed:
        what = f"topic {topic} no longer exists (deleted after the query read it up to offset {position})"
    elif (end := _kafka_end(source, topic, bounds)) < position:
        what = (
            f"topic {topic} ends at offset {end}, before the query's position {position}: it was deleted and created "
            "again, and what it held after the position is gone"
        )
    else:
        return
    _report_loss(what, fail)


def _kafka_end(source: MQSource, topic: str, bounds: tuple[int, int] | None) -> int:
    """The offset the topic's next record gets (a topic whose records all expired is empty, not reset)."""
    if bounds is not None:
        return bounds[1] + 1
    found = source.channel_bounds({topic}).get(topic)
    return found.first if found is not None and found.first is not None else 0


def data_loss(found: LostRange, fail: bool) -> None:
    _report_loss(found.describe(), fail)


def _report_loss(what: str, fail: bool) -> None:
    """Fail (failOnDataLoss) or warn on stderr and go on."""
    from mqctl.errors import PreconditionError

    if fail:
        raise PreconditionError(
            f"data loss: {what}",
            hint="restart the query on a new checkpoint (and backfill with a batch replay), "
            "or accept the loss with --allow-data-loss (failOnDataLoss=false)",
        )
    print(f"warning: data loss: {what}; going on (failOnDataLoss=false)", file=sys.stderr, flush=True)


def starting_offsets(source: MQSource, opts: ReplayOptions, settings: StreamSettings) -> dict[str, int]:
    """The positions a new query starts at: earliest, latest, given, after `from` (an id) or after each
    pchannel's earliest Milvus channel checkpoint (`after`, --from checkpoint)."""
    names = opts.select_channels([info.name for info in source.list_channels(message_times=False)])
    bounds = source.channel_bounds(set(names))
    given = settings.starting if isinstance(settings.starting, dict) else {}
    unpersisted = opts.first_unpersisted() if opts.after is not None else {}
    offsets = {}
    for name in names:
        bound = bounds.get(name)
        first = bound.first if bound and bound.first is not None else 0
        last = bound.last if bound else None
        if name in given:
            position = given[name]
        elif settings.starting == "latest":
            position = last + 1 if last is not None else first
        else:
            position = first
        if name in unpersisted:
            position = max(position, unpersisted[name])
        if opts.start is not None and opts.start.kind == "id":
            position = max(position, opts.start.value)
        offsets[name] = position
    return offsets


# -------------------------------------------------------------------------------- the reader
class MilvusMQStreamReader(DataSourceStreamReader, *_AVAILABLE_NOW):  # type: ignore[misc]
    """The streaming half of `milvus_mq`. It lives in one long-running Python worker on the driver; each
    call opens the source afresh (a RocksMQ opened read-only sees the store as it was when opened)."""

    def __init__(self, options: dict[str, str], schema):
        self.options = options
        self.schema = schema
        self.settings = stream_settings(options)
        self._target: dict[str, int] | None = None  # Trigger.AvailableNow: nothing after this
        self._last: dict[str, int] | None = None  # pyspark 4.0/4.1 call latestOffset() without a start

    def _opts(self) -> ReplayOptions:
        from mqctl.replay.reader.options import parse_options

        return parse_options(self.options)

    def initialOffset(self) -> dict:
        _load_runtime()
        opts = self._opts()
        source = opts.open_source()
        try:
            offsets = starting_offsets(source, opts, self.settings)
            if self.settings.starting == "latest":  # before a 2.6 transaction still open there
                offsets = {name: transaction_safe_start(source, name, position) for name, position in offsets.items()}
        finally:
            source.close()
        self._last = offsets
        return offsets

    def getDefaultReadLimit(self):
        if self.settings.max_messages is not None and ReadMaxRows is not None:
            return ReadMaxRows(self.settings.max_messages)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: remember what is visible now; no batch goes past it."""
        _load_runtime()
        self._target = self._visible(self._last or {}, check_loss=False)

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        _load_runtime()
        if start is None:  # pyspark 4.0/4.1: no start given, and the cap is applied here
            start = self._last if self._last is not None else self.initialOffset()
            cap = self.settings.max_messages
        else:
            cap = limit.max_rows if ReadMaxRows is not None and isinstance(limit, ReadMaxRows) else None
        start = {str(k): int(v) for k, v in start.items()}
        end = self._visible(start, check_loss=True)
        if self._target is not None:
            end = {
                name: max(start.get(name, 0), min(position, self._target.get(name, start.get(name, 0))))
                for name, position in end.items()
            }
        visible = end
        if cap is not None:
            end = self._capped(start, end, cap)
        end = self._whole_transactions(start, end, visible)
        self._last = end
        return end

    def _whole_transactions(
        self, start: dict[str, int], end: dict[str, int], visible: dict[str, int]
    ) -> dict[str, int]:
        """No batch ends inside a 2.6 transaction, on Woodpecker, Kafka or RocksMQ written by 2.6 (open_transactions.py);
        a batch carried on to a transaction's end stays within what is `visible`. natsmq, which 2.6 no longer offers,
        holds none."""
        opts = self._opts()
        if not (opts.woodpecker or opts.rocksmq or opts.kafka):
            return end
        source = opts.open_source()
        try:
            return {
                name: transaction_safe_end(source, name, start.get(name, 0), position, visible.get(name))
                for name, position in end.items()
            }
        finally:
            source.close()

    def _visible(self, start: dict[str, int], *, check_loss: bool) -> dict[str, int]:
        """Per channel (those of `start` and newly matching ones), the position after its last time tick."""
        opts = self._opts()
        source = opts.open_source()
        try:
            known = [info.name for info in source.list_channels(message_times=False)]
            names = list(dict.fromkeys([*start, *opts.select_channels(known)]))
            end = {}
            for name in names:
                position = start.get(name, 0)  # a channel that appeared since: from its first message
                bounds = source.id_range(name) if name in known else None
                if check_loss and opts.kafka and position > 0:
                    _kafka_topic_lost(source, name, position, bounds, name in known, self.settings.fail_on_data_loss)
                if bounds is None:
                    end[name] = position
                    continue
                first, last = bounds
                if check_loss:
                    found = lost_range(source, name, position, first)
                    if found is not None:
                        data_loss(found, self.settings.fail_on_data_loss)
                end[name] = max(position, visible_end(source, name, max(position, first), last))
            return end
        finally:
            source.close()

    def _capped(self, start: dict[str, int], end: dict[str, int], cap: int) -> dict[str, int]:
        opts = self._opts()
        source = opts.open_source()
        try:
            backlogs = {
                name: count_messages(source, name, start.get(name, 0), position)
                for name, position in end.items()
                if position > start.get(name, 0)
            }
            granted = share(backlogs, cap)
            capped = dict(end)
            for name, messages in granted.items():
                if messages < backlogs[name]:
                    capped[name] = end_after(source, name, start.get(name, 0), end[name], messages)
            return capped
        finally:
            source.close()

    def reportLatestOffset(self) -> dict | None:
        """The position after each channel's last stored message (progress' `latestOffset`)."""
        opts = self._opts()
        source = opts.open_source()
        try:
            latest = {}
            for name in self._last or {}:
                bounds = source.id_range(name)
                latest[name] = bounds[1] + 1 if bounds else (self._last or {})[name]
            return latest
        finally:
            source.close()

    def partitions(self, start: dict, end: dict) -> list[StreamPartition]:
        """Each channel's start..end cut into pieces by the batch read's rules: the same offsets give the same
        pieces, so a retried batch reads the same messages."""
        _load_runtime()
        from mqctl.replay.model import ChannelSpan
        from mqctl.replay.reader.planning import split_spans

        opts = self._opts()
        source = opts.open_source()
        try:
            spans, checks = [], {}
            for name in sorted(end):
                first, stop = int(start.get(name, 0)), int(end[name])
                if stop <= first:
                    continue
                bounds = source.id_range(name)
                if bounds is None:
                    continue
                checks[name] = first
                low = max(first, bounds[0])  # below the first stored message nothing is left to read
                if low >= stop:
                    continue
                spans.append(ChannelSpan(name, low, stop - 1, max(1, count_messages(source, name, low, stop))))
            store = source.store_identity()
        finally:
            source.close()
        pieces = split_spans(spans, opts.partitions, opts.messages_per_partition)
        result, seen = [], set()
        for piece in pieces:
            loss_from = checks[piece.channel] if piece.channel not in seen else None
            seen.add(piece.channel)
            result.append(StreamPartition(piece.channel, piece.first, piece.last, piece.messages, store, loss_from))
        self._last = {**(self._last or {}), **{str(k): int(v) for k, v in end.items()}}
        return result

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, ChannelRangePartition):
            return iter(())
        _load_runtime()
        from mqctl.replay.model import ChannelSpan
        from mqctl.replay.reader.executor import checked_read
        from mqctl.replay.reader.progress import ProgressReporter
        from mqctl.replay.reader.rows import read_span
        from mqctl.replay.reader.schema import schema_from_json

        opts = self._opts()
        loss_from = getattr(partition, "loss_from", None)
        if loss_from is not None:
            source = opts.open_source()
            try:
                bounds = source.id_range(partition.channel)
                found = lost_range(source, partition.channel, loss_from, bounds[0] if bounds else None)
            finally:
                source.close()
            if found is not None:
                data_loss(found, self.settings.fail_on_data_loss)
        schema_json = opts.collection_schema if opts.shape == "rows" else None
        collection = schema_from_json(schema_json)[0] if schema_json else None
        span = ChannelSpan(partition.channel, partition.first, partition.last, partition.messages)
        reporter = ProgressReporter(None, f"{span.channel}/{span.first}", span.channel)
        return checked_read(
            opts, partition.store, read_span(opts, span, _arrow_schema(self.schema), collection, reporter)
        )

    def commit(self, end: dict) -> None:
        """Nothing to acknowledge: Spark's checkpoint holds the positions."""
        self._last = {str(k): int(v) for k, v in end.items()}
