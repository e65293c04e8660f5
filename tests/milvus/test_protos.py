"""pymilvus and its generated protobuf modules load safely from two threads at once: the migration's verify
step decodes etcd positions on one thread while it imports pymilvus on another (CI once failed with
"Couldn't build proto file into descriptor pool: Depends on file 'msg.proto'")."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers.paths import REPO

# Each order of the two loads, each in a fresh interpreter (a loaded module cannot race again).
RACE = """
import json, threading
from mqctl.milvus.protos import import_pymilvus, pb2

order = {order!r}
start = threading.Barrier(2)
errors = []

def load(which):
    start.wait()
    try:
        if which == "pb2":
            pb2("msg_pb2").MsgPosition(timestamp=1)
            pb2("milvus_pb2").FlushRequest()
        else:
            import_pymilvus()
            from pymilvus import MilvusClient  # noqa: F401
    except Exception as error:
        errors.append(repr(error))

threads = [threading.Thread(target=load, args=(which,)) for which in order]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
from pymilvus.grpc_gen import msg_pb2
print(json.dumps({{"errors": errors, "same_class": pb2("msg_pb2").MsgPosition is msg_pb2.MsgPosition}}))
"""


def race(order: tuple[str, str]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", RACE.format(order=order)], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_pb2_and_pymilvus_load_from_two_threads_at_once():
    # before the shared lock, 6 of 6 such runs failed (KeyError('pymilvus') or a module-lock deadlock)
    for order in [("pb2", "pymilvus"), ("pymilvus", "pb2"), ("pb2", "pymilvus"), ("pymilvus", "pb2")]:
        assert race(order) == {"errors": [], "same_class": True}


def test_two_threads_loading_the_generated_modules_get_one_class():
    assert race(("pb2", "pb2")) == {"errors": [], "same_class": True}
