"""Start-up cost of the CLI, as whole processes (issue 33, item 3).

- `mqctl --help` against `python -c pass` (the root help loads neither click, typer nor rich; goal <= 2).
- `mqctl channels list --json` on the RocksMQ fixture (tests/fixtures/rocksmq) against a bare script doing the
  same reads with rocksdict and the generated MsgHeader (every topic's keys counted, its first and last message
  read and their TSO parsed, the metadata database read, one JSON document printed). Goal <= 1.3.
- `mqctl channels list --json --nats URL` on the natsmq fixture's store (served once by a private nats-server for
  the whole run) against a bare nats-py script doing the same reads (STREAM.LIST, then the first and last message
  of every stream requested at once, their TSO parsed, one JSON document printed). Goal <= 1.3.

Each pair's two commands take turns, run after run, so a busy moment of the shared machine falls on both; the
median and the spread (lowest to highest) of each are printed with the ratio of the medians and the load average,
and the ratio of their median CPU times (user + system), which moves less when other work shares the cores.
mqctl's bytecode is compiled first (`compileall`, as `pip install` does for a wheel): under PYTHONDONTWRITEBYTECODE
a checkout would otherwise compile every module of the command from source in every run, which the bare script,
importing two of mqctl's modules, hardly does.
`--breakdown` says where the RocksMQ listing's milliseconds over the bare script go, inside one process (median
over the runs): the bare script's imports first, then what mqctl adds on top of them, step by step.
Run: python bench/cli_startup.py [--runs N] [--only help|rocksmq|nats] [--breakdown]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROCKSMQ = REPO / "tests" / "fixtures" / "rocksmq" / "rdb_data"
NATS_STORE = REPO / "tests" / "fixtures" / "natsmq" / "store"

BARE_ROCKSMQ = r"""
import json, os, shutil, sys, tempfile
from rocksdict import AccessType, Options, Rdict
from mqctl.milvus.protos import pb2

data_dir = sys.argv[1]
header = pb2("common_pb2").MsgHeader()
work = tempfile.mkdtemp()
def opened(path):
    shadow = os.path.join(work, os.path.basename(path))  # symlinks: RocksDB writes nothing there
    os.mkdir(shadow)
    for name in os.listdir(path):
        if not name.startswith("LOCK"):
            os.symlink(os.path.join(os.path.abspath(path), name), os.path.join(shadow, name))
    return Rdict(shadow, options=Options(raw_mode=True), access_type=AccessType.read_only())
db = opened(data_dir)
topics = {}
for key in db.keys():
    topic, _, _ = key.rpartition(b"/")
    entry = topics.setdefault(topic, [0, key, key])
    entry[0] += 1
    entry[2] = key
def tso(key):
    header.ParseFromString(db.get(key))
    return header.base.timestamp
rows = [{"name": t.decode(), "messages": n, "first_id": int(f.rpartition(b"/")[2]),
         "last_id": int(l.rpartition(b"/")[2]), "first_tso": tso(f), "last_tso": tso(l)}
        for t, (n, f, l) in sorted(topics.items())]
meta = opened(data_dir + "_meta_kv")
sizes = {k.decode(): v.decode() for k, v in meta.items() if k.startswith(b"message_size/")}
db.close(); meta.close(); shutil.rmtree(work)
print(json.dumps({"channels": rows, "sizes": sizes}, indent=2))
"""

BARE_NATS = r"""
import asyncio, base64, json, sys
import nats
from mqctl.milvus.protos import pb2

async def main(url):
    header = pb2("common_pb2").MsgHeader()
    nc = await nats.connect(url)
    infos = await nc.jetstream().streams_info()
    wanted = [(i.config.name, s) for i in infos if i.state.messages for s in (i.state.first_seq, i.state.last_seq)]
    replies = await asyncio.gather(
        *(nc.request(f"$JS.API.STREAM.MSG.GET.{n}", b'{"seq":%d}' % s, timeout=5) for n, s in wanted))
    tsos = []
    for reply in replies:
        message = json.loads(reply.data).get("message")
        header.ParseFromString(base64.b64decode((message or {}).get("data") or ""))
        tsos.append(header.base.timestamp)
    await nc.close()
    rows = [{"name": i.config.name, "messages": i.state.messages, "bytes": i.state.bytes} for i in infos]
    print(json.dumps({"channels": rows, "tsos": tsos}, indent=2))

asyncio.run(main(sys.argv[1]))
"""


BREAKDOWN = r"""
import dataclasses, io, json, sys, time
start = time.perf_counter()
steps = []
def step(name):
    global start
    now = time.perf_counter()
    steps.append((name, (now - start) * 1000))
    start = now
import os, shutil, tempfile
from rocksdict import AccessType, Options, Rdict
from mqctl.milvus.protos import pb2
pb2("common_pb2")
step("what the bare script imports (rocksdict, protobuf, MsgHeader)")
import mqctl.cli
step("mqctl.cli (the root's names and help)")
import click
step("click (with inspect, ast, dis, tokenize, uuid, platform)")
import typer.main
step("typer (with shutil, subprocess, traceback, shellingham)")
import mqctl.errors, mqctl.backends, mqctl.mq.model, mqctl.mq.sources
import mqctl.mq.channels, mqctl.mq.rocksmq.reader, mqctl.mq.decode.envelope, mqctl.mq.decode.tso
step("mqctl's error, source, model and listing modules")
import mqctl.cli.context, mqctl.cli.terminal, mqctl.cli.common, mqctl.cli.channels.listing
step("mqctl's CLI modules (context, terminal, common, channels group and list)")
root = mqctl.cli._build_root()
context = click.Context(root, info_name="mqctl", obj={})
root.get_command(context, "channels").get_command(context, "list")
step("the root, the channels group and its list command built")
stdout, sys.stdout = sys.stdout, io.StringIO()
mqctl.cli.run(sys.argv[1:])
sys.stdout = stdout
step("the command: open, read, print (imports done)")
classes = {id(v) for m in list(sys.modules.values()) if m and m.__name__.startswith("mqctl")
           for v in vars(m).values() if isinstance(v, type) and dataclasses.is_dataclass(v)}
