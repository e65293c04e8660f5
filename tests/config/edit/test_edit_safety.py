"""Edits that must never damage a config, through the edit functions: random edits of real configs and of
corpus-like shapes change only the intended key (hypothesis), parallel sets lose nothing, a file changed since it
was read is not overwritten (the same through `mqctl config set/unset/switch`: tests/cli/config/test_edit_safety.py)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mqctl.config.edit.set_unset import plan_set, plan_unset
from mqctl.errors import InputError, PreconditionError
from tests.helpers.files import backups, safe_load
from tests.helpers.paths import CORPUS, SAMPLES

# The property tests need hypothesis (the test extra); without it this module is skipped.
hypothesis = pytest.importorskip("hypothesis")
HealthCheck, assume, event, given, settings = (
    hypothesis.HealthCheck,
    hypothesis.assume,
    hypothesis.event,
    hypothesis.given,
    hypothesis.settings,
)


st = hypothesis.strategies
STOCK_23 = SAMPLES / "milvus-2.3-standalone-natsmq.yaml"
PROPERTY = settings(
    deadline=None, max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


def set_in(tree, parts, value):
    for part in parts[:-1]:
        if not isinstance(tree.get(part), dict):
            tree[part] = {}
        tree = tree[part]
    tree[parts[-1]] = value


def unset_in(tree, parts):
    """Remove a key; a mapping left without keys reads as empty (null), as `key:` does."""
    parents = [tree]
    for part in parts[:-1]:
        parents.append(parents[-1][part])
    del parents[-1][parts[-1]]
    for depth in range(len(parts) - 1, 0, -1):
        if parents[depth] == {}:
            parents[depth - 1][parts[depth - 1]] = None


def leaf_paths(tree, prefix=()):
    for key, value in tree.items():
        if not isinstance(key, str):
            continue
        if isinstance(value, dict) and value:
            yield from leaf_paths(value, prefix + (key,))
        else:
            yield prefix + (key,)


def check_edit(path: Path, parts: tuple, value: str | None, *, kind: str | None = None) -> str:
    """Run one edit through plan + commit; either only the intended key changed (read independently), or the
    edit was refused before anything was written. Returns 'done' or the refusal's class name."""
    before_bytes = path.read_bytes()
    before = safe_load(before_bytes.decode("utf-8-sig"))
    key = ".".join(parts)
    try:
        plan = plan_set(path, key, value, kind=kind) if value is not None else plan_unset(path, key, kind=kind)
        plan.commit()
    except (InputError, PreconditionError) as err:
        assert path.read_bytes() == before_bytes and not backups(path.parent)
        return type(err).__name__ + ": " + err.message
    after = safe_load(path.read_bytes().decode("utf-8-sig"))
    expected = before
    if value is None:
        unset_in(expected, list(parts))
    else:
        got = after_value(after, parts)
        assert got == [int(value)] if isinstance(value_at(before, parts), list) else str(got) == value  # [a, b] lists
        set_in(expected, list(parts), got)
    assert after == (expected or None)  # a document without keys reads as nothing
    for backup in backups(path.parent):
        backup.unlink()
    return "done"


def after_value(tree, parts):
    for part in parts:
        tree = tree[part]
    return tree


def value_at(tree, parts):
    """The value at a path, None when it is not there."""
    for part in parts:
        if not isinstance(tree, dict) or part not in tree:
            return None
        tree = tree[part]
    return tree


SAMPLE_FILES = sorted(p for p in SAMPLES.glob("*.yaml") if "broken" not in p.name)
CORPUS_FILES = sorted(CORPUS.glob("*/*.yaml")) if CORPUS.is_dir() else []
ADDRESSABLE = r"^[A-Za-z0-9_][A-Za-z0-9_/-]*$"


