"""mqctl: admin and migration tool for the message-queue layer of Milvus."""

import os

__version__ = "0.1.0"

# gRPC's fork handlers (on by default in grpcio) restart its poller in every forked child; when
# that child is a subprocess about to exec (Spark's JVM, a migration's start/stop command) the
# poller meets the fds Popen closed and the child dies before exec, now and then. mqctl never
# uses gRPC across a fork, so the handlers are turned off before anything imports grpc.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
