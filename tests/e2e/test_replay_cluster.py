"""Replay on a real Spark standalone cluster (a master and two one-core workers started here from the
installed pyspark) whose executors run a Python with nothing installed, and through Spark Connect; RocksMQ,
NATS and Kafka (the test broker holding the RocksMQ fixture's messages).

mqctl ships its runtime to the executors; every replayed row must equal the local[2] replay of the
same fixture. The cluster lives for the whole module and is stopped in a finalizer.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli_subprocess
from tests.helpers.paths import FIXTURES
from tests.helpers.spark_cluster import StandaloneCluster, bare_python

pq = pytest.importorskip("pyarrow.parquet")  # the spark extra; without it the module is skipped
pytestmark = pytest.mark.spark

ROCKSMQ = FIXTURES / "rocksmq" / "rdb_data"
NATS_STORE = FIXTURES / "natsmq" / "store"
SOURCES = {"rocksmq": ["--rocksmq", str(ROCKSMQ)], "nats": ["--nats-store", str(NATS_STORE)]}
CLUSTER_CONF = ["--spark-conf", "spark.executor.memory=512m", "--spark-conf", "spark.driver.memory=512m"]
ENV = {"SPARK_LOCAL_IP": "127.0.0.1"}


def _can_hide_folders() -> bool:
    """Private mount namespaces (root): lets the workers see a folder the driver sees as empty."""
    probe = (
        subprocess.run(["unshare", "-m", "true"], capture_output=True, check=False) if shutil.which("unshare") else None
    )
    return probe is not None and probe.returncode == 0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, request):
    work = tmp_path_factory.mktemp("spark-cluster")
    hidden = work / "driver-only"
    shutil.copytree(ROCKSMQ, hidden / ROCKSMQ.name)
    shutil.copytree(ROCKSMQ.with_name(ROCKSMQ.name + "_meta_kv"), hidden / (ROCKSMQ.name + "_meta_kv"))
    executor_python = bare_python(work / "executor-python")
    spark = StandaloneCluster(
        work,
        workers=2,
        cores=1,
        memory="1g",
        python=str(executor_python),
        hidden=[hidden] if _can_hide_folders() else [],
    )
    request.addfinalizer(spark.stop)
    spark.start()
    spark.driver_only_store = hidden / ROCKSMQ.name if spark.hidden else None
    return spark


def test_no_ship_says_what_the_executors_lack(cluster, tmp_path):
    """Through the command line: --no-ship onto executors without mqctl is one clear line."""
    result = run_cli_subprocess(
        "replay",
        "--to-spark",
        "--rocksmq",
        str(ROCKSMQ),
        "--collection",
        "items",
        "--output",
        str(tmp_path / "out"),
        "--master",
        cluster.url,
        "--no-ship",
        *CLUSTER_CONF,
        "--spark-conf",
        f"spark.pyspark.python={cluster.python}",
        env=ENV,
    )
    assert result.code == 3
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.stderr, result.stderr
    assert f"{cluster.python}, no runtime shipped) cannot import" in errors[0]
    assert "on a cluster replay without --no-ship so mqctl ships its runtime" in errors[0]


@pytest.fixture(scope="module")
def local_runs(tmp_path_factory):
    """The reference: each source replayed on local[2] (rows of `items`), as rows sorted by position."""
    from mqctl.mq.sources import SourceOptions
    from mqctl.replay.job import run_replay
    from mqctl.replay.model import ReplayRequest

    out = tmp_path_factory.mktemp("local")
    runs = {}
    for name, source in {
        "rocksmq": SourceOptions(rocksmq=ROCKSMQ),
        "nats": SourceOptions(nats_store=NATS_STORE),
    }.items():
        run_replay(ReplayRequest(source=source, collection="items", output=str(out / name), master="local[2]"))
        runs[name] = read_rows(out / name)
    return runs


@pytest.fixture(scope="module")
def cluster_session(cluster, local_runs):
    """One application on the cluster for the in-process runs (each application starts executors)."""
    from mqctl.replay.session import start_session

    session = start_session(cluster.url, {"spark.executor.memory": "512m", "spark.pyspark.python": str(cluster.python)})
    yield session
    session.stop()


def read_rows(folder: Path) -> list[dict]:
    rows = pq.read_table(folder).to_pylist()
    return sorted(rows, key=lambda row: (row["_channel"], row["_seq"], row["_op"], row["id"]))


def items_request(name: str, local: list[dict], out: Path):
    """Replay `items` from one source in two partitions: one per channel that holds its rows."""
    from mqctl.mq.sources import SourceOptions
    from mqctl.replay.model import ReplayRequest

    channels = sorted({row["_channel"] for row in local})
    assert len(channels) == 2, channels
    source = SourceOptions(rocksmq=ROCKSMQ) if name == "rocksmq" else SourceOptions(nats_store=NATS_STORE)
    return ReplayRequest(source=source, collection="items", channels=channels, partitions=2, output=str(out))


@pytest.mark.parametrize("name", ["rocksmq", "nats"])
def test_cluster_replay_equals_local(cluster_session, local_runs, tmp_path, name):
    from mqctl.replay.job import run_replay

    local = local_runs[name]
    assert local and {row["_op"] for row in local} == {"insert", "delete"}
    result = run_replay(items_request(name, local, tmp_path / "out"), spark=cluster_session)
    assert result.partitions == 2 and result.rows == len(local)
    assert read_rows(tmp_path / "out") == local


def test_cluster_replay_from_kafka_equals_the_same_messages_from_rocksmq(
    cluster_session, local_runs, kafka_bootstrap, kafka_fixture, tmp_path
):
    """Kafka on the cluster: the executors (a bare Python, confluent-kafka shipped to them) read the topics that
    hold the RocksMQ fixture's messages in the same order, and give local[2]'s RocksMQ rows, position aside
    (a Kafka offset is not a RocksMQ id)."""
    from mqctl.mq.sources import SourceOptions
    from mqctl.replay.job import run_replay
    from mqctl.replay.model import ReplayRequest

    local = local_runs["rocksmq"]
    channels = sorted({row["_channel"] for row in local})
    assert all(kafka_fixture.get(channel) for channel in channels), kafka_fixture
    request = ReplayRequest(
        source=SourceOptions(kafka=kafka_bootstrap),
        collection="items",
        channels=channels,
        partitions=2,
        output=str(tmp_path / "out"),
    )
    result = run_replay(request, spark=cluster_session)
    assert result.partitions == 2 and result.rows == len(local)
    replayed = read_rows(tmp_path / "out")  # sorted by channel, then position: the order both MQs hold
    assert [{**row, "_seq": None} for row in replayed] == [{**row, "_seq": None} for row in local]
    assert [row["_seq"] for row in replayed] != [row["_seq"] for row in local]  # offsets, not RocksMQ ids


def test_executor_that_cannot_see_the_rocksmq_path(cluster, cluster_session, tmp_path):
    from mqctl.errors import PreconditionError
    from mqctl.mq.sources import SourceOptions
    from mqctl.replay.job import run_replay
    from mqctl.replay.model import ReplayRequest

    if cluster.driver_only_store is None:
        pytest.skip("needs private mount namespaces (unshare -m, root) to give the workers another file system")
    store = cluster.driver_only_store
    request = ReplayRequest(source=SourceOptions(rocksmq=store), collection="items", output=str(tmp_path / "out"))
    with pytest.raises(PreconditionError) as caught:
        run_replay(request, spark=cluster_session)
    assert f"cannot see {store} (" in caught.value.message
    assert caught.value.message.endswith("put the RocksMQ directory on shared storage or replay from a copy")


@pytest.fixture(scope="module")
def connect_url(cluster, cluster_session):
    """A Spark Connect server on the cluster (once the in-process application is done: the server
    takes the workers' cores). Its own Python (it plans the reads) has only pyarrow, which Spark's
    Python data sources need there; the executors' has nothing."""
    from tests.helpers.spark_cluster import spark_home

    if not (spark_home() / "sbin" / "start-connect-server.sh").exists():
        pytest.skip("this pyspark package has no sbin/start-connect-server.sh (pip's pyspark 4.0 lacks it, 4.3 has it)")
    cluster_session.stop()
    return cluster.start_connect(str(bare_python(cluster.work / "server-python", "pyarrow")))


@pytest.mark.parametrize("name", ["rocksmq", "nats"])
def test_connect_replay_equals_local(connect_url, local_runs, tmp_path, name):
    """Through the command line, --remote: the same rows as local[2]."""
    local = local_runs[name]
    request = items_request(name, local, tmp_path / "out")
    result = run_cli_subprocess(
        "replay",
        "--to-spark",
        *SOURCES[name],
        "--collection",
        "items",
        "--channels",
        ",".join(request.channels),
        "--partitions",
        "2",
        "--output",
        request.output,
        "--json",
        "--remote",
        connect_url,
        env=ENV,
    )
    assert result.code == 0, result.stderr
    summary = result.json()
    assert summary["partitions"] == 2 and summary["rows"] == len(local)
    assert read_rows(tmp_path / "out") == local
