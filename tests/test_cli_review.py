"""End-to-end checks of rough edges an operator meets: bad URLs, secrets in URLs, misspelled
targets, out-of-range ports, negative values, files where folders are expected."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest

from tests.helpers.paths import FIXTURES, SAMPLES


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_listening(port: int, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


@pytest.fixture
def config(tmp_path):
    path = tmp_path / "milvus.yaml"
    shutil.copy(SAMPLES / "milvus-2.3-standalone-rocksmq.yaml", path)
    return path


def _one_clean_line(result) -> None:
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("url", ["nats://[::1", "nats://127.0.0.1:port", "foo://127.0.0.1:4222", "nats://"])
def test_malformed_nats_url_is_bad_input(cli, url):
    result = cli("channels", "list", "--nats", url)
    assert result.code == 2, result.stderr
    _one_clean_line(result)
    assert "--nats" in result.stderr


def test_malformed_milvus_and_etcd_urls_are_bad_input(cli, config):
    milvus = cli("migrate", "plan", "--config", str(config), "--to", "natsmq", "--milvus", "http://[::1")
    assert milvus.code == 2
    _one_clean_line(milvus)
    assert "--milvus 'http://[::1' is not a valid URL" in milvus.stderr
    etcd = cli("config", "explain", str(config), "--etcd", "http://[::1")
    assert etcd.code == 2
    _one_clean_line(etcd)
    assert "--etcd" in etcd.stderr


def test_password_in_milvus_uri_is_never_printed_nor_journaled(cli, config):
    uri = f"http://root:Sup3rS3cret@127.0.0.1:{_closed_port()}"
    plan = cli("migrate", "plan", "--config", str(config), "--to", "natsmq", "--milvus", uri, "--json")
    assert plan.code == 3
    assert plan.json()["findings"][0]["code"] == "milvus-unreachable"
    assert "Sup3rS3cret" not in plan.stdout + plan.stderr
    run = cli(
        "migrate",
        "--config",
        str(config),
        "--to",
        "natsmq",
        "--milvus",
        uri,
        "--stop-cmd",
        "true",
        "--start-cmd",
        "true",
        "--log-file",
        "milvus.log",
        "--yes",
    )
    assert run.code == 3 and "not reachable" in run.stderr
    journal = config.parent / ".mqctl-migrate.json"
    assert journal.is_file() and "Sup3rS3cret" not in journal.read_text()
    status = cli("migrate", "status", "--config", str(config), "--json")
    milvus = status.json()["options"]["milvus"]
    assert milvus["uri"].startswith("http://127.0.0.1:") and milvus["user"] == "root" and milvus["password_set"]


def test_password_in_etcd_url_is_not_printed(cli, config):
    result = cli("config", "explain", str(config), "--etcd", f"http://root:EtcdPw9@127.0.0.1:{_closed_port()}")
    assert result.code == 3
    _one_clean_line(result)
    assert "EtcdPw9" not in result.stderr and "root:******@" in result.stderr


def test_misspelled_migration_target_is_bad_input(cli, config):
    result = cli("migrate", "plan", "--config", str(config), "--to", "natmq", "--milvus", "http://127.0.0.1:1")
    assert result.code == 2
    _one_clean_line(result)
    assert "unknown MQ 'natmq'" in result.stderr and "did you mean 'natsmq'?" in result.stderr


@pytest.mark.parametrize("port", ["70000", "0", "-5"])
def test_set_refuses_a_port_validate_rejects(cli, config, port):
    before = config.read_bytes()
    result = cli("config", "set", str(config), "natsmq.server.port", port, "--yes")
    assert result.code == 2
    _one_clean_line(result)
    assert f"natsmq.server.port must be a port, got '{port}'" in result.stderr
    assert config.read_bytes() == before


def test_switch_refuses_an_out_of_range_port(cli, config):
    result = cli("config", "switch", str(config), "--to", "natsmq", "--port", "70000", "--yes")
    assert result.code == 2 and "must be a port" in result.stderr


def test_set_takes_a_negative_value(cli, config):
    result = cli("config", "set", str(config), "natsmq.server.port", "-1", "--yes")
    assert result.code == 0, result.stderr
    assert "port: -1" in config.read_text()
    get = cli("config", "get", str(config), "natsmq.server.port", "--json")
    assert get.json()["value"] == "-1"
    validate = cli("config", "validate", str(config), "--json")
    assert "MQ112" in {finding["code"] for finding in validate.json()["findings"]}


def test_unknown_option_after_set_is_still_refused(cli, config):
    before = config.read_bytes()
    result = cli("config", "set", str(config), "natsmq.server.port", "4223", "--yse")
    assert result.code == 2 and "--yse" in result.stderr
    assert config.read_bytes() == before


@pytest.mark.parametrize("option", ["--rocksmq", "--nats-store"])
def test_a_file_where_a_store_folder_is_expected(cli, option):
    result = cli("channels", "list", option, str(SAMPLES / "milvus-2.3-standalone-rocksmq.yaml"))
    assert result.code == 2
    _one_clean_line(result)
    assert "is not a directory" in result.stderr


def test_a_folder_where_a_config_file_is_expected(cli):
    result = cli("config", "explain", str(SAMPLES))
    assert result.code == 2
    _one_clean_line(result)
    assert "is a directory, not a config file" in result.stderr


def test_peek_type_without_a_name_is_bad_input(cli):
    result = cli(
        "channels", "peek", "by-dev-rootcoord-dml_0", "--rocksmq", str(FIXTURES / "rocksmq" / "rdb_data"), "--type", ","
    )
    assert result.code == 2
    _one_clean_line(result)
    assert "--type ',' names no message type" in result.stderr


def test_rollback_says_there_is_no_journal_before_asking(cli, config):
    missing = cli("migrate", "rollback", "--config", str(config))
    assert missing.code == 3
    _one_clean_line(missing)
    assert "no migration journal" in missing.stderr
    failed = cli(
        "migrate",
        "--config",
        str(config),
        "--to",
        "natsmq",
        "--milvus",
        f"http://127.0.0.1:{_closed_port()}",
        "--stop-cmd",
        "true",
        "--start-cmd",
        "true",
        "--log-file",
        "milvus.log",
        "--yes",
    )
    assert failed.code == 3 and (config.parent / ".mqctl-migrate.json").is_file()
    unconfirmed = cli("migrate", "rollback", "--config", str(config))
    assert unconfirmed.code == 3 and "needs confirmation" in unconfirmed.stderr


@pytest.mark.parametrize(
    ("sample", "key"),
    [
        ("milvus-2.3-standalone-rocksmq.yaml", "rocksmq"),
        ("operator-cr-natsmq.yaml", "spec.config"),
        ("helm-values-natsmq.yaml", "standalone"),
    ],
)
def test_get_of_a_section_is_refused_not_shown_as_unset(cli, sample, key):
    result = cli("config", "get", str(SAMPLES / sample), key)
    assert result.code == 2
    _one_clean_line(result)
    assert f"{key} is a section" in result.stderr and "(not set)" not in result.stdout


FLOW_AND_LIST_SECRETS = """\
minio: {address: localhost, secretAccessKey: FlowSecret1, accessKeyID: FlowKey1}
etcd:
  auth:
    password:
      - ListPw4
