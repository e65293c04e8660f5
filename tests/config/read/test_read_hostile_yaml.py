"""Hostile input to the config readers: size, nesting and alias limits, merge keys, Kubernetes objects that
are not Milvus configs, null sections, secrets in error messages, and a Milvus that would not start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from mqctl.config.read.documents import load_document
from mqctl.config.read.parse import MAX_ALIASES, MAX_INPUT_BYTES, MAX_NESTING, MAX_NODES, compose
from mqctl.config.resolve.resolution import resolve
from mqctl.config.rules.report import validate
from mqctl.errors import InputError
from tests.helpers.files import MERGED_YAML as MERGED
from tests.helpers.files import laughs
from tests.helpers.files import write_yaml as write

MIB = MAX_INPUT_BYTES // (1024 * 1024)


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


def test_merge_keys_are_resolved_as_milvus_reads_them(tmp_path):
    res = resolve([write(tmp_path, MERGED)])
    assert res.effective_mq == "natsmq"
    assert res.origin("mq.type").line == 5  # where the merged value is written
    assert res.value("natsmq.server.port") == "4223"
    assert res.value("natsmq.server.storeDir") == "/data/nats"
    assert res.value("rocksmq.path") == "/first"  # the earlier merged mapping wins
    assert res.value("rocksmq.retentionSizeInMB") == "20"  # a key written in the mapping wins
    assert not [f for f in validate(res) if f.code == "MQ120"]


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


def test_placeholder_under_an_ordinary_key_stays_readable(tmp_path):
    path = write(tmp_path, "natsmq:\n  server:\n    port: ${NATS_PORT:-4222}\nrocksmq:\n  path: /var/lib/milvus/rdb\n")
    res = resolve([path])
    assert res.effective_mq == "rocksmq" and res.value("natsmq.server.port") == "${NATS_PORT:-4222}"
    found = {f.code: f for f in validate(res)}
    assert found["MQ163"].key == "natsmq.server.port" and found["MQ163"].line == 3
    assert "MQ164" not in found


def test_control_character_is_one_line_at_its_position(tmp_path):
    path = write(tmp_path, "mq:\n  type: nats\x00mq\n")
    with pytest.raises(InputError) as refused:
        load_document(path)
    assert refused.value.location == f"{path}:2:13"
    assert refused.value.message == "invalid YAML: character #x0000 is not allowed in YAML"


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
