"""The read-only RocksMQ reader against the RocksMQ directories a real Milvus 2.3.5 wrote."""

from __future__ import annotations

import os
import shutil

import pytest

from mqctl.errors import InputError
from mqctl.mq.decode import messages
from mqctl.mq.rocksmq.reader import RocksMQSource
from tests.helpers.files import tree_fingerprint
from tests.helpers.make_fixtures import load_expected
from tests.helpers.paths import FIXTURES

ROCKSMQ = FIXTURES / "rocksmq" / "rdb_data"


def exercise(path):
    with RocksMQSource(path) as source:
        channels = source.list_channels()
        for channel in channels:
            list(source.iter_messages(channel.name))
            source.id_range(channel.name)
        source.topic_meta()
    return channels


@pytest.fixture
def read_only_copy(tmp_path):
    """The fixture copied and made read-only (as on a read-only mount)."""
    root = tmp_path / "rdb_data"
    shutil.copytree(ROCKSMQ, root)
    shutil.copytree(ROCKSMQ.with_name("rdb_data_meta_kv"), tmp_path / "rdb_data_meta_kv")
    for dirpath, _, filenames in os.walk(tmp_path):
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), 0o444)
        os.chmod(dirpath, 0o555)
    yield root
    for dirpath, _, _ in os.walk(tmp_path):
        os.chmod(dirpath, 0o755)


def test_fixture_directory_is_byte_identical_afterwards():
    before = tree_fingerprint(ROCKSMQ)
    exercise(ROCKSMQ)
    assert tree_fingerprint(ROCKSMQ) == before


def test_read_only_copy_works_and_stays_identical(read_only_copy):
    before = tree_fingerprint(read_only_copy)
    assert exercise(read_only_copy) == exercise(ROCKSMQ)
    assert tree_fingerprint(read_only_copy) == before


def test_list_channels_matches_a_full_scan():
    from mqctl.sorting import natural_key

    expected = load_expected()
    with RocksMQSource(ROCKSMQ) as source:
        channels = source.list_channels()
        meta = source.topic_meta()
        assert [c.name for c in channels] == sorted(meta, key=natural_key)
        assert {f"{expected['channel_prefix']}{i}" for i in range(expected["dml_channels"])} <= {
            c.name for c in channels
        }
        for channel in channels:
            scanned = list(source.iter_messages(channel.name))
            assert channel.messages == len(scanned)
            assert channel.bytes == meta[channel.name].bytes
            if scanned:
                assert (channel.first_id, channel.last_id) == (scanned[0].id, scanned[-1].id)
                assert source.id_range(channel.name) == (scanned[0].id, scanned[-1].id)
                assert channel.first_time == messages.decode(scanned[0].data).time
                assert channel.last_time == messages.decode(scanned[-1].data).time
                assert [m.id for m in scanned] == sorted(m.id for m in scanned)


class CountingDB:
    """Wraps the message database to count value reads."""

    def __init__(self, db):
        self.db, self.gets, self.value_scans = db, 0, 0

    def get(self, key):
        self.gets += 1
        return self.db.get(key)

    def items(self, *args, **kwargs):
        self.value_scans += 1
        return self.db.items(*args, **kwargs)

    def values(self, *args, **kwargs):
        self.value_scans += 1
        return self.db.values(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.db, name)


def test_listing_reads_only_first_and_last_values():
    with RocksMQSource(ROCKSMQ) as source:
        counter = CountingDB(source._db)
        source._db = counter
        channels = source.list_channels()
        source._db = counter.db
    assert counter.value_scans == 0
    assert counter.gets == 2 * sum(1 for c in channels if c.messages)


def test_pages_close_and_get_acked():
    expected = load_expected()
    with RocksMQSource(ROCKSMQ) as source:
        pages = [p for topic in source.topic_meta().values() for p in topic.pages]
        ranges = {c.name: source.id_range(c.name) for c in source.list_channels()}
    assert pages, "the tiny rocksmqPageSize must close pages"
    assert any(p.acked for p in pages)
    assert all(p.size >= expected["rocksmq_page_size"] for p in pages)
    for topic, info in source.topic_meta().items():
        for page in info.pages:
            first_last = ranges[topic]
            assert first_last is not None and first_last[0] <= page.end_id <= first_last[1]


def test_iter_messages_range():
    with RocksMQSource(ROCKSMQ) as source:
        channel = max(source.list_channels(), key=lambda c: c.messages)
        ids = [m.id for m in source.iter_messages(channel.name)]
        middle = ids[len(ids) // 3 : 2 * len(ids) // 3]
        assert [m.id for m in source.iter_messages(channel.name, middle[0], middle[-1])] == middle
        assert [m.id for m in source.iter_messages(channel.name, start_id=ids[-1])] == [ids[-1]]
        # ids are decimal text: a shorter --from is smaller than every id, a longer one larger
        assert [m.id for m in source.iter_messages(channel.name, start_id=5)] == ids
        assert list(source.iter_messages(channel.name, start_id=ids[-1] * 10)) == []
        assert list(source.iter_messages("no-such-topic")) == []
        assert source.id_range("no-such-topic") is None


def test_missing_or_wrong_directory_is_input_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        RocksMQSource(tmp_path / "nope")
    with pytest.raises(InputError, match="not a RocksDB directory"):
        RocksMQSource(tmp_path)


def test_the_metadata_database_is_refused_under_any_name(tmp_path, monkeypatch):
    private = tmp_path / "tmp"  # shadow folders of this test only: other workers make theirs in the shared one
    private.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(private))
    meta = ROCKSMQ.with_name(ROCKSMQ.name + "_meta_kv")
    with pytest.raises(InputError, match="metadata database") as caught:
        RocksMQSource(meta)
    assert str(ROCKSMQ) in caught.value.one_line()
    import tempfile
    from pathlib import Path

    shadows = set(Path(tempfile.gettempdir()).glob("mqctl-rocksmq-*"))
    renamed = tmp_path / "renamed"
    shutil.copytree(meta, renamed)
    with pytest.raises(InputError, match="metadata database"):
        RocksMQSource(renamed)
    assert set(Path(tempfile.gettempdir()).glob("mqctl-rocksmq-*")) == shadows  # no shadow folder left behind
