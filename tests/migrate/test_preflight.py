"""Preflight: Milvus's environment read from the local Milvus process."""

from __future__ import annotations


def test_milvus_environment_is_read_from_the_local_milvus_process(tmp_path):
    """A process named milvus listening on the --milvus port: its MQ_TYPE overrides the yaml."""
    import os
    import subprocess
    import sys

    from mqctl.migrate.context import resolution
    from mqctl.migrate.options import MigrateOptions
    from mqctl.migrate.preflight import milvus_environment
    from mqctl.milvus.client import MilvusTarget
    from tests.helpers.servers import free_port

    config = tmp_path / "milvus.yaml"
    config.write_text("mq:\n  type: natsmq\n")
    port = free_port()
    listener = (
        "import socket, sys, time\ns = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
        "print('ready', flush=True); time.sleep(60)\n"
    )
    options = MigrateOptions(configs=[str(config)], to="rocksmq", milvus=MilvusTarget(f"http://127.0.0.1:{port}"))
    assert milvus_environment(options)[0] is None  # nothing listens yet
    named = tmp_path / "milvus"
    named.symlink_to(sys.executable)  # the process name comes from the file name it was started by
    for program, found in ((sys.executable, False), (str(named), True)):
        proc = subprocess.Popen(
            [program, "-c", listener, str(port)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "MQ_TYPE": "rocksmq"},
        )
        try:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
            env, where = milvus_environment(options)
            assert (env is not None) == found, where
            if found:
                assert where == f"read from {proc.pid} (milvus)"
                origin = resolution(options, env=env).origin("mq.type")
                assert (origin.source, origin.value, origin.detail) == ("env", "rocksmq", "MQ_TYPE")
            else:
                assert "not by a milvus process" in where
        finally:
            proc.kill()
            proc.wait()
