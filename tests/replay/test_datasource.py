"""The executor side of `milvus_mq` (what `read()` checks before it reads), run in this process
on the real RocksMQ fixture and a real closed port: a source the executor cannot see is one line
naming its host and the fix, never empty partitions."""

from __future__ import annotations

import shutil
import socket

import pytest

from mqctl.errors import PreconditionError
from tests.helpers.paths import FIXTURES

pytestmark = pytest.mark.extra  # runs the Spark data source's reader: pyspark

ROCKSMQ = FIXTURES / "rocksmq" / "rdb_data"
META = ROCKSMQ.name + "_meta_kv"
FIX = "put the RocksMQ directory on shared storage or replay from a copy"


def copy_store(folder):
    shutil.copytree(ROCKSMQ, folder / ROCKSMQ.name)
    shutil.copytree(ROCKSMQ.with_name(META), folder / META)
    return folder / ROCKSMQ.name


def messages_schema():
    """The messages shape as a StructType, built without a JVM (StructType.fromDDL needs a session)."""
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType, TimestampType

    from mqctl.replay.reader.schema import MESSAGE_COLUMNS

    types = {"string": StringType(), "bigint": LongType(), "int": IntegerType(), "timestamp": TimestampType()}
    return StructType([StructField(name, types[kind]) for name, kind in MESSAGE_COLUMNS])


def planned(options: dict[str, str]):
    """The reader and its partitions as the driver plans them (messages shape)."""
    from mqctl.replay.datasource import MilvusMQDataSource

    reader = MilvusMQDataSource(options).reader(messages_schema())
    return reader, reader.partitions()


def read_all(reader, partition) -> int:
    return sum(batch.num_rows for batch in reader.read(partition))


def test_planned_store_reads_and_carries_its_marker(tmp_path):
    reader, partitions = planned({"rocksmq": str(copy_store(tmp_path)), "channels": "by-dev-rootcoord-dml_0"})
    assert partitions[0].store and len(partitions[0].store) == 16
    assert read_all(reader, partitions[0]) > 0


def test_executor_without_the_path(tmp_path):
    store = copy_store(tmp_path / "a")
    reader, partitions = planned({"rocksmq": str(store)})
    shutil.rmtree(tmp_path / "a")  # what an executor on another host sees: nothing at that path
    with pytest.raises(PreconditionError) as caught:
        read_all(reader, partitions[0])
    assert caught.value.message.startswith(f"executor on {socket.gethostname()} cannot see {store} (")
    assert caught.value.message.endswith(FIX)


def test_executor_with_another_store_at_the_path(tmp_path):
    from rocksdict import Options, Rdict

    store = copy_store(tmp_path / "a")
    reader, partitions = planned({"rocksmq": str(store)})
    other = copy_store(tmp_path / "b")
    meta = Rdict(str(other.with_name(META)), options=Options(raw_mode=True))
    meta[b"topic_id/by-dev-rootcoord-dml_0"] = b"1700000000"  # another store: a topic created at another time
    meta.close()
    shutil.rmtree(tmp_path / "a")
    (tmp_path / "b").rename(tmp_path / "a")
    with pytest.raises(PreconditionError) as caught:
        read_all(reader, partitions[0])
    assert caught.value.message == (
        f"executor on {socket.gethostname()} sees another RocksMQ store at {store} than the driver planned with: {FIX}"
    )


def test_nats_unreachable_from_the_executor_names_its_host():
    from mqctl.replay.datasource import ChannelRangePartition, MilvusMQReader

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed once the block ends: nothing listens there
    reader = MilvusMQReader({"nats": f"nats://127.0.0.1:{port}", "timeout": "1"}, messages_schema())
    with pytest.raises(PreconditionError) as caught:
        read_all(reader, ChannelRangePartition("by-dev-rootcoord-dml_0", 1, 10, 10))
    message = caught.value.message
    assert message.startswith(f"executor on {socket.gethostname()}: cannot connect to NATS at nats://127.0.0.1:{port}")
    assert message.endswith(
        "the NATS URL must be reachable from every executor, use an address of the NATS host that the workers can reach"
    )


def test_runtime_shipped_for_another_python_is_one_line(tmp_path, monkeypatch):
    """A worker whose working directory holds a runtime built for another Python minor version
    (its native parts would not load) says which Python to run instead of failing on an import."""
    import json
    import sys

    from mqctl.replay.datasource import RUNTIME_DIR, RUNTIME_MANIFEST, ExecutorSetupError

    reader, partitions = planned({"rocksmq": str(ROCKSMQ), "channels": "by-dev-rootcoord-dml_0"})
    (tmp_path / RUNTIME_DIR).mkdir()
    (tmp_path / RUNTIME_DIR / RUNTIME_MANIFEST).write_text(
        json.dumps({"python": "3.99", "mqctl": "0", "platform": "x"})
    )
    monkeypatch.chdir(tmp_path)  # where Spark unpacks spark.archives for a worker
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    with pytest.raises(ExecutorSetupError) as caught:
        read_all(reader, partitions[0])
    assert str(caught.value) == (
        f"Python worker on {socket.gethostname()} runs Python {python} ({sys.executable}), but mqctl's runtime was "
        "shipped for Python 3.99, the driver's: run executors with Python 3.99 (spark.pyspark.python / "
        "PYSPARK_PYTHON), or install mqctl on them and replay with --no-ship"
    )
