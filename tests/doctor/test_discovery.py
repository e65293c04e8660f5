"""Discovery parses /proc: a fake /proc tree stands for the host (the parsing is what is tested here; the
real process is found in tests/e2e/test_doctor_milvus.py). The checks it feeds run for real on the tree's files."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from mqctl.doctor import discovery
from mqctl.doctor.checks import examine
from mqctl.errors import InputError, PreconditionError
from tests.helpers.paths import FIXTURES, SAMPLES
from tests.helpers.servers import free_port

BANNER = "Welcome to use Milvus!\nVersion:   v2.3.5-lite\nBuilt:     Fri Jan 12 07:30:43 UTC 2024\n"
INIT_LINE = '[2026/11/25 21:00:00.000 +00:00] [INFO] [dependency/factory.go:84] ["try to init mq"] [standalone=true] [mqType={mq}]\n'


def fake_process(
    root: Path,
    pid: int,
    home: Path,
    *,
    env: dict[str, str] | None = None,
    argv: tuple[str, ...] = ("run", "standalone"),
    mq_in_log: str | None = "rocksmq",
    config_text: str | None = None,
    listening: tuple[int, ...] = (),
) -> Path:
    """/proc/PID of a Milvus whose working directory is `home` (configs/milvus.yaml, logs/milvus-stdout.log)."""
    proc = root / str(pid)
    (proc / "fd").mkdir(parents=True)
    (proc / "cmdline").write_bytes(b"\0".join(a.encode() for a in (str(home / "bin" / "milvus"), *argv)) + b"\0")
    (proc / "stat").write_text(f"{pid} (milvus) S 1 {pid} {pid} 0 -1")
    environ = {"DEPLOY_MODE": "STANDALONE", "METRICS_PORT": "9091", **(env or {})}
    (proc / "environ").write_bytes(b"".join(f"{k}={v}\0".encode() for k, v in environ.items()))
    (home / "configs").mkdir(parents=True, exist_ok=True)
    (home / "logs").mkdir(exist_ok=True)
    text = config_text or (SAMPLES / "milvus-2.3-standalone-rocksmq.yaml").read_text()
    (home / "configs" / "milvus.yaml").write_text(text.replace("localhost:2379", f"127.0.0.1:{free_port()}"))
    log = home / "logs" / "milvus-stdout.log"
    log.write_text(BANNER + (INIT_LINE.format(mq=mq_in_log) if mq_in_log else ""))
    os.symlink(home, proc / "cwd")
    os.symlink(log, proc / "fd" / "1")
    os.symlink("/dev/null", proc / "fd" / "0")
    lines = ["  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode"]
    for number, port in enumerate(listening):
        inode = 7000 + pid * 10 + number
        os.symlink(f"socket:[{inode}]", proc / "fd" / str(10 + number))
        lines.append(
            f"   {number}: 0100007F:{port:04X} 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000 0 {inode}"
        )
    net = root / "net"
    net.mkdir(exist_ok=True)
    tcp = net / "tcp"
    old = tcp.read_text().splitlines()[1:] if tcp.exists() else []
    tcp.write_text("\n".join([lines[0], *old, *lines[1:]]) + "\n")
    return proc


def test_finds_the_one_standalone_with_its_config_env_log_version_and_mq(tmp_path):
    root, home = tmp_path / "proc", tmp_path / "milvus"
    fake_process(
        root, 4242, home, env={"MQ_TYPE": "rocksmq", "MINIO_SECRET_ACCESS_KEY": "s3cret"}, listening=(19530, 9091)
    )
    fake_process(root, 17, tmp_path / "other", argv=("run", "proxy"))  # a cluster component: not a standalone
    (root / "99").mkdir()  # a process that went away: no cmdline
    assert [c.pid for c in discovery.candidates(root)] == [4242]

    target = discovery.locate(discovery.Request(), root)
    assert target.pid == 4242 and target.found_by == "discovered"
    assert target.configs == [str(home / "configs" / "milvus.yaml")]
    assert target.version == "2.3.5" and target.version_from == "the banner in its log"
    assert target.mq is not None and target.mq.mq == "rocksmq" and "milvus-stdout.log" in target.mq.evidence
    assert target.env["MQ_TYPE"] == "rocksmq" and "s3cret" not in str(target.env)
    assert target.ports["grpc"] == 19530 and target.ports["health"] == 9091 and target.ports["listening"] == 2
    assert target.health_url == "http://127.0.0.1:9091/healthz" and target.milvus == "http://127.0.0.1:19530"
    assert target.paths["rocksmq"] == "/var/lib/milvus/rdb_data" and target.paths["log"].endswith("milvus-stdout.log")


def test_milvusconf_relative_to_the_working_directory_wins_over_configs(tmp_path):
    root, home = tmp_path / "proc", tmp_path / "milvus"
    fake_process(root, 5, home, env={"MILVUSCONF": "elsewhere"})
    (home / "elsewhere").mkdir()
    (home / "elsewhere" / "milvus.yaml").write_text((home / "configs" / "milvus.yaml").read_text())
    (home / "elsewhere" / "user.yaml").write_text("mq:\n  type: rocksmq\n")
    target = discovery.locate(discovery.Request(), root)
    assert target.configs == [str(home / "elsewhere" / "milvus.yaml"), str(home / "elsewhere" / "user.yaml")]


def test_nothing_running_is_exit_3_with_how_to_point_at_one(tmp_path):
    (tmp_path / "proc").mkdir()
    with pytest.raises(PreconditionError) as raised:
        discovery.locate(discovery.Request(), tmp_path / "proc")
    hint = raised.value.hint or ""
    assert raised.value.exit_code == 3 and "--pid" in hint and "--config" in hint


def test_two_milvus_processes_are_listed_and_the_doctor_asks_for_pid(tmp_path):
    root = tmp_path / "proc"
    fake_process(root, 100, tmp_path / "a")
    fake_process(root, 200, tmp_path / "b")
    with pytest.raises(InputError) as raised:
        discovery.locate(discovery.Request(), root)
    message = raised.value.message
    assert raised.value.exit_code == 2 and "pid 100 in" in message and "pid 200 in" in message
    assert "--pid" in (raised.value.hint or "")
    assert discovery.locate(discovery.Request(pid=200), root).cwd == str(tmp_path / "b")


def test_pid_that_is_not_a_milvus_standalone_is_refused(tmp_path):
    root = tmp_path / "proc"
    fake_process(root, 300, tmp_path / "a", argv=("run", "datanode"))
    with pytest.raises(InputError, match="not `milvus run standalone`"):
        discovery.locate(discovery.Request(pid=300), root)
    with pytest.raises(PreconditionError, match="no such process"):
        discovery.locate(discovery.Request(pid=301), root)


def test_the_running_mq_comes_from_the_embedded_nats_port_when_the_log_says_nothing(tmp_path):
    root = tmp_path / "proc"
    config = (SAMPLES / "milvus-2.3-standalone-natsmq.yaml").read_text()
    fake_process(root, 400, tmp_path / "a", mq_in_log=None, config_text=config, listening=(4222,))
    target = discovery.locate(discovery.Request(), root)
    assert target.mq is not None and target.mq.mq == "natsmq" and "4222" in target.mq.evidence


def test_an_empty_mq_type_in_the_process_environment_is_a_config_that_will_not_start(tmp_path):
    """docker compose's `MQ_TYPE: ${MQ_TYPE}` with nothing set: Milvus reads mq.type "" and panics."""
    root = tmp_path / "proc"
    fake_process(root, 500, tmp_path / "a", env={"MQ_TYPE": ""})
    result = examine(discovery.Request(timeout=1), root)
    failed = [c for c in result.checks if c.code == "DR101"]
    assert result.verdict == "error" and failed and "mq type  is invalid" in failed[0].message
    assert "MQ_TYPE" in (failed[0].fix or "")
    assert not [c for c in result.checks if c.code == "DR110"]  # no drift to a config that does not start