@pytest.mark.extra
@PROPERTY
@given(data=st.data())
def test_random_edits_of_real_configs_change_only_the_intended_key(tmp_path, data):
    import re

    source = data.draw(st.sampled_from(SAMPLE_FILES + CORPUS_FILES))
    path = Path(tempfile.mkdtemp(dir=tmp_path)) / source.name  # one folder per example: its own backups
    shutil.copy(source, path)
    try:
        tree = safe_load(path.read_text(encoding="utf-8-sig"))
    except Exception:
        assume(False)
    assume(isinstance(tree, dict))
    helm = "helm" in str(source)
    paths = [
        p
        for p in leaf_paths(tree)
        if all(re.match(ADDRESSABLE, part) for part in p)
        and not (helm and p[0] in ("mq", "natsmq", "rocksmq", "extraConfigFiles"))
        and not ("operator" in str(source) and p[0] not in ("apiVersion", "kind", "metadata", "spec"))
    ]
    assume(paths)
    empty = [p for p in paths if after_value(tree, p) is None]  # `key:`: where splices went wrong
    parts = data.draw(st.sampled_from(empty if empty and data.draw(st.booleans()) else paths))
    if data.draw(st.booleans()):
        parts = (
            parts[:-1]
            + (data.draw(st.sampled_from(["newKey", "port", "x_1"])),)
            + (("deeper",) if data.draw(st.booleans()) else ())
        )
    assume(not (helm and parts[0] in ("mq", "natsmq", "rocksmq")))  # these go into user.yaml
    assume(not ("operator" in str(source) and parts[0] not in ("apiVersion", "kind", "metadata", "spec")))
    value = data.draw(st.one_of(st.none(), st.integers(0, 10**6).map(str)))
    if value is None and parts not in paths:
        value = "7"
    outcome = check_edit(path, parts, value)
    event(outcome.split(":")[0])
    assert "would not read back" not in outcome or "&" in source.read_text(), outcome


NAMES = st.sampled_from(["port", "path", "maxAge", "size", "level", "name", "x1", "deep", "empty", "last"])
SECTIONS = st.sampled_from(["rocksmq", "natsmq", "rootCoord", "proxy", "custom", "dataNode", "common"])
VALUE_TEXTS = {
    "empty": "",
    "empty_comment": " # nothing here, Milvus default",
    "quoted": " 'text value'",
    "flow_map": " {a: 1, b: two}",
    "flow_list": " [1, 2]",
    "comment_after": " 3 # three",
}


def draw_mapping(data, depth: int, indent: int, step: int, anchors: list[str]) -> list[str]:
    """Lines of a block mapping in the shapes found in real configs."""
    lines = []
    for name in data.draw(st.lists(NAMES, min_size=1, max_size=4, unique=True)):
        pad = " " * indent
        if data.draw(st.integers(0, 5)) == 0:
            lines.append(pad + "# a comment line")
        if data.draw(st.integers(0, 5)) == 0:
            lines.append("")
        shape = data.draw(st.sampled_from([*VALUE_TEXTS, "int", "anchor", "alias", "nested"]))
        if shape == "nested" and depth < 2:
            lines.append(f"{pad}{name}:")
            lines += draw_mapping(data, depth + 1, indent + step, step, anchors)
        elif shape in VALUE_TEXTS:
            lines.append(f"{pad}{name}:{VALUE_TEXTS[shape]}")
        elif shape == "anchor":
            anchors.append(f"a{len(anchors)}")
            lines.append(f"{pad}{name}: &{anchors[-1]} 5")
        elif shape == "alias" and anchors:
            lines.append(f"{pad}{name}: *{data.draw(st.sampled_from(anchors))}")
        else:
            lines.append(f"{pad}{name}: {data.draw(st.integers(0, 99))}")
    return lines


@pytest.mark.extra
@PROPERTY
@given(data=st.data(), step=st.sampled_from([2, 4]), crlf=st.booleans(), final_newline=st.booleans())
def test_random_edits_of_corpus_like_shapes_change_only_the_intended_key(tmp_path, data, step, crlf, final_newline):
    anchors: list[str] = []
    lines = ["# generated config"]
    for section in data.draw(st.lists(SECTIONS, min_size=1, max_size=4, unique=True)):
        if data.draw(st.booleans()):
            lines += ["", f"# {section} settings"]
        lines.append(f"{section}:")
        lines += draw_mapping(data, 1, step, step, anchors)
    newline = "\r\n" if crlf else "\n"
    text = newline.join(lines) + (newline if final_newline else "")
    path = Path(tempfile.mkdtemp(dir=tmp_path)) / "milvus.yaml"
    path.write_bytes(text.encode())
    tree = safe_load(text)
    paths = list(leaf_paths(tree))
    for _ in range(data.draw(st.integers(1, 3))):
        parts = data.draw(st.sampled_from(paths))
        if data.draw(st.booleans()):  # a new key under an empty value, else beside the chosen one
            parts = (parts if value_at(tree, parts) is None else parts[:-1]) + (data.draw(NAMES),)
        value = data.draw(st.one_of(st.none(), st.integers(0, 10**6).map(str)))
        if value is None and parts not in paths:
            value = "7"
        outcome = check_edit(path, parts, value)
        event(outcome.split(":")[0])
        assert "would not read back" not in outcome or anchors, f"{outcome}\n{path.read_text()}"
        tree = safe_load(path.read_bytes().decode())
        paths = list(leaf_paths(tree)) if isinstance(tree, dict) else []
        if not paths:
            break
    if crlf:
        assert "\n" not in path.read_bytes().decode().replace("\r\n", "")


