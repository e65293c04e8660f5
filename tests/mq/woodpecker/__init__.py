"""Tests of mqctl.mq.woodpecker: its meta in etcd and its segment files."""
