"""Tests of mqctl.config.resolve: the priority rules (yaml, env, etcd, 2.6 pinning) and the etcd config source."""