def test_mq_type_edited_on_disk_while_rocksmq_runs_is_drift_with_the_migration_as_fix(tmp_path):
    root, home = tmp_path / "proc", tmp_path / "a"
    fake_process(root, 600, home)
    config = home / "configs" / "milvus.yaml"
    config.write_text(config.read_text().replace("type: default", "type: natsmq"))
    result = examine(discovery.Request(timeout=1), root)
    drift = next(c for c in result.checks if c.code == "DR110")
    assert drift.severity == "error" and "runs rocksmq now" in drift.message and "empty natsmq" in drift.message
    assert f"mqctl config set {config} mq.type rocksmq --yes" in (drift.fix or "")
    assert "mqctl migrate --config" in (drift.fix or "") and "--to natsmq" in (drift.fix or "")
    assert "rocksmq data at /var/lib/milvus/rdb_data" in (drift.impact or "")


def test_a_milvus_in_a_container_is_read_through_its_proc_root(tmp_path):
    """A container's paths are its own: /milvus/configs inside it is <proc>/PID/root/milvus/configs here."""
    root = tmp_path / "proc"
    inside = root / "700" / "root"
    fake_process(root, 700, inside / "milvus")
    proc = root / "700"
    for link, target in ((proc / "cwd", "/milvus"), (proc / "fd" / "1", "/milvus/logs/milvus-stdout.log")):
        link.unlink()
        os.symlink(target, link)  # the paths as the process sees them: not on this host
    found = discovery.locate(discovery.Request(), root)
    assert found.configs == [str(inside / "milvus" / "configs" / "milvus.yaml")]
    assert found.cwd == "/milvus" and found.version == "2.3.5" and found.mq and found.mq.mq == "rocksmq"
    assert found.paths["rocksmq"] == str(inside / "var/lib/milvus/rdb_data")
    assert any("another filesystem root" in note for note in found.notes)


