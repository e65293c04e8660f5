"""Tests of mqctl.mq: channels, checkpoints and retention of the MQ data."""
