"""Where Spark writes a replay's output (write_target): the place the overlap guard compares with the data read
(the refusals through the CLI: tests/cli/replay/test_output_overlap.py)."""

from __future__ import annotations

from pathlib import Path


def test_write_target_names_the_place_spark_writes():
    from mqctl.files import write_target

    assert write_target("file:///tmp/a%20b", "--output").local == Path("/tmp/a%20b")  # Hadoop does not unquote
    assert write_target("s3a://bucket/key/", "--output").bucket == "bucket"
    assert write_target("s3a://bucket/key/", "--output").key == "key"
    assert write_target("hdfs://nn:8020/x", "--output").local is None
    assert write_target("file:///tmp/x", "--output").spark == "file:///tmp/x"
