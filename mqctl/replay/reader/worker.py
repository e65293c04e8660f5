"""What a Python worker (on the driver or an executor) needs before mqctl itself is importable there: the
runtime check, the partition every read hands over, and the Arrow schema of its batches.

Pickled by value with the data source (see datasource.register): a worker can unpickle it without mqctl.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import InputPartition

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.types import StructType

RUNTIME_DIR = "mqctl_runtime"  # where Spark unpacks the shipped runtime, in the worker's working directory
RUNTIME_MANIFEST = "mqctl-runtime.json"
# What the reader imports on a worker: checked up front, so a missing one is one clear line.
EXECUTOR_MODULES = (
    "mqctl.replay.reader.rows",
    "mqctl.mq.rocksmq.reader",
    "mqctl.mq.woodpecker.source",
    "minio",
    "mqctl.mq.nats.client",
    "mqctl.mq.nats.reads",
    "mqctl.mq.kafka.source",
    "confluent_kafka",
    "google.protobuf",
    "rocksdict",
    "nats",
    "pyarrow",
)


class ExecutorSetupError(RuntimeError):
    """A Python worker cannot run mqctl's reader (no runtime, another Python version)."""


class ChannelRangePartition(InputPartition):
    """Messages first <= id <= last of one channel; `store`: the planned RocksMQ store's marker."""

    def __init__(self, channel: str, first: int, last: int, messages: int, store: str | None = None):
        super().__init__((channel, first, last))
        self.channel, self.first, self.last, self.messages, self.store = channel, first, last, messages, store


def _load_runtime() -> None:
    """Make mqctl importable here: the shipped runtime in the working directory wins over an
    installed mqctl; without either, or on another Python minor version, one clear error."""
    import json
    import os
    import socket
    import sys

    host = socket.gethostname()
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    runtime = os.path.abspath(RUNTIME_DIR)
    manifest = os.path.join(runtime, RUNTIME_MANIFEST)
    if os.path.isfile(manifest):
        with open(manifest) as handle:
            built_for = json.load(handle)
        if built_for["python"] != python:
            raise ExecutorSetupError(
                f"Python worker on {host} runs Python {python} ({sys.executable}), but mqctl's runtime was shipped for "
                f"Python {built_for['python']}, the driver's: run executors with Python {built_for['python']} "
                "(spark.pyspark.python / PYSPARK_PYTHON), or install mqctl on them and replay with --no-ship"
            )
        if runtime not in sys.path:
            sys.path.insert(0, runtime)
    import importlib

    try:
        for module in EXECUTOR_MODULES:
            importlib.import_module(module)
    except ImportError as err:
        shipped = "with mqctl's shipped runtime" if os.path.isfile(manifest) else "no runtime shipped"
        raise ExecutorSetupError(
            f"Python worker on {host} (Python {python}, {sys.executable}, {shipped}) cannot import {err.name}: "
            "pip install mqctl into that Python, point PYSPARK_PYTHON (spark.pyspark.python) at one "
            "that has it, or on a cluster replay without --no-ship so mqctl ships its runtime"
        ) from None


def _arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema of the batches read() yields; timestamps in UTC (the replay's session time zone)."""
    from pyspark.sql.pandas import types

    to_arrow_schema: Any = types.to_arrow_schema  # its keywords differ between pyspark releases
    try:
        return to_arrow_schema(schema, timezone="UTC")  # pyspark >= 4.1
    except TypeError:
        return to_arrow_schema(schema)  # pyspark 4.0: timestamp_utc=True by default