def mqctl_process(*args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "mqctl", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
    )


def test_parallel_sets_of_one_file_lose_nothing(tmp_path):
    path = tmp_path / "milvus.yaml"
    for round_ in range(20):
        shutil.copy(STOCK_23, path)
        edits = [
            ("natsmq.server.retention.maxAge", str(1000 + round_)),
            ("rocksmq.retentionSizeInMB", str(2000 + round_)),
        ]
        procs = [mqctl_process("config", "set", str(path), key, value, "--yes") for key, value in edits]
        results = [(proc.wait(timeout=120), *proc.communicate()) for proc in procs]
        after = safe_load(path.read_text())
        for (key, value), (code, out, err) in zip(edits, results, strict=True):
            got = after_value(after, key.split("."))
            if code == 0:
                assert str(got) == value, f"round {round_}: {key} was reported written but is {got!r}"
            else:
                assert code == 3 and "Wrote" not in out and str(got) != value, err
        for backup in backups(tmp_path):
            backup.unlink()


def test_a_file_changed_since_it_was_read_is_not_overwritten(tmp_path):
    path = tmp_path / "milvus.yaml"
    shutil.copy(STOCK_23, path)
    plan = plan_set(path, "natsmq.server.port", "4333")
    path.write_text(path.read_text().replace("maxAge: 4320", "maxAge: 60"))  # another writer, e.g. an editor
    with pytest.raises(PreconditionError, match="changed while the edit was prepared"):
        plan.commit()
    assert "maxAge: 60" in path.read_text() and "port: 4333" not in path.read_text()


def unprivileged(*args: str) -> list[str]:
    """A root that may not override file permissions (as any other user), for a real permission error."""
    if os.geteuid() != 0:
        return list(args)
    if not shutil.which("setpriv"):
        pytest.skip("setpriv is needed to drop root's permission override")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", *args]


EDITS = [
    ("set", "natsmq.server.port", "4333"),
    ("unset", "natsmq.server.port"),
    ("switch", "--to", "rocksmq", "--milvus-version", "2.3.5"),
]


@pytest.mark.parametrize("command", EDITS)
@pytest.mark.parametrize("lock_exists", [False, True])
def test_edit_in_a_folder_it_may_not_write_is_one_line_exit_3(tmp_path, command, lock_exists):
    folder = tmp_path / "configs"
    folder.mkdir()
    path = folder / "milvus.yaml"
    shutil.copy(STOCK_23, path)
    if lock_exists:  # the folder was writable once: the lock opens, the backup fails
        (folder / ".milvus.yaml.mqctl.lock").touch()
    before = sorted(p.name for p in folder.iterdir())
    folder.chmod(0o555)
    try:
        proc = subprocess.run(
            unprivileged(sys.executable, "-m", "mqctl", "config", command[0], str(path), *command[1:], "--yes"),
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "NO_COLOR": "1"},
        )
    finally:
        folder.chmod(0o755)
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith("error: ") and "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert "may not write in" in lines[-1] and "Wrote" not in proc.stdout
    assert path.read_bytes() == STOCK_23.read_bytes() and sorted(p.name for p in folder.iterdir()) == before


def test_edit_on_a_read_only_mount_is_one_line_exit_3(tmp_path):
    folder = tmp_path / "configs"
    folder.mkdir()
    path = folder / "milvus.yaml"
    shutil.copy(STOCK_23, path)
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("a private read-only bind mount needs root and unshare")
    script = (
        f"mount --bind {shlex.quote(str(folder))} {shlex.quote(str(folder))} && "
        f"mount -o remount,ro,bind {shlex.quote(str(folder))} && "
        f"{shlex.quote(sys.executable)} -m mqctl config set {shlex.quote(str(path))} natsmq.server.port 4333 --yes"
    )
    proc = subprocess.run(
        ["unshare", "-m", "sh", "-c", script],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "NO_COLOR": "1"},
    )
    if "mount:" in proc.stderr:
        pytest.skip(f"no mount namespace here: {proc.stderr.strip()}")
    assert proc.returncode == 3, proc.stderr
    assert "read-only file system" in proc.stderr and "Traceback" not in proc.stderr
    assert path.read_bytes() == STOCK_23.read_bytes() and [p.name for p in folder.iterdir()] == ["milvus.yaml"]
