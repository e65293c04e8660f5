"""Hostile input through the commands that read a config (explain, validate, get, migrate plan, switch): size,
nesting and alias limits refused in one line, merge keys, Kubernetes objects that are not Milvus configs (the
readers themselves: tests/config/read/test_read_hostile_yaml.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from mqctl.config.read.documents import load_document
from mqctl.config.read.parse import MAX_INPUT_BYTES
from mqctl.config.resolve.resolution import resolve
from mqctl.config.rules.report import validate
from mqctl.errors import InputError
from tests.helpers.cli import run_cli
from tests.helpers.files import MERGED_YAML as MERGED
from tests.helpers.files import laughs
from tests.helpers.files import write_yaml as write

PLAN = ("migrate", "plan", "--to", "natsmq", "--milvus", "http://127.0.0.1:1", "--config")
MIB = MAX_INPUT_BYTES // (1024 * 1024)
READERS = {"explain": ("config", "explain"), "validate": ("config", "validate"), "get": ("config", "get"), "plan": PLAN}


def read_with(command: str, path: Path, timeout: float = 60):
    """Run one reading command on `path` through the CLI."""
    args = (*READERS[command], str(path)) + (("mq.type",) if command == "get" else ())
    return run_cli(*args, timeout=timeout)


@pytest.mark.parametrize("command", sorted(READERS))
def test_cli_refuses_alias_bomb_with_the_limit(tmp_path, command):
    path = write(tmp_path, laughs())
    started = time.monotonic()
    result = read_with(command, path)
    assert result.code == 2, result.stderr
    assert "once aliases are written out, the node limit" in result.stderr
    assert time.monotonic() - started < 20


@pytest.mark.parametrize("command", sorted(READERS))
def test_cli_refuses_deep_nesting_and_huge_files(tmp_path, command):
    deep = write(tmp_path, "a: " + "[" * 10_000 + "]" * 10_000 + "\n", "deep.yaml")
    result = read_with(command, deep)
    assert result.code == 2 and "nesting deeper than 100 levels, the nesting limit" in result.stderr
    assert "internal error" not in result.stderr
    huge = tmp_path / "huge.yaml"
    huge.write_text("mq:\n  type: natsmq\n# " + "x" * (50 * 1024 * 1024) + "\n")
    started = time.monotonic()
    result = read_with(command, huge)
    assert result.code == 2 and f"larger than {MIB} MiB, the input size limit" in result.stderr
    assert time.monotonic() - started < 10


def test_merge_keys_through_the_cli(tmp_path):
    path = write(tmp_path, MERGED)
    got = run_cli("config", "get", str(path), "natsmq.server.port", "--json")
    assert got.code == 0 and got.json()["value"] == "4223"
    explained = run_cli("config", "explain", str(path), "--json")
    assert explained.json()["effective_mq"] == "natsmq"


def test_switch_leaves_a_kubernetes_object_alone(tmp_path):
    text = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: milvus}\nspec: {replicas: 1}\n"
    path = write(tmp_path, text)
    result = run_cli("config", "switch", str(path), "--to", "natsmq", "--yes")
    assert result.code == 2
    assert "is a Kubernetes Deployment, not a Milvus config" in result.stderr
    assert path.read_text() == text
    assert read_with("validate", path).code == 2


def test_configmap_carrying_user_yaml_is_read_and_says_which_key(tmp_path):
    path = write(
        tmp_path,
        """\
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: milvus}
        data:
          user.yaml: |
            mq:
              type: natsmq
        """,
    )
    result = run_cli("config", "explain", str(path), "--json")
    assert result.code == 0
    assert result.json()["effective_mq"] == "natsmq"
    assert any("data.user.yaml" in line for line in result.json()["explanation"])


def test_null_section_is_an_empty_section(tmp_path):
    path = write(tmp_path, "mq: null\nnatsmq:\n  server: ~\nrocksmq:\n  path: /data/rdb\n")
    res = resolve([path])
    assert res.mq_type == "default" and res.effective_mq == "rocksmq"
    assert not [f for f in validate(res) if f.code == "MQ120"]
    result = run_cli("config", "validate", str(path))
    assert result.code == 0 and "unknown key" not in result.stdout


@pytest.mark.parametrize(
    "text, secret",
    [
        ("minio:\n  secretAccessKey: *Sup3rS3cret\n", "Sup3rS3cret"),
        ("minio: {secretAccessKey: *Sup3rS3cret}\n", "Sup3rS3cret"),
        ("pulsar:\n  authParams: {{ Sup3rS3cret }}\n", "Sup3rS3cret"),
    ],
)
def test_secret_values_never_appear_in_errors(tmp_path, text, secret):
    path = write(tmp_path, text)
    with pytest.raises(InputError) as refused:
        load_document(path)
    assert secret not in refused.value.one_line()
    result = run_cli("config", "validate", str(path))
    assert result.code == 2 and "******" in result.stderr
    assert secret not in result.stdout + result.stderr


def test_a_reused_anchor_quotes_no_line(tmp_path):
    """ruamel warns about a reused anchor, quoting both lines; YAML allows it (the later one counts)."""
    path = write(tmp_path, "minio:\n  secretAccessKey: &k Sup3rS3cret\n  other: &k natsmq\nmq: {type: *k}\n")
    result = run_cli("config", "get", str(path), "mq.type", "--json")
    assert result.code == 0 and result.json()["value"] == "natsmq"
    assert "Sup3rS3cret" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    "text",
    [
        "minio:\n  secretAccessKey: ${MINIO_SECRET:-Sup3rS3cret}\n",
        "minio:\n  secretAccessKey:\n    ${MINIO_SECRET:-Sup3rS3cret}\n",
    ],
)
def test_a_secret_placeholder_default_is_never_shown(tmp_path, text):
    """Milvus reads `${VAR:-default}` literally, so the file is read; the default may be the password itself."""
    path = write(tmp_path, text)
    for command in ("validate", "explain"):
        result = run_cli("config", command, str(path), "--json")
        assert result.code in (0, 1), result.stderr
        shown = [f["message"] for f in result.json()["findings"] if f["code"] == "MQ163"]
        assert shown and "${MINIO_SECRET:-******}" in shown[0]
        assert "Sup3rS3cret" not in result.stdout + result.stderr
    get = run_cli("config", "get", str(path), "minio.secretAccessKey", "--json")
    assert get.code == 0 and "Sup3rS3cret" not in get.stdout + get.stderr


def test_channels_list_names_the_invalid_mq_type(tmp_path):
    path = write(tmp_path, "mq:\n  type: natsmqq\n")
    result = run_cli("channels", "list", "--config", str(path))
    assert result.code == 2
    assert f"mq.type 'natsmqq' ({path}:2)" in result.stderr
    assert "panics `mq type natsmqq is invalid` at startup" in result.stderr
    assert "effective MQ is none" not in result.stderr


def test_surrogate_escape_is_refused_as_milvus_does(tmp_path):
    path = write(tmp_path, 'mq:\n  type: "\\ud800"\n')
    with pytest.raises(InputError, match="invalid Unicode escape") as refused:
        load_document(path)
    assert refused.value.location == f"{path}:2:9"
    result = run_cli("config", "get", str(path), "mq.type")
    assert result.code == 2 and "internal error" not in result.stderr


def test_what_is_not_a_file(tmp_path):
    (tmp_path / "loop.yaml").symlink_to(tmp_path / "back.yaml")
    (tmp_path / "back.yaml").symlink_to(tmp_path / "loop.yaml")
    with pytest.raises(InputError, match="cannot read: Too many levels of symbolic links"):
        load_document(tmp_path / "loop.yaml")
    with pytest.raises(InputError, match="is a device or socket, not a config file"):
        load_document("/dev/zero")
    with pytest.raises(InputError, match="is a directory"):
        load_document(tmp_path)
    result = run_cli(*PLAN, str(tmp_path / "loop.yaml"))  # migrate refuses a --config it cannot open as a file
    assert result.code == 2 and "loop.yaml does not exist or is not a file" in result.stderr
    assert len(result.stderr.splitlines()) == 1 and not list(tmp_path.glob(".mqctl-migrate*"))


@pytest.mark.parametrize("kind", ["milvus-yaml", "helm-values", "configmap"])
def test_a_forced_kind_still_needs_a_mapping(tmp_path, kind):
    path = write(tmp_path, "- mq\n- natsmq\n")
    result = run_cli("config", "validate", "--kind", kind, str(path))
    assert result.code == 2 and "expected a mapping of settings at the top level" in result.stderr
