"""The root command: fast help and version, unknown commands exit 2 without a traceback."""

from mqctl import __version__
from mqctl.cli import COMMANDS


def test_help_lists_every_command(cli):
    result = cli("--help")
    assert result.code == 0
    for name in COMMANDS:
        assert f"  {name}" in result.stdout


def test_version(cli):
    result = cli("--version")
    assert result.code == 0
    assert result.stdout.strip() == f"mqctl, version {__version__}"


def test_unknown_command_is_usage_error(cli):
    result = cli("no-such-command")
    assert result.code == 2
    assert "Traceback" not in result.stderr
    assert "no-such-command" in result.stderr


def test_subprocesses_started_after_grpc_calls_survive_the_fork(tmp_path):
    """Spark's JVM and a migration's start/stop commands are forked after pymilvus used gRPC in the
    same process; with gRPC's fork handlers on, some of those children die before exec."""
    import subprocess
    import sys

    script = tmp_path / "forks.py"
    script.write_text(
        "import mqctl, grpc, signal, subprocess\n"
        "from concurrent import futures\n"
        "server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))\n"
        "port = server.add_insecure_port('127.0.0.1:0')\n"
        "server.start()\n"
        "channel = grpc.insecure_channel(f'127.0.0.1:{port}')\n"
        "try:\n"
        "    channel.unary_unary('/milvus.Probe/Call')(b'', timeout=5)\n"
        "except grpc.RpcError as err:\n"
        "    assert err.code() == grpc.StatusCode.UNIMPLEMENTED, err\n"
        "channel.close()\n"
        "ignore_sigint = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)  # what pyspark's launcher passes\n"
        "codes = [subprocess.Popen(['true'], preexec_fn=ignore_sigint).wait() for _ in range(200)]\n"
        "print(sum(code != 0 for code in codes))\n"
        "server.stop(None)\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "GRPC_ENABLE_FORK_SUPPORT"}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0"], proc.stderr
