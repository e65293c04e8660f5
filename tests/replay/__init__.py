"""Tests of mqctl.replay: options, planning, schema, resume state, and local Spark."""