def test_drift_made_by_an_interrupted_migration_points_at_resume_not_at_putting_it_back(tmp_path):
    from mqctl.migrate.record.journal import DONE, JOURNAL_NAME, Journal

    root, home = tmp_path / "proc", tmp_path / "a"
    fake_process(root, 800, home)
    config = home / "configs" / "milvus.yaml"
    config.write_text(config.read_text().replace("type: default", "type: natsmq"))  # the switch step's edit
    journal = Journal.new(
        home / "configs" / JOURNAL_NAME,
        "rocksmq",
        "natsmq",
        {"configs": [str(config)], "to": "natsmq", "milvus": {"uri": "http://127.0.0.1:19530"}},
    )
    for name in ("preflight", "stop-writes", "flush", "stop", "switch"):
        journal.step(name).status = DONE
    journal.save()
    result = examine(discovery.Request(timeout=1), root)
    drift = next(c for c in result.checks if c.code == "DR110")
    assert drift.severity == "error" and "unfinished migration" in (drift.fix or "")
    assert f"mqctl migrate resume --config {config}" in (drift.fix or "") and "config set" not in (drift.fix or "")


def test_secrets_in_the_process_environment_never_reach_the_output(tmp_path):
    from mqctl.cli.terminal import to_jsonable

    root = tmp_path / "proc"
    env = {"MINIO_SECRET_ACCESS_KEY": "s3cretXYZ", "ETCD_ENDPOINTS": "http://user:pw123@127.0.0.1:1"}
    fake_process(root, 900, tmp_path / "a", env=env)
    shown = str(to_jsonable(examine(discovery.Request(timeout=1), root)))
    assert "MINIO_SECRET_ACCESS_KEY" in shown and "ETCD_ENDPOINTS" in shown  # the overrides are named
    assert "s3cretXYZ" not in shown and "pw123" not in shown


def test_a_milvus_running_natsmq_is_read_through_its_live_server(tmp_path):
    """The running MQ is natsmq (its log says so): the doctor reads the streams from the server on
    natsmq.server.port, a real nats-server over the natsmq fixture here, and finds their retention drift."""
    from mqctl.host.hooks import port_open
    from mqctl.mq.nats.server import nats_server_binary

    store, port = tmp_path / "store", free_port()
    shutil.copytree(FIXTURES / "natsmq" / "store", store)
    conf = tmp_path / "nats.conf"
    conf.write_text(f"listen: 127.0.0.1:{port}\njetstream {{ store_dir: {json.dumps(str(store))} }}\n")
    server = subprocess.Popen(
        [nats_server_binary(), "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        text = (SAMPLES / "milvus-2.3-standalone-natsmq.yaml").read_text()
        text = re.sub(r"port: 4222", f"port: {port}", text).replace("/var/lib/milvus/nats", str(store))
        root = tmp_path / "proc"
        fake_process(root, 1000, tmp_path / "m", config_text=text, mq_in_log="natsmq")
        deadline = time.monotonic() + 10
        while not port_open(f"127.0.0.1:{port}") and time.monotonic() < deadline:
            time.sleep(0.05)
        result = examine(discovery.Request(timeout=2), root)
        codes = {c.code: c for c in result.checks}
        assert codes["DR110"].severity == "ok"  # runs natsmq, starts natsmq
        assert codes["RET100"].severity == "error" and "10058" in codes["RET100"].message
        assert codes["DR500"].severity == "info"  # natsmq still runs on the 2.3.5 of the banner; gone in 2.6
    finally:
        server.terminate()
        server.wait(timeout=10)
