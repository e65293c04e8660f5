"""Read-only RocksMQ reader (Milvus's embedded RocksDB message queue), safe on a live Milvus.

Layout (Milvus internal/mq/mqimpl/rocksmq/server/rocksmq_impl.go): messages at `rocksmq.path`, key
`b"<topic>/<id>"` (ids are 18 decimal digits, so byte order is numeric order), value the raw protobuf; metadata at `<path>_meta_kv` (page
sizes, page close and ack times, topic creation). rocksdict writes `rocksdict-config.json` into a
database folder even when opened read-only, so both databases are opened through a private
shadow folder of symlinks; nothing is ever written into Milvus's directories.
"""

from __future__ import annotations

import datetime as dt
import shutil
import tempfile
import weakref
from collections import deque
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from mqctl.backends import BACKENDS
from mqctl.clock import utc_from_seconds
from mqctl.errors import InputError, PreconditionError
from mqctl.mq.model import ChannelBounds, ChannelExtras, ChannelInfo, PageRow, RawMessage, path_is_dir, path_is_file
from mqctl.mq.rocksmq.model import RocksPage, RocksTopicMeta
from mqctl.sorting import ascii_int

if TYPE_CHECKING:
    from mqctl.mq.retention_model import ConfiguredRetention, RetentionReport

SKIPPED_DB_FILES = ("LOCK", "LOG", "rocksdict-config.json")  # LOG also covers LOG.old.*
META_SUFFIX = "_meta_kv"
META_ONLY_KEY = b"rmq_id"  # the id allocator's bound lives in the metadata database only
# a topic's keys are b"<topic>/<decimal id>": all between b"<topic>/0" and b"<topic>/:" (":" follows "9"), which
# leaves out the keys of a topic named "<topic>/x" (`a/b` beside `a`)
_FIRST_ID, _AFTER_IDS = b"/0", b"/:"


def _unix(value: bytes) -> dt.datetime | None:
    text = value.decode("ascii", errors="replace")
    seconds = ascii_int(text)
    return utc_from_seconds(seconds)  # damaged metadata may hold any number: out of range shows as no time


def _int(value: bytes) -> int:
    text = value.decode("ascii", errors="replace")
    return ascii_int(text) or 0


def _shadow(db_dir: Path, shadow_root: Path) -> Path:
    """A folder of symlinks to the database files, so rocksdict writes only into our temp dir."""
    shadow = shadow_root / db_dir.name
    shadow.mkdir()
    for entry in db_dir.iterdir():
        if not entry.name.startswith(SKIPPED_DB_FILES):
            (shadow / entry.name).symlink_to(entry.resolve())
    return shadow


def _open_read_only(db_dir: Path, shadow_root: Path) -> Any:
    from rocksdict import AccessType, Options, Rdict

    try:
        return Rdict(
            str(_shadow(db_dir, shadow_root)), options=Options(raw_mode=True), access_type=AccessType.read_only()
        )
    except Exception as err:  # rocksdict raises plain Exception for every RocksDB error
        raise PreconditionError(
            f"cannot open RocksDB at {db_dir} read-only: {err}",
            hint="check that this is a RocksMQ directory (rocksmq.path) and readable",
        ) from err


def _raw_message(channel: str, message_id: int, value: bytes) -> RawMessage:
    """One stored value as a message: a 2.6 one unwrapped into its payload and envelope properties (headers)."""
    from mqctl.mq.decode.envelope import unwrap_rocksmq

    streaming = unwrap_rocksmq(value)
    if streaming is None:
        return RawMessage(channel=channel, id=message_id, data=value)
    payload, properties = streaming
    return RawMessage(channel=channel, id=message_id, data=payload, headers=properties)


