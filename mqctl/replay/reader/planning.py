"""Which messages a replay reads, and how they are cut into Spark partitions.

Each channel's id / sequence range is split into pieces of about equal message counts, so
executors read one channel in parallel. Only ids are planned here (cheap metadata, no values);
TSO and time bounds are applied while reading.
"""

from __future__ import annotations

import math

from mqctl.errors import InputError
from mqctl.mq.model import MQSource
from mqctl.replay.model import ChannelSpan
from mqctl.replay.reader.options import ReplayOptions


def plan_spans(source: MQSource, opts: ReplayOptions) -> list[ChannelSpan]:
    """One span per selected, non-empty channel, bounded by the `from`/`to` ids (with `after`: from the
    earliest channel checkpoint of the channel's vchannels, channels without one left out)."""
    infos = {info.name: info for info in source.list_channels()}
    unpersisted = opts.first_unpersisted() if opts.after is not None else None
    spans = []
    for name in opts.select_channels(list(infos)):
        full = source.id_range(name)
        if full is None or (unpersisted is not None and name not in unpersisted):
            continue
        first, last = full
        if unpersisted is not None:
            first = max(first, unpersisted[name])
        if opts.start is not None and opts.start.kind == "id":
            first = max(first, opts.start.value)
        if opts.end is not None and opts.end.kind == "id":
            last = min(last, opts.end.value)
        if first <= last:
            spans.append(ChannelSpan(name, first, last, _estimate(infos[name].messages, full, first, last)))
    return spans


def plan_partitions(source: MQSource, opts: ReplayOptions) -> list[ChannelSpan]:
    """The pieces to read, one per Spark partition: the caller's exact `ranges`, or the selected
    channels split by message count."""
    if opts.ranges is None:
        return split_spans(plan_spans(source, opts), opts.partitions, opts.messages_per_partition)
    infos = {info.name: info for info in source.list_channels()}
    unknown = sorted({channel for channel, _, _ in opts.ranges} - set(infos))
    if unknown:
        raise InputError(
            f"unknown channel {unknown[0]!r} in {opts.source_label}",
            hint=f"known channels: {', '.join(infos) or 'none'}",
        )
    pieces = []
    for channel, first, last in opts.ranges:
        full = source.id_range(channel) or (first, last)
        pieces.append(ChannelSpan(channel, first, last, _estimate(infos[channel].messages, full, first, last)))
    return pieces


def _estimate(total: int, full: tuple[int, int], first: int, last: int) -> int:
    """Messages in [first, last], assuming ids spread evenly over the channel's full range."""
    width = full[1] - full[0] + 1
    if width <= 0 or total <= 0:
        return 0
    return max(1, round(total * (last - first + 1) / width)) if first <= last else 0


def split_spans(spans: list[ChannelSpan], partitions: int | None, messages_per_partition: int) -> list[ChannelSpan]:
    """Cut spans into about `partitions` pieces (default: one per `messages_per_partition`
    messages), at least one per channel, shared out by message count."""
    if not spans:
        return []
    total = sum(span.messages for span in spans)
    wanted = partitions or math.ceil(total / messages_per_partition)
    wanted = max(wanted, len(spans))
    pieces = _share(spans, wanted)
    result = []
    for span, count in zip(spans, pieces):
        result.extend(_cut(span, count))
    return result


def _share(spans: list[ChannelSpan], wanted: int) -> list[int]:
    """Pieces per span in proportion to message counts (largest remainder), at least one each."""
    total = sum(span.messages for span in spans) or len(spans)
    quotas = [wanted * (span.messages or 1) / total for span in spans]
    pieces = [max(1, int(quota)) for quota in quotas]
    while sum(pieces) < wanted:
        pieces[max(range(len(spans)), key=lambda i: quotas[i] - pieces[i])] += 1
    while sum(pieces) > wanted:
        pieces[min((i for i in range(len(spans)) if pieces[i] > 1), key=lambda i: quotas[i] - pieces[i])] -= 1
    return [min(count, max(1, span.messages), span.last - span.first + 1) for span, count in zip(spans, pieces)]


def _cut(span: ChannelSpan, count: int) -> list[ChannelSpan]:
    width = span.last - span.first + 1
    edges = [span.first + (width * i) // count for i in range(count + 1)]
    pieces = []
    for i in range(count):
        first, last = edges[i], edges[i + 1] - 1
        messages = span.messages // count + (1 if i < span.messages % count else 0)
        pieces.append(ChannelSpan(span.channel, first, last, messages))
    return pieces
