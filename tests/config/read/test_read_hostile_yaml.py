"""Hostile input to the config readers: size, nesting and alias limits, merge keys, Kubernetes objects that
are not Milvus configs, null sections, secrets in error messages, and a Milvus that would not start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mqctl.config.read.documents import load_document
from mqctl.config.read.parse import MAX_ALIASES, MAX_INPUT_BYTES, MAX_NESTING, MAX_NODES, compose
from mqctl.config.resolve.resolution import resolve
from mqctl.config.rules.report import validate
from mqctl.errors import InputError
from tests.helpers.cli import run_cli
from tests.helpers.files import write_yaml as write

PLAN = ("migrate", "plan", "--to", "natsmq", "--milvus", "http://127.0.0.1:1", "--config")
MIB = MAX_INPUT_BYTES // (1024 * 1024)
READERS = {"explain": ("config", "explain"), "validate": ("config", "validate"), "get": ("config", "get"), "plan": PLAN}


def read_with(command: str, path: Path, timeout: float = 60):
    """Run one reading command on `path` through the CLI."""
    args = (*READERS[command], str(path)) + (("mq.type",) if command == "get" else ())
    return run_cli(*args, timeout=timeout)


def laughs(levels: int = 9) -> str:
    """The "billion laughs": each line lists the previous one nine times."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\nmq:\n  type: natsmq\n"


# ---------------------------------------------------------------------------- limits


def test_alias_bomb_is_refused_while_composing():
    started = time.monotonic()
    with pytest.raises(InputError) as refused:
        compose(laughs(), "bomb.yaml")
    assert time.monotonic() - started < 2
    assert f"more than {MAX_NODES} YAML nodes (keys and values) once aliases are written out" in refused.value.message
    assert (refused.value.location or "").startswith("bomb.yaml:")


def test_alias_uses_are_capped():
    text = "s: &s x\nl: [" + ", ".join(["*s"] * (MAX_ALIASES + 1)) + "]\n"
    with pytest.raises(InputError, match=f"aliases are used more than {MAX_ALIASES} times once written out"):
        compose(text, "many.yaml")
    assert compose("s: &s x\nl: [" + ", ".join(["*s"] * MAX_ALIASES) + "]\n", "enough.yaml")