class RocksMQSource:
    """An MQSource over a RocksMQ directory (and its `_meta_kv` sibling when present)."""

    mq: ClassVar[str] = BACKENDS["rocksmq"].name
    supports_store_times: ClassVar[bool] = False  # RocksMQ keeps no store time per message
    sequential_ids: ClassVar[bool] = False  # ids come from one allocator shared by every topic: gaps

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
        if not path_is_dir(self.path):
            what = "is not a directory" if self.path.exists() else "does not exist"
            raise InputError(
                f"RocksMQ directory {self.path} {what}",
                hint="pass rocksmq.path of the Milvus instance (e.g. /var/lib/milvus/rdb_data)",
            )
        if not path_is_file(self.path / "CURRENT"):
            raise InputError(
                f"{self.path} is not a RocksDB directory (no CURRENT file)",
                hint="pass rocksmq.path itself, not its parent or the _meta_kv folder",
            )
        self.meta_path = self.path.with_name(self.path.name + META_SUFFIX)
        self.description = f"rocksmq:{self.path}"
        self._shadow_root = Path(tempfile.mkdtemp(prefix="mqctl-rocksmq-"))
        # removes the shadow folder even when a caller forgets close()
        self._cleanup = weakref.finalize(self, shutil.rmtree, self._shadow_root, True)
        self._meta_cache: dict[str, RocksTopicMeta] | None = None
        self._db: Any = None
        self._meta_db: Any = None
        try:
            self._db = _open_read_only(self.path, self._shadow_root)
            if self._db.get(META_ONLY_KEY) is not None:
                messages = self.path.with_name(self.path.name.removesuffix(META_SUFFIX))
                raise InputError(
                    f"{self.path} is RocksMQ's metadata database ({META_SUFFIX}), not its messages",
                    hint=f"pass rocksmq.path itself (e.g. {messages}); the {META_SUFFIX} beside it is read too",
                )
            has_meta = path_is_file(self.meta_path / "CURRENT")
            self._meta_db = _open_read_only(self.meta_path, self._shadow_root) if has_meta else None
        except BaseException:
            self.close()
            raise

    @property
    def _messages(self) -> Any:
        """The open messages database (reads after close() are a programming error); typed Any: in raw mode
        rocksdict yields bytes, which its stubs do not say."""
        if self._db is None:
            raise PreconditionError(f"{self.description}: the RocksMQ reader is closed")
        return self._db

    # context manager ----------------------------------------------------------
    def __enter__(self) -> RocksMQSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for db in (self._db, self._meta_db):
            if db is not None:
                db.close()
        self._db = self._meta_db = None
        self._cleanup()

    # metadata -------------------------------------------------------------------
    @property
    def has_metadata(self) -> bool:
        """Whether the `_meta_kv` database lies beside the messages (read while the source is open)."""
        return self._meta_db is not None

    def topic_meta(self) -> dict[str, RocksTopicMeta]:
        """Per topic: creation time, open page size and closed pages (from `_meta_kv`)."""
        if self._meta_cache is not None:
            return self._meta_cache
        topics: dict[str, RocksTopicMeta] = {}
        pages: dict[tuple[str, int], dict[str, bytes]] = {}
        if self._meta_db is not None:
            for key, value in self._meta_db.items():
                kind, _, rest = key.decode("utf-8", errors="replace").partition("/")
                if kind in ("topic_id", "message_size"):
                    meta = topics.setdefault(rest, RocksTopicMeta(rest))
                    if kind == "topic_id":
                        meta.created_at = _unix(value)
                    else:
                        meta.open_page_size = _int(value)
                elif kind in ("page_message_size", "page_ts", "acked_ts"):
                    topic, _, end_id = rest.rpartition("/")
                    end = ascii_int(end_id)
                    if end is not None:
                        topics.setdefault(topic, RocksTopicMeta(topic))
                        pages.setdefault((topic, end), {})[kind] = value
        for (topic, end_id), parts in sorted(pages.items()):
            topics[topic].pages.append(
                RocksPage(
                    end_id=end_id,
                    size=_int(parts.get("page_message_size", b"0")),
                    closed_at=_unix(parts["page_ts"]) if "page_ts" in parts else None,
                    acked_at=_unix(parts["acked_ts"]) if "acked_ts" in parts else None,
                )
            )
        self._meta_cache = topics
        return topics

    def data_warnings(self) -> list[tuple[str | None, str]]:
        """(topic or None, warning) where `_meta_kv` and the messages disagree: a WAL deleted or cut short leaves
        page sizes and ids in the metadata for messages that are gone; without `_meta_kv` nothing can be checked."""
        if self._meta_db is None:
            return [
                (
                    None,
                    f"{self.description}: no {self.meta_path.name} folder beside it, so message bytes, pages "
                    f"and retention are unknown (a RocksMQ always has one)",
                )
            ]
        meta = self.topic_meta()
        found: list[tuple[str | None, str]] = []
        for name in sorted(set(meta) | set(self._topics_in_data())):
            topic, ids = meta.get(name), self.id_range(name)
            if topic is None:
                found.append((name, f"topic {name}: messages but no metadata in {self.meta_path.name}"))
                continue
            closed_end = topic.pages[-1].end_id if topic.pages else None
            missing = (closed_end is not None and (ids is None or ids[1] < closed_end)) or (
                topic.open_page_size > 0 and (ids is None or (closed_end is not None and ids[1] <= closed_end))
            )
            if missing:
                last = "no message" if ids is None else f"messages up to id {ids[1]}"
                pages = f"pages up to id {closed_end} and " if closed_end is not None else ""
                found.append(
                    (
                        name,
                        f"topic {name}: the metadata counts {pages}{topic.bytes} bytes, but the data holds "
                        f"{last} (write-ahead log deleted or cut short?)",
                    )
                )
                continue
            count, size = self._open_page(name, closed_end)
            if size > topic.open_page_size:
                found.append(
                    (
                        name,
                        f"topic {name}: {count} message(s) of {size} bytes lie after its last page in the data, but "
                        f"{self.meta_path.name} counts {topic.open_page_size} bytes there: the metadata is behind "
                        "the messages (its write-ahead log cut short?), so bytes, pages, purgeable and reclaimable "
                        "figures are not reliable",
                    )
                )
        return found

    def _open_page(self, topic: str, closed_end: int | None) -> tuple[int, int]:
        """Messages and their bytes after the last closed page: Milvus adds every message's size to
        `message_size/<topic>` in `_meta_kv` after writing it (rocksmq_impl.go updatePageInfo), so at rest the two
        agree and a metadata store that lost its latest writes counts less."""
        from rocksdict import ReadOptions

        start = topic.encode() + (b"/%018d" % (closed_end + 1) if closed_end is not None else _FIRST_ID)
        options = ReadOptions()
        options.set_iterate_upper_bound(topic.encode() + _AFTER_IDS)
        count = size = 0
        for key, value in self._messages.items(from_key=start, read_opt=options):
            if self._is_message_of(key, topic):
                count += 1
                size += len(value)
        return count, size

    # keys -------------------------------------------------------------------------
    def _key_range(self, topic: str) -> Any:
        """ReadOptions bounding iteration to one topic's keys."""
        from rocksdict import ReadOptions

        prefix = topic.encode() + b"/"
        options = ReadOptions()
        options.set_iterate_lower_bound(topic.encode() + _FIRST_ID)
        options.set_iterate_upper_bound(topic.encode() + _AFTER_IDS)
        return prefix, options

    def _topics_in_data(self) -> Iterator[str]:
        """Topic names found by skipping from one topic's key range to the next (no full scan)."""
        it = self._messages.iter()
        it.seek_to_first()
        while it.valid():
            topic, slash, _ = it.key().rpartition(b"/")
            if not slash:  # not a message key (e.g. rmq_id in a metadata database): step over it
                it.seek(it.key() + b"\x00")
                continue
            yield topic.decode("utf-8", errors="replace")
            it.seek(topic + _AFTER_IDS)

    def _count_and_last(self, topic: str, *, nested: bool = False) -> tuple[int, bytes | None, bytes | None]:
        """Message count, first and last key of a topic, reading keys only; `nested`: another topic is named
        "<topic>/<digit>...", so its keys fall in this topic's range and are sorted out one by one."""
        prefix, options = self._key_range(topic)
        keys = self._messages.keys(from_key=prefix, read_opt=options)
        if nested:
            keys = (key for key in keys if self._is_message_of(key, topic))
        first = next(keys, None)
        if first is None:
            return 0, None, None
        tail = deque(enumerate(keys, 2), maxlen=1)  # counts in C, keeps only the last key
        count, last = tail[0] if tail else (1, first)
        return count, first, last

    @staticmethod
    def _id_of(key: bytes) -> int:
        return int(key.rpartition(b"/")[2])

    def _message_time(self, key: bytes) -> dt.datetime | None:
        """The Milvus TSO inside one message (ids come from one allocator whose time part is frozen at start: never a time)."""
        from google.protobuf.message import DecodeError

        from mqctl.milvus.protos import pb2
        from mqctl.mq.decode.envelope import read_envelope, unwrap_rocksmq
        from mqctl.mq.decode.tso import tso_to_datetime

        value = self._messages.get(key)
        streaming = unwrap_rocksmq(value or b"")
        if streaming is not None:
            return read_envelope(streaming[1]).time
        header = pb2("common_pb2").MsgHeader()
        try:
            header.ParseFromString(value or b"")
        except DecodeError:
            return None
        return tso_to_datetime(header.base.timestamp)

    # MQSource ------------------------------------------------------------------------
    def list_channels(self, *, message_times: bool = True) -> list[ChannelInfo]:
        """Every topic; its times always come from the Milvus TSO of its first and last message (RocksMQ keeps
        no store time, see supports_store_times)."""
        from mqctl.sorting import natural_key

        meta = self.topic_meta()
        names = set(meta) | set(self._topics_in_data())
        channels = []
        for name in sorted(names, key=natural_key):
            nested = any(
                ascii_int(other[len(name) + 1 :][:1]) is not None for other in names if other.startswith(name + "/")
            )
            count, first, last = self._count_and_last(name, nested=nested)
            topic = meta.get(name)
            channels.append(
                ChannelInfo(
                    name=name,
                    messages=count,
                    bytes=topic.bytes if topic else 0,
                    first_id=self._id_of(first) if first else None,
                    last_id=self._id_of(last) if last else None,
                    first_time=self._message_time(first) if first else None,
                    last_time=self._message_time(last) if last else None,
                )
            )
        return channels

    def id_range(self, channel: str) -> tuple[int, int] | None:
        it = self._messages.iter()
        it.seek(channel.encode() + _FIRST_ID)
        if not it.valid() or not self._is_message_of(it.key(), channel):
            return None
        first = self._id_of(it.key())
        it.seek_for_prev(channel.encode() + _AFTER_IDS)
        while not self._is_message_of(it.key(), channel):  # a key of a topic named "<channel>/9..."
            it.prev()
        return first, self._id_of(it.key())

    def channel_bounds(self, names: set[str]) -> dict[str, ChannelBounds]:
        """Topics whose messages are all gone are known from their metadata (first and last None)."""
        known = set(self.topic_meta())
        found = {}
        for name in names:
            bounds = self.id_range(name)
            if bounds is not None or name in known:
                first, last = bounds or (None, None)
                found[name] = ChannelBounds(first, last)
        return found

    def channel_extras(self, name: str) -> ChannelExtras:
        """The topic's creation time, open page and closed pages from `_meta_kv`."""
        topic = self.topic_meta().get(name)
        if topic is None:
            return ChannelExtras()
        return ChannelExtras(
            created_at=topic.created_at,
            open_page_size=topic.open_page_size,
            pages=[PageRow(p.end_id, p.size, p.closed_at, p.acked_at, p.acked) for p in topic.pages],
        )

    def store_identity(self) -> str | None:
        """Its topics and their creation times from `_meta_kv` (the topic names alone without it), hashed:
        another store at the same path, or no store, gives another identity (replay's executors check it)."""
        if self.has_metadata:
            lines = sorted(f"{name}={meta.created_at}" for name, meta in self.topic_meta().items())
        else:
            lines = sorted(info.name for info in self.list_channels())
        import hashlib

        return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]

    def retention_report(self, configured: ConfiguredRetention, now: dt.datetime) -> RetentionReport:
        from mqctl.mq.rocksmq.retention import rocksmq_report

        return rocksmq_report(self.description, self.mq, self.list_channels(), self.topic_meta(), configured, now)

    @staticmethod
    def _is_message_of(key: bytes, topic: str) -> bool:
        name, _, message_id = key.rpartition(b"/")
        return name == topic.encode() and message_id.isdigit()

    def iter_messages(
        self, channel: str, start_id: int | None = None, end_id: int | None = None
    ) -> Generator[RawMessage, None, None]:
        prefix, options = self._key_range(channel)
        start_key = prefix
        if start_id is not None:
            # ids are decimal text, so byte order is numeric order only between ids of one length (all of a
            # topic's ids have the allocator's length): seek to a shorter or longer id and the order breaks
            bounds = self.id_range(channel)
            if bounds and len(str(start_id)) == len(str(bounds[0])):
                start_key = prefix + str(start_id).encode()
        for key, value in self._messages.items(from_key=start_key, read_opt=options):
            if not self._is_message_of(key, channel):
                continue
            message_id = self._id_of(key)
            if start_id is not None and message_id < start_id:
                continue
            if end_id is not None and message_id > end_id:
                break
            yield _raw_message(channel, message_id, bytes(value))

    def iter_ids(self, channel: str, start_id: int, end_id: int) -> Generator[int, None, None]:
        """Ids of the messages start_id <= id <= end_id, in order, reading keys only (follow mode counts and
        caps backlogs with it)."""
        prefix, options = self._key_range(channel)
        bounds = self.id_range(channel)
        start_key = prefix
        if bounds and len(str(start_id)) == len(str(bounds[0])):  # see iter_messages: same-length ids only
            start_key = prefix + str(start_id).encode()
        for key in self._messages.keys(from_key=start_key, read_opt=options):
            if not self._is_message_of(key, channel):
                continue
            message_id = self._id_of(key)
            if message_id < start_id:
                continue
            if message_id > end_id:
                break
            yield message_id
