"""The one line a failed Spark job reports."""

from __future__ import annotations

from mqctl.replay.write import spark_error_line


def test_spark_error_line_prefers_the_mqctl_error_raised_in_a_worker():
    text = (
        "An exception was thrown from the Python worker.\nTraceback (most recent call last):\n  File x\n"
        "mqctl.errors.PreconditionError: cannot connect to NATS at nats://127.0.0.1:1: refused\n"
    )
    assert spark_error_line(Exception(text)) == "cannot connect to NATS at nats://127.0.0.1:1: refused"
    assert spark_error_line(Exception("plain\nmore")) == "plain"
    worker = "[PYTHON_DATA_SOURCE_ERROR] Failed: Traceback\n  File x\nModuleNotFoundError: No module named 'mqctl'\n"
    assert spark_error_line(Exception(worker)) == "ModuleNotFoundError: No module named 'mqctl'"
