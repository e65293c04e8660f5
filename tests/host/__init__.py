"""Tests of mqctl/host: the operator's hooks and waits, ports and /proc."""
