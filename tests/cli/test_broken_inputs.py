"""Hostile-input probe: every reading command, on every class of broken input we could think of, ends in a
documented exit code with one line, no traceback, no "internal error", in bounded time."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mqctl.config.read.parse import MAX_INPUT_BYTES
from tests.helpers.paths import SAMPLES

STOCK = (SAMPLES / "milvus-2.3-standalone-natsmq.yaml").read_text()
CR = (SAMPLES / "operator-cr-natsmq.yaml").read_text()
HELM = (SAMPLES / "helm-values-natsmq.yaml").read_text()
LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{b}: &{b} [" + ", ".join([f"*{a}"] * 9) + "]\n" for a, b in zip("abcdefgh", "bcdefghi")
)
SECRET = "S3cr3tValue"  # under secret keys in some cases: never printed
GARBAGE = bytes(random.Random(7).randrange(256) for _ in range(4096))

TEXTS: dict[str, bytes | str] = {
    "binary garbage": GARBAGE,
    "NUL bytes": "mq:\n  type: nats\x00mq\n",
    "NUL in a key": "m\x00q:\n  type: natsmq\n",
    "invalid UTF-8": b"mq:\n  type: \xff\xfe natsmq\n",
    "UTF-16 with BOM": "mq:\n  type: natsmq\n".encode("utf-16"),
    "BOM": "\ufeffmq:\n  type: natsmq\n",
    "BOM in the middle": "mq:\n\ufeff  type: natsmq\n",
    "control characters": "mq:\n  type: \x1b[31mnatsmq\x07\n",
    "empty file": "",
    "whitespace only": "  \n\t\n",
    "comments only": "# nothing\n# here\n",
    "CR line endings": "mq:\r  type: natsmq\r",
    "CRLF": "mq:\r\n  type: natsmq\r\n",
    "tabs as indentation": "mq:\n\ttype: natsmq\n",
    "tab after key": "mq:\n  type:\tnatsmq\n",
    "duplicate keys": "mq:\n  type: rocksmq\n  type: natsmq\nmq:\n  type: kafka\n",
    "duplicate sections with merge": "a: &a {type: natsmq}\nmq:\n  <<: *a\n  <<: {type: kafka}\n",
    "multi-document": "---\nmq:\n  type: natsmq\n---\nmq:\n  type: kafka\n...\n",
    "multi-document, empty first": "---\n---\nmq:\n  type: natsmq\n",
    "multi-document, scalar first": "--- hello\n---\nmq:\n  type: natsmq\n",
    "scalar root": "just a string\n",
    "number root": "42\n",
    "list root": "- mq\n- natsmq\n",
    "null root": "~\n",
    "mq is a list": "mq: [natsmq]\n",
    "mq is a scalar": "mq: natsmq\n",
    "mq is null": "mq: null\n",
    "mq.type is a list": "mq:\n  type: [natsmq, kafka]\n",
    "mq.type is a mapping": "mq:\n  type: {natsmq: true}\n",
    "mq.type is empty quoted": "mq:\n  type: ''\n",
    "port is a list": "mq: {type: natsmq}\nnatsmq:\n  server:\n    port: [4222]\n    storeDir: [/a, /b]\n",
    "huge integers": "mq: {type: natsmq}\nnatsmq:\n  server:\n    port: 99999999999999999999999999\n"
    "    maxPayload: 1e400\n    retention: {maxAge: -0x8000000000000000000}\n",
    "complex keys": "? [mq, type]\n: natsmq\n? {a: 1}\n: b\n",
    "non-string keys": "1: a\ntrue: b\n~: c\n2024-01-01: d\nmq:\n  1.5: x\n  null: y\n",
    "tags": "mq: !!map {type: !!str natsmq}\nx: !!binary aGVsbG8=\ny: !custom z\nz: !!python/object:os.system ls\n",
    "bad tag handle": "mq: !x!y natsmq\n",
    "merge of a scalar": "mq:\n  <<: 5\n  type: natsmq\n",
    "merge of a list of scalars": "mq:\n  <<: [1, 2]\n",
    "undefined alias": "mq:\n  type: *nats\n",
    "recursive alias": "a: &a [*a]\n",
    "recursive merge": "a: &a\n  <<: *a\n",
    "alias bomb": LAUGHS,
    "deep flow nesting": "a: " + "[" * 20_000 + "]" * 20_000 + "\n",
    "deep flow mappings": "a: " + "{a: " * 5_000 + "1" + "}" * 5_000 + "\n",
    "deep block nesting": "".join(" " * i + f"k{i}:\n" for i in range(1500)) + " " * 1500 + "v\n",
    "deep block sequence": "- " * 5_000 + "x\n",
    "unclosed quote": 'mq:\n  type: "natsmq\n',
    "unclosed flow": "mq: {type: natsmq\n",
    "huge scalar, just below the size limit": "mq:\n  type: " + "n" * (MAX_INPUT_BYTES - 100) + "\n",
    "huge key": "x" * 200_000 + ": 1\nmq: {type: natsmq}\n",
    "many keys": "".join(f"k{i}: {i}\n" for i in range(100_000)),
    "long list": "natsmq:\n  server:\n    storeDir: [" + ", ".join(["a"] * 200_000) + "]\n",
    "over the size limit": "mq:\n  type: natsmq\n#" + "x" * (MAX_INPUT_BYTES + 10) + "\n",
    "template placeholders": "mq:\n  type: {{ .Values.mq }}\n",
    "helm template": "{{- if .Values.x }}\nmq:\n  type: natsmq\n{{- end }}\n",
    "docker-compose": "services:\n  milvus:\n    image: milvusdb/milvus\n",
    "Kubernetes Deployment": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: m}\n",
    "Kubernetes List": "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n",
    "kind without apiVersion": "kind: Milvus\nspec: {}\n",
    "ConfigMap, no Milvus file": "apiVersion: v1\nkind: ConfigMap\ndata: {app.yaml: 'a: b'}\n",
    "ConfigMap, broken user.yaml": "apiVersion: v1\nkind: ConfigMap\ndata:\n  user.yaml: |\n    mq: [\n",
    "ConfigMap, user.yaml a mapping": "apiVersion: v1\nkind: ConfigMap\ndata:\n  user.yaml: {mq: {type: natsmq}}\n",
    "ConfigMap, bomb inside": "apiVersion: v1\nkind: ConfigMap\ndata:\n  user.yaml: |\n"
    + "".join("    " + line + "\n" for line in LAUGHS.splitlines()),
    "CR, spec a list": "apiVersion: milvus.io/v1beta1\nkind: Milvus\nspec: [1, 2]\n",
    "CR, msgStreamType a list": "apiVersion: milvus.io/v1beta1\nkind: Milvus\nspec:\n  dependencies:\n"
    "    msgStreamType: [natsmq]\n  config: 5\n",
    "CR, image a mapping": "apiVersion: milvus.io/v1beta1\nkind: Milvus\nspec:\n  components:\n    image: {a: 1}\n",
    "Helm, toggles odd": "cluster: {enabled: [true]}\npulsar: {enabled: {x: 1}}\nstandalone: {messageQueue: [kafka]}\n"
    "image: {all: {tag: [v2]}}\n",
    "Helm, user.yaml a number": "cluster: {enabled: false}\nextraConfigFiles:\n  user.yaml: 5\n",
    "Helm, user.yaml broken": "cluster: {enabled: false}\nextraConfigFiles:\n  user.yaml: |\n    mq: {\n",
    "Helm, user.yaml a list": "cluster: {enabled: false}\nextraConfigFiles:\n  user.yaml: |\n    - a\n",
    "stock milvus.yaml": STOCK,
    "stock file truncated": STOCK[: len(STOCK) // 2 + 7],
    "operator CR truncated": CR[: len(CR) // 2 + 3],
    "Helm values truncated": HELM[: len(HELM) // 2 + 5],
    "emoji and right-to-left": "mq:\n  type: \u202enatsmq\U0001f600\n\u05d0: \u05d1\n",
    "surrogate escape": 'mq:\n  type: "\\ud800"\n',
    "secret as a template default": f"minio:\n  secretAccessKey: ${{KEY:-{SECRET}}}\n",
    "secret as an undefined alias": f"pulsar:\n  authParams: *{SECRET}\n",
    "secret in a flow mapping alias": f"minio: {{accessKeyID: a, secretAccessKey: *{SECRET}}}\n",
    "secret under a reused anchor": f"minio:\n  secretAccessKey: &k {SECRET}\n  b: &k natsmq\nmq: {{type: *k}}\n",
    "secret before a control character": f"kafka:\n  saslPassword: {SECRET}\x07\n",
    "secret before bad syntax": f"kafka: {{saslPassword: {SECRET}, ]\n",
    "secret as a tag": f"natsmq:\n  server:\n    password: !{SECRET} x\n",
    "secret under mq": f"mq:\n  type: natsmq\n  password: {SECRET}\n  token: [{SECRET}]\n",
    "secret in a Kubernetes Secret": f"apiVersion: v1\nkind: Secret\nstringData: {{password: {SECRET}}}\n",
}
SPECIAL = (
    "directory",
    "FIFO without writer",
    "symlink loop",
    "dangling symlink",
    "permission denied",
    "character device",
    "missing file",
)
CASES = sorted(TEXTS) + list(SPECIAL)
COMMANDS = {
    "explain": ("config", "explain"),
    "validate": ("config", "validate"),
    "get": ("config", "get"),
    "plan": ("migrate", "plan", "--to", "natsmq", "--milvus", "http://127.0.0.1:1", "--config"),
}
FULL = os.environ.get("MQCTL_PROBE") == "full"  # every command on every class; else one command per class, in turn
TIME_LIMIT = 60  # seconds for the four runs side by side; the largest input takes ~3 s to parse, more on a busy machine


def hostile_path(case: str, folder: Path) -> Path:
    """A path that holds (or is) the hostile input `case`."""
    path = folder / "milvus.yaml"
    if case in TEXTS:
        data = TEXTS[case]
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    elif case == "directory":
        path.mkdir()
    elif case == "FIFO without writer":
        os.mkfifo(path)
    elif case == "symlink loop":
        path.symlink_to(folder / "other.yaml")
        (folder / "other.yaml").symlink_to(path)
    elif case == "dangling symlink":
        path.symlink_to(folder / "gone.yaml")
    elif case == "permission denied":
        path.write_text("mq:\n  type: natsmq\n")
        path.chmod(0)
    elif case == "character device":
        return Path("/dev/zero")
    return path


def without_read_override() -> list[str]:
    """As root, files are readable whatever their mode: drop that capability for the run."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        return []
    caps = "-dac_override,-dac_read_search"
    return ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}"]