def test_node_count_is_capped():
    with pytest.raises(InputError, match=f"more than {MAX_NODES} YAML nodes .keys and values., the node limit"):
        compose("".join(f"k{i}: {i}\n" for i in range(MAX_NODES // 2 + 1)), "wide.yaml")


def test_aliases_that_write_out_beyond_the_size_limit_are_refused():
    scalar = "x" * 100_000
    text = f"s: &s {scalar}\nl: [" + ", ".join(["*s"] * 50) + "]\n"
    with pytest.raises(InputError, match=f"expand the document beyond {MIB} MiB"):
        compose(text, "wide.yaml")


def test_recursive_alias_is_refused():
    with pytest.raises(InputError, match=r"recursive alias \*a"):
        compose("a: &a [1, *a]\n", "loop.yaml")


def test_alias_chains_count_towards_the_nesting_limit():
    depth = 60
    chain = "a0: &a0 {b: 1}\n" + "".join(
        f"a{i}: &a{i} " + "{y: " * depth + f"*a{i - 1}" + "}" * depth + "\n" for i in range(1, 3)
    )
    with pytest.raises(InputError, match=f"alias \\*a1: nesting deeper than {MAX_NESTING} levels"):
        compose(chain, "chain.yaml")


def test_ordinary_anchors_are_fine():
    text = "base: &base {type: natsmq}\nother: *base\nlist: [*base, *base]\n"
    assert compose(text, "ok.yaml")


@pytest.mark.parametrize(
    "text",
    [
        "a: " + "[" * 10_000 + "]" * 10_000 + "\n",
        "a: " + "{a: " * 150 + "1" + "}" * 150 + "\n",
        "".join("  " * i + f"k{i}:\n" for i in range(150)) + "  " * 150 + "v\n",
        "- " * 150 + "x\n",
    ],
)
def test_deep_nesting_is_refused_quickly(text):
    started = time.monotonic()
    with pytest.raises(InputError, match=f"nesting deeper than {MAX_NESTING} levels"):
        compose(text, "deep.yaml")
    assert time.monotonic() - started < 1


def test_nesting_up_to_the_limit_reads():
    text = "".join("  " * i + f"k{i}:\n" for i in range(MAX_NESTING - 2)) + "  " * (MAX_NESTING - 2) + "v: 1\n"
    assert compose(text, "deep-enough.yaml")


def test_oversized_file_is_refused_before_parsing(tmp_path):
    path = tmp_path / "huge.yaml"
    path.write_text("a: " + "x" * MAX_INPUT_BYTES + "\n")
    started = time.monotonic()
    with pytest.raises(InputError, match=f"larger than {MIB} MiB, the input size limit"):
        load_document(path)
    assert time.monotonic() - started < 0.5


def test_fifo_without_writer_is_refused_at_once(tmp_path):
    fifo = tmp_path / "config.fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="nothing writes into"):
        load_document(fifo)


def test_process_substitution_reads():
    """`mqctl config get <(kubectl get ...)` hands over a pipe whose writer is still at work."""
    script = f"{sys.executable} -m mqctl config get <(sleep 0.5; printf 'mq:\\n  type: natsmq\\n') mq.type --json"
    result = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=60, env={**os.environ, "NO_COLOR": "1"}
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["value"] == "natsmq"


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


# ---------------------------------------------------------------------------- merge keys

MERGED = """\
    defaults: &nats
      server:
        port: 4223
        storeDir: /data/nats
    mqbase: &mq {type: natsmq}
    mq:
      <<: *mq
    natsmq:
      <<: *nats
    rocksmq:
      <<: [{path: /first}, {path: /second, retentionSizeInMB: 10}]
      retentionSizeInMB: 20
    """


def test_merge_keys_are_resolved_as_milvus_reads_them(tmp_path):
    res = resolve([write(tmp_path, MERGED)])
    assert res.effective_mq == "natsmq"
    assert res.origin("mq.type").line == 5  # where the merged value is written
    assert res.value("natsmq.server.port") == "4223"
    assert res.value("natsmq.server.storeDir") == "/data/nats"
    assert res.value("rocksmq.path") == "/first"  # the earlier merged mapping wins
    assert res.value("rocksmq.retentionSizeInMB") == "20"  # a key written in the mapping wins
    assert not [f for f in validate(res) if f.code == "MQ120"]


def test_merge_keys_through_the_cli(tmp_path):
    path = write(tmp_path, MERGED)
    got = run_cli("config", "get", str(path), "natsmq.server.port", "--json")
    assert got.code == 0 and got.json()["value"] == "4223"
    explained = run_cli("config", "explain", str(path), "--json")
    assert explained.json()["effective_mq"] == "natsmq"


def test_merge_keys_in_a_cr_field(tmp_path):
    path = write(
        tmp_path,
        """\
        apiVersion: milvus.io/v1beta1
        kind: Milvus
        metadata: {name: m}
        x-deps: &deps {msgStreamType: natsmq}
        spec:
          dependencies:
            <<: *deps
        """,
    )
    assert resolve([path]).effective_mq == "natsmq"


# ---------------------------------------------------------------------------- Kubernetes objects


def test_kubernetes_objects_are_not_milvus_configs(tmp_path):
    for kind in ("Deployment", "ConfigMap", "Service"):
        path = write(
            tmp_path, f"apiVersion: v1\nkind: {kind}\nmetadata: {{name: x}}\ndata: {{a.txt: b}}\n", f"{kind}.yaml"
        )
        with pytest.raises(InputError, match=f"is a Kubernetes {kind}, not a Milvus config") as refused:
            load_document(path)
        assert refused.value.location == f"{path}:2"
    with pytest.raises(InputError, match=r"keys: a.txt"):
        load_document(tmp_path / "ConfigMap.yaml")


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


# ---------------------------------------------------------------------------- null sections


def test_null_section_is_an_empty_section(tmp_path):
    path = write(tmp_path, "mq: null\nnatsmq:\n  server: ~\nrocksmq:\n  path: /data/rdb\n")
    res = resolve([path])
    assert res.mq_type == "default" and res.effective_mq == "rocksmq"
    assert not [f for f in validate(res) if f.code == "MQ120"]
    result = run_cli("config", "validate", str(path))
    assert result.code == 0 and "unknown key" not in result.stdout


# ---------------------------------------------------------------------------- secrets


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


def test_placeholder_under_an_ordinary_key_stays_readable(tmp_path):
    path = write(tmp_path, "natsmq:\n  server:\n    port: ${NATS_PORT:-4222}\nrocksmq:\n  path: /var/lib/milvus/rdb\n")
    res = resolve([path])
    assert res.effective_mq == "rocksmq" and res.value("natsmq.server.port") == "${NATS_PORT:-4222}"
    found = {f.code: f for f in validate(res)}
    assert found["MQ163"].key == "natsmq.server.port" and found["MQ163"].line == 3
    assert "MQ164" not in found


# ---------------------------------------------------------------------------- a Milvus that would not start


def test_channels_list_names_the_invalid_mq_type(tmp_path):
    path = write(tmp_path, "mq:\n  type: natsmqq\n")
    result = run_cli("channels", "list", "--config", str(path))
    assert result.code == 2
    assert f"mq.type 'natsmqq' ({path}:2)" in result.stderr
    assert "panics `mq type natsmqq is invalid` at startup" in result.stderr
    assert "effective MQ is none" not in result.stderr


# ---------------------------------------------------------------------------- what the probe found


def test_control_character_is_one_line_at_its_position(tmp_path):
    path = write(tmp_path, "mq:\n  type: nats\x00mq\n")
    with pytest.raises(InputError) as refused:
        load_document(path)
    assert refused.value.location == f"{path}:2:13"
    assert refused.value.message == "invalid YAML: character #x0000 is not allowed in YAML"


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


def test_a_forced_configmap_needs_a_milvus_file(tmp_path):
    path = write(tmp_path, "mq:\n  type: natsmq\n")
    with pytest.raises(InputError, match=r"--kind configmap, but `data` holds no milvus\.yaml"):
        load_document(path, "configmap")


def test_a_section_written_as_a_value_is_named_so(tmp_path):
    path = write(tmp_path, "mq: natsmq\n")
    findings = [f for f in validate(resolve([path])) if f.code == "MQ120"]
    assert [f.message for f in findings] == ["mq is a section, not a value: Milvus ignores it"]
    assert findings[0].hint == "write its keys under it, e.g. mq.type"


def test_a_text_is_parsed_once_whatever_name_it_is_read_under():
    """An edit reads the file's text under its path and again under "diff": one parse serves both, and an
    error still names the file it was read from."""
    text = "mq:\n  type: rocksmq\nparse_once_marker: 1\n"
    assert compose(text, "/etc/milvus.yaml") is compose(text, "diff")
    with pytest.raises(InputError) as raised:
        compose("mq: [unclosed\n", "/etc/broken.yaml")
    assert "/etc/broken.yaml" in str(raised.value.location or raised.value)
