"""Tests of mqctl.mq.nats against real nats-servers."""