pulsar:
  authParams: |
    {"token": "BlockTok5"}
natsmq:
  server:
    port: 4222
"""


@pytest.mark.parametrize(
    ("command", "key", "value"),
    [
        ("set", "minio.address", "minio"),
        ("set", "natsmq.server.port", "4223"),
        ("set", "etcd.auth.enabled", "true"),
        ("unset", "etcd", None),
        ("set", "minio.secretAccessKey", "NewSecret6"),
    ],
)
def test_diff_hides_secrets_in_flow_mappings_lists_and_blocks(cli, tmp_path, command, key, value):
    path = tmp_path / "milvus.yaml"
    path.write_text(FLOW_AND_LIST_SECRETS)
    result = cli("config", command, str(path), key, *([value] if value else []), "--dry-run", "--json")
    assert result.code == 0, result.stderr
    diff = result.json()["diff"]
    assert diff and diff in result.stderr
    for secret in ("FlowSecret1", "FlowKey1", "ListPw4", "BlockTok5", "NewSecret6"):
        assert secret not in result.stdout + result.stderr
    assert path.read_text() == FLOW_AND_LIST_SECRETS


@pytest.mark.parametrize("how", ["store-dir-option", "config-file"])
def test_a_store_served_by_an_idle_nats_server_is_refused(cli, tmp_path, how):
    """An idle nats-server keeps no store file open; its command line or config names the store."""
    from mqctl.mq.nats.server import nats_server_binary

    store = tmp_path / "store"
    shutil.copytree(FIXTURES / "natsmq" / "store", store)
    port = _closed_port()
    if how == "config-file":
        conf = tmp_path / "server.conf"
        conf.write_text(f'listen: 127.0.0.1:{port}\njetstream {{ store_dir: "{store}" }}\n')
        args = ["-c", str(conf)]
    else:
        args = ["-a", "127.0.0.1", "-p", str(port), "-js", "-sd", str(store)]
    server = subprocess.Popen([nats_server_binary(), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(port)
        config = tmp_path / "milvus.yaml"
        shutil.copy(SAMPLES / "milvus-2.3-standalone-natsmq.yaml", config)
        result = cli("retention", "apply", "--config", str(config), "--nats-store", str(store), "--yes")
        assert result.code == 3, result.stdout
        _one_clean_line(result)
        assert f"in use by {server.pid} (nats-server)" in result.stderr
    finally:
        server.kill()
        server.wait()
