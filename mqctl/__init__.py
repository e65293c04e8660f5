"""mqctl: admin and migration tool for the message-queue layer of Milvus."""

import os
import sys

__version__ = "0.1.0"

# gRPC's fork handlers (on by default in grpcio) restart its poller in every forked child; when
# that child is a subprocess about to exec (Spark's JVM, a migration's start/stop command) the
# poller meets the fds Popen closed and the child dies before exec, now and then. mqctl never
# uses gRPC across a fork, so the handlers are turned off before anything imports grpc.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")


def _starting_the_cli() -> bool:
    """True while the `mqctl` console script or `python -m mqctl` imports this package (not a library user)."""
    argv = getattr(sys, "orig_argv", [])
    module = argv[argv.index("-m") + 1] if "-m" in argv[:-1] else None
    return module == "mqctl" or (module is None and os.path.basename(sys.argv[0] if sys.argv else "") == "mqctl")


def _stop_before_start(signum: int, _frame: object) -> None:
    """A stopping signal while the CLI is still being imported: nothing has started, so nothing needs cleaning
    up; one line and exit 3, as for any interrupt (`mqctl.cli.main` puts the real handler in place)."""
    name = "Ctrl-C" if signum == 2 else f"SIG{'TERM' if signum == 15 else 'HUP'}"
    args = sys.argv[1 : sys.argv.index("--")] if "--" in sys.argv else sys.argv[1:]
    if "--json" in args:  # the one JSON object stdout holds whatever happens (docs/json.md)
        fields = '"file": null, "line": null, "column": null, "hint": null'
        error = f'{{"error": {{"code": 3, "kind": "aborted", "message": "interrupted ({name})", {fields}}}}}\n'
        os.write(1, error.encode())
    os.write(2, f"error: interrupted ({name})\n".encode())
    os._exit(3)


if _starting_the_cli():
    import signal

    for _signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(_signum, _stop_before_start)