print(json.dumps({"steps": steps, "dataclasses": len(classes)}))
"""


def breakdown(runs: int) -> None:
    """Where the listing's time goes in one process (see BREAKDOWN), median of `runs` processes per step."""
    args = ["channels", "list", "--json", "--rocksmq", str(ROCKSMQ)]
    found = []
    for _ in range(runs):
        # from bench/: the mqctl the console script imports (PYTHONPATH's or the installed one), not the checkout's
        command = [sys.executable, "-c", BREAKDOWN, *args]
        done = subprocess.run(command, cwd=REPO / "bench", check=True, capture_output=True)
        found.append(json.loads(done.stdout.splitlines()[-1]))
    names = [name for name, _ in found[0]["steps"]]
    for index, name in enumerate(names):
        spent = [run["steps"][index][1] for run in found]
        print(f"breakdown: {statistics.median(spent):6.1f} ms  {name}")
    print(f"breakdown: {found[0]['dataclasses']} dataclasses created by mqctl's modules on the way; {load()}")


def mqctl_command() -> list[str]:
    script = shutil.which("mqctl", path=os.path.dirname(sys.executable))
    return [script] if script else [sys.executable, "-m", "mqctl"]


def compile_mqctl() -> Path:
    """Write the bytecode of the mqctl package the commands import (this checkout, or the one PYTHONPATH names)."""
    where = [sys.executable, "-c", "import mqctl; print(mqctl.__file__)"]
    found = subprocess.run(where, cwd=REPO / "bench", check=True, capture_output=True, text=True).stdout
    package = Path(found.strip()).parent
    compileall.compile_dir(str(package), quiet=1)
    return package


def take_turns(commands: list[list[str]], runs: int) -> list[list[tuple[float, float]]]:
    """(wall seconds, CPU seconds: user + system) of each command, the commands run in turn `runs` times (after one
    untimed warm-up each). CPU time moves less than wall time when other work shares the machine's cores."""
    for command in commands:
        subprocess.run(command, cwd=REPO, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times: list[list[tuple[float, float]]] = [[] for _ in commands]
    for _ in range(runs):
        for command, spent in zip(commands, times):
            used = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(command, cwd=REPO, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wall = time.perf_counter() - start
            now = resource.getrusage(resource.RUSAGE_CHILDREN)
            spent.append((wall, now.ru_utime + now.ru_stime - used.ru_utime - used.ru_stime))
    return times


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def report(name: str, labels: tuple[str, str], commands: list[list[str]], runs: int, goal: float) -> None:
    before = load()
    ours, anchor = take_turns(commands, runs)
    for label, spent in zip(labels, (ours, anchor)):
        wall, cpu = [w for w, _ in spent], [c for _, c in spent]
        print(
            f"{name}: {label:<34} median {statistics.median(wall) * 1000:7.1f} ms "
            f"(spread {min(wall) * 1000:.1f}-{max(wall) * 1000:.1f}) over {runs} runs, "
            f"CPU median {statistics.median(cpu) * 1000:.1f} ms"
        )
    ratio = statistics.median(w for w, _ in ours) / statistics.median(w for w, _ in anchor)
    cpu_ratio = statistics.median(c for _, c in ours) / statistics.median(c for _, c in anchor)
    print(f"{name}: ratio {ratio:.2f} (goal <= {goal:g}), CPU {cpu_ratio:.2f}; {before} before, {load()} after")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--only", choices=("help", "rocksmq", "nats"))
    parser.add_argument("--breakdown", action="store_true", help="where the RocksMQ listing's time goes, then exit")
    args = parser.parse_args()
    mqctl = mqctl_command()
    print(f"bytecode compiled for {compile_mqctl()}")
    if args.breakdown:
        breakdown(args.runs)
        return 0
    if args.only in (None, "help"):
        commands = [[*mqctl, "--help"], [sys.executable, "-c", "pass"]]
        report("help", ("mqctl --help", "python -c pass"), commands, args.runs, 2)
    if args.only in (None, "rocksmq"):
        commands = [
            [*mqctl, "channels", "list", "--json", "--rocksmq", str(ROCKSMQ)],
            [sys.executable, "-c", BARE_ROCKSMQ, str(ROCKSMQ)],
        ]
        report("rocksmq", ("mqctl channels list --json", "bare rocksdict script"), commands, args.runs, 1.3)
    if args.only in (None, "nats"):
        sys.path.insert(0, str(REPO))
        from mqctl.mq.nats.server import private_nats_server

        with tempfile.TemporaryDirectory(prefix="mqctl-startup-") as work:
            store = Path(work) / "store"
            shutil.copytree(NATS_STORE, store)
            with private_nats_server(store, writable=True, timeout=30) as url:
                commands = [
                    [*mqctl, "channels", "list", "--json", "--nats", url],
                    [sys.executable, "-c", BARE_NATS, url],
                ]
                report("nats", ("mqctl channels list --json", "bare nats-py script"), commands, args.runs, 1.3)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