def commands_for(case: str) -> list[str]:
    """All four commands with MQCTL_PROBE=full; else one, in turn, so each class and each command is run."""
    names = list(COMMANDS)
    return names if FULL else [names[CASES.index(case) % len(names)]]


@pytest.mark.parametrize("case", CASES)
def test_hostile_input(tmp_path, case):
    """The reading commands (see `commands_for`) run side by side on the same input; each must end well."""
    path = hostile_path(case, tmp_path)
    prefix = without_read_override() if case == "permission denied" else []
    started = time.monotonic()
    runs = {
        command: subprocess.Popen(
            [*prefix, sys.executable, "-m", "mqctl", *COMMANDS[command], str(path)]
            + (["mq.type"] if command == "get" else []),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
        )
        for command in commands_for(case)
    }
    for command, run in runs.items():
        try:
            stdout, stderr = run.communicate(timeout=max(1.0, TIME_LIMIT - (time.monotonic() - started)))
        except subprocess.TimeoutExpired:
            for other in runs.values():
                other.kill()
            pytest.fail(f"{case}: {command} still runs after {TIME_LIMIT} s")
        output = stdout + stderr
        assert run.returncode in (0, 1, 2, 3), f"{command}: {output[-2000:]}"
        assert "Traceback" not in output and "internal error" not in output, f"{command}: {output[-2000:]}"
        assert SECRET not in output, f"{command}: {output[-2000:]}"
        if stderr.startswith("error:"):
            assert stderr.strip().count("\n") == 0, f"{command}: {stderr}"  # one line (click's usage has more)
