"""The root command: fast help and version, unknown commands exit 2 without a traceback."""

from mqctl import __version__
from mqctl.cli import COMMANDS
from tests.helpers.paths import REPO


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


FORKS_AFTER_GRPC = """\
import sys
if sys.argv[1] == "mqctl":
    import mqctl
import grpc, signal, subprocess
from concurrent import futures
server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
port = server.add_insecure_port("127.0.0.1:0")
server.start()
channel = grpc.insecure_channel(f"127.0.0.1:{port}")
try:
    channel.unary_unary("/milvus.Probe/Call")(b"", timeout=5)
except grpc.RpcError as err:
    assert err.code() == grpc.StatusCode.UNIMPLEMENTED, err
channel.close()
ignore_sigint = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)  # what pyspark's launcher passes
codes = [subprocess.Popen(["true"], preexec_fn=ignore_sigint).wait() for _ in range(int(sys.argv[2]))]
print(sum(code != 0 for code in codes))
server.stop(None)
"""


def forks_after_grpc(tmp_path, first: str, forks: int):
    """Run FORKS_AFTER_GRPC (importing mqctl first or not) with gRPC's fork tracer on: while its fork handlers
    are installed, gRPC logs from fork_posix.cc at every fork, whether or not a child happens to die."""
    import os
    import subprocess
    import sys

    script = tmp_path / "forks.py"
    script.write_text(FORKS_AFTER_GRPC)
    env = {k: v for k, v in os.environ.items() if k != "GRPC_ENABLE_FORK_SUPPORT"}
    env.update(GRPC_TRACE="fork", GRPC_VERBOSITY="debug", PYTHONPATH=str(REPO))  # this checkout's mqctl
    proc = subprocess.run(
        [sys.executable, str(script), first, str(forks)], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr
    return int(proc.stdout), proc.stderr


def test_subprocesses_started_after_grpc_calls_survive_the_fork(tmp_path):
    """Spark's JVM and a migration's start/stop commands are forked after pymilvus used gRPC in the
    same process; with gRPC's fork handlers on, some of those children die before exec (now and then:
    so the test checks that the handlers are off, not only that no child died this time)."""
    died, log = forks_after_grpc(tmp_path, "mqctl", 50)
    assert died == 0, log
    assert "fork_posix" not in log, log
    # without mqctl imported first the handlers are on, and the same probe sees them
    _, unprotected = forks_after_grpc(tmp_path, "grpc", 5)
    assert "fork_posix" in unprotected, unprotected


ROCKSMQ = str(REPO / "tests" / "fixtures" / "rocksmq" / "rdb_data")
SAMPLE = str(REPO / "sample-configs" / "milvus-2.3-standalone-rocksmq.yaml")


def test_json_and_wide_before_or_after_the_command_are_the_same(cli):
    """--json and --wide are root options read from one context; after the command's name they mean the same."""
    for args in (
        ["channels", "list", "--rocksmq", ROCKSMQ],
        ["config", "explain", SAMPLE, "--milvus-version", "2.3.5"],
    ):
        for flag in ("--json", "--wide"):
            after, before = cli(*args, flag), cli(flag, *args)
            assert after.code == before.code == 0, (after.stderr, before.stderr)
            assert after.stdout == before.stdout and after.stdout.strip(), (args, flag)
        assert cli(*args, "--json").stdout.lstrip().startswith("{")
        assert not cli(*args).stdout.lstrip().startswith("{")


def test_a_command_without_such_output_refuses_the_root_option_as_its_own(cli):
    for args, flag in ((["exporter"], "--json"), (["config", "get", SAMPLE, "mq.type"], "--wide")):
        own, root = cli(*args, flag), cli(flag, *args)
        assert own.code == root.code == 2, (own.stderr, root.stderr)
        assert flag in root.stderr and "Traceback" not in root.stderr
    refused = cli("--json", "exporter")
    assert '"kind": "usage"' in refused.stdout  # with --json, the failure is the one JSON object


def test_no_command_declares_json_or_wide_itself():
    """One declaration: mqctl/cli/context.py; the commands read presentation() (or output())."""
    cli_dir = REPO / "mqctl" / "cli"
    declaring = sorted(
        str(path.relative_to(REPO))
        for path in cli_dir.rglob("*.py")
        if path.name != "context.py" and ('"--json"' in path.read_text() or '"--wide"' in path.read_text())
    )
    assert declaring == ["mqctl/cli/__init__.py"], declaring  # its argv fallback for a line that did not parse


def _params(group: str, name: str | None) -> list[str]:
    import importlib

    import typer.main

    command = typer.main.get_command(importlib.import_module(f"mqctl.cli.{group}").app)
    if name is not None:
        command = command.commands[name]  # type: ignore[attr-defined]
    return [str(p.name) for p in command.params]


def test_resolve_and_target_options_are_declared_once():
    """config explain/validate/get take RESOLVE_OPTIONS as one ResolveRequest; doctor, exporter and bundle take
    TARGET_OPTIONS as one Target."""
    from mqctl.cli.config import RESOLVE_OPTIONS
    from mqctl.cli.doctor import TARGET_OPTIONS

    for name in ("explain", "validate", "get"):
        assert set(RESOLVE_OPTIONS) <= set(_params("config", name)), name
    for group in ("doctor", "exporter", "bundle"):
        assert set(TARGET_OPTIONS) <= set(_params(group, None)), group


def test_config_get_applies_the_resolve_options(cli, tmp_path):
    """The request reaches the lookup: --env applies MQ_TYPE as Milvus would."""
    plain = cli("config", "get", SAMPLE, "mq.type", "--json")
    overridden = cli("config", "get", SAMPLE, "mq.type", "--env", "--json", env={"MQ_TYPE": "natsmq"})
    assert plain.code == overridden.code == 0, (plain.stderr, overridden.stderr)
    assert '"source": "env"' in overridden.stdout and '"natsmq"' in overridden.stdout
    assert '"source": "env"' not in plain.stdout
