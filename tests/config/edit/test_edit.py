"""Byte-exact edits: set/unset/switch change only what they must, on every kind and format."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from mqctl.config.edit.set_unset import plan_set, plan_switch, plan_unset, set_key, switch, unset_key
from mqctl.config.resolve.resolution import resolve
from mqctl.errors import InputError, PreconditionError
from tests.helpers.files import write_yaml as write
from tests.helpers.paths import CORPUS, SAMPLES, require_corpus

# The property tests need hypothesis (the test extra); without it this module is skipped.
hypothesis = pytest.importorskip("hypothesis")
HealthCheck, given, settings = hypothesis.HealthCheck, hypothesis.given, hypothesis.settings
st = hypothesis.strategies

PROPERTY = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    import difflib

    removed, added = [], []
    for line in difflib.ndiff(before.splitlines(), after.splitlines()):
        if line.startswith("- "):
            removed.append(line[2:])
        elif line.startswith("+ "):
            added.append(line[2:])
    return removed, added


def test_set_replaces_only_the_scalar_keeping_comment(tmp_path):
    path = write(
        tmp_path,
        """\
        natsmq:
          server: # server side
            port: 4222 # listening port
            storeDir: '/var/lib/milvus/nats'
        """,
    )
    before = path.read_text()
    result = set_key(path, "natsmq.server.port", "4333")
    assert result.changed and result.backup is not None and result.backup.read_text() == before
    assert path.read_text() == before.replace("port: 4222 #", "port: 4333 #")
    set_key(path, "natsmq.server.storeDir", "/srv/nats")
    assert "storeDir: '/srv/nats'" in path.read_text()  # quoting style kept


def test_set_creates_missing_parents_with_sibling_indentation(tmp_path):
    path = write(
        tmp_path,
        """\
        mq:
            type: default
        rocksmq:
            path: /var/lib/milvus/rdb_data
        """,
    )
    set_key(path, "natsmq.server.retention.maxAge", "0")
    assert path.read_text().endswith(
        "rocksmq:\n    path: /var/lib/milvus/rdb_data\n\nnatsmq:\n    server:\n        retention:\n"
        "            maxAge: 0\n"
    )
    assert resolve([path]).value("natsmq.server.retention.maxAge") == "0"
    set_key(path, "mq.enablePursuitMode", "false")
    assert "mq:\n    type: default\n    enablePursuitMode: false\nrocksmq:" in path.read_text()


def test_set_fills_an_empty_parent_and_empty_value(tmp_path):
    path = write(tmp_path, "mq: # the MQ\nnatsmq:\n  server:\n    retention:\n      maxBytes: # none\n")
    set_key(path, "mq.type", "natsmq")
    set_key(path, "natsmq.server.retention.maxBytes", "1GB")
    assert path.read_text() == (
        "mq: # the MQ\n  type: natsmq\nnatsmq:\n  server:\n    retention:\n      maxBytes: 1073741824 # none\n"
    )


def test_crlf_bom_and_missing_final_newline_are_kept(tmp_path):
    path = tmp_path / "milvus.yaml"
    original = b"\xef\xbb\xbf# top\r\nmq:\r\n  type: default\r\nrocksmq:\r\n  path: /data/rdb"
    path.write_bytes(original)
    set_key(path, "mq.type", "rocksmq")
    set_key(path, "rocksmq.retentionSizeInMB", "1024")
    assert path.read_bytes() == (
        b"\xef\xbb\xbf# top\r\nmq:\r\n  type: rocksmq\r\nrocksmq:\r\n  path: /data/rdb\r\n  retentionSizeInMB: 1024"
    )
    unset_key(path, "rocksmq.retentionSizeInMB")
    assert path.read_bytes() == original.replace(b"type: default", b"type: rocksmq")


def test_unset_removes_whole_key_and_is_noop_when_absent(tmp_path):
    path = write(
        tmp_path,
        """\
        natsmq:
          server:
            port: 4222
            monitor:
              trace: false
              debug: false
            storeDir: /x
        """,
    )
    unset_key(path, "natsmq.server.monitor")
    assert path.read_text() == "natsmq:\n  server:\n    port: 4222\n    storeDir: /x\n"
    result = unset_key(path, "natsmq.server.nothing")
    assert not result.changed and result.backup is None


def test_typed_values_are_checked(tmp_path):
    path = write(tmp_path, "natsmq:\n  server:\n    port: 4222\n")
    for key, value, message in [
        ("natsmq.server.port", "fast", "must be an integer"),
        ("natsmq.server.monitor.trace", "maybe", "true or false"),
        ("natsmq.server.maxPayload", "8 parsecs", "size in bytes"),
        ("mq.type", "natmq", "did you mean 'natsmq'"),
        ("natsmq.server.storeDir", "", "non-empty path"),
    ]:
        with pytest.raises(InputError) as caught:
            set_key(path, key, value)
        assert message in caught.value.one_line()
    assert path.read_text() == "natsmq:\n  server:\n    port: 4222\n"
    assert not list(tmp_path.glob("*.bak"))
    with pytest.raises(InputError, match="is a section"):
        set_key(path, "natsmq.server", "1")
    with pytest.raises(InputError, match="holds a value"):
        set_key(path, "natsmq.server.port.x", "1")


def test_write_is_atomic_keeps_mode_and_leaves_no_temp_files(tmp_path):
    path = write(tmp_path, "mq:\n  type: default\n")
    os.chmod(path, 0o640)
    result = set_key(path, "mq.type", "rocksmq")
    assert result.backup is not None
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["milvus.yaml", result.backup.name, ".milvus.yaml.mqctl.lock"]
    )
    assert result.backup.name.startswith("milvus.yaml.") and result.backup.name.endswith("Z.bak")


def test_dry_run_writes_nothing(tmp_path):
    path = write(tmp_path, "mq:\n  type: default\n")
    result = set_key(path, "mq.type", "pulsar", dry_run=True)
    assert result.changed and "+  type: pulsar" in result.diff and result.backup is None
    assert path.read_text() == "mq:\n  type: default\n"


def test_switch_23_rocksmq_gives_the_natsmq_sample(tmp_path):
    path = tmp_path / "milvus.yaml"
    path.write_bytes((SAMPLES / "milvus-2.3-standalone-rocksmq.yaml").read_bytes())
    before = path.read_text()
    switch(path, "natsmq", milvus_version="2.3.5")
    expected = (SAMPLES / "milvus-2.3-standalone-natsmq.yaml").read_text().splitlines()[3:]
    assert path.read_text().splitlines()[3:] == expected
    assert changed_lines(before, path.read_text()) == (["  type: default"], ["  type: natsmq"])  # stock has natsmq
    res = resolve([path], milvus_version="2.3.5")
    assert res.effective_mq == "natsmq" and res.origin("natsmq.server.storeDir").source == "yaml"


def test_switch_sets_explicit_options_and_refuses_invalid_targets(tmp_path):
    path = tmp_path / "user.yaml"
    path.write_bytes((SAMPLES / "user-2.5-standalone-natsmq.yaml").read_bytes())
    result = switch(path, "rocksmq", store_dir="/srv/rdb", dry_run=True)
    assert "+  type: rocksmq" in result.diff and "+  path: /srv/rdb" in result.diff
    with pytest.raises(PreconditionError, match=r"removed in Milvus 2\.6"):
        plan_switch(path, "natsmq", milvus_version="2.6.0")
    with pytest.raises(PreconditionError, match="cluster mode"):
        plan_switch(path, "rocksmq", mode="cluster")
    with pytest.raises(PreconditionError, match=r"needs Milvus 2\.6"):
        plan_switch(path, "woodpecker", milvus_version="2.5.0")
    with pytest.raises(InputError) as caught:
        plan_switch(path, "kafak")
    assert "did you mean 'kafka'" in caught.value.one_line()
    with pytest.raises(InputError, match="--port applies"):
        plan_switch(path, "kafka", port=1)


def test_operator_cr_switch_and_spec_config_keys(tmp_path):
    path = tmp_path / "cr.yaml"
    path.write_bytes((SAMPLES / "operator-cr-natsmq.yaml").read_bytes())
    before = path.read_text()
    switch(path, "rocksmq", store_dir="/var/lib/milvus/rdb")
    removed, added = changed_lines(before, path.read_text())
    assert removed == ["    msgStreamType: natsmq"]
    assert (
        added[0] == "    msgStreamType: rocksmq"
        and "    rocksmq:" in added
        and "      path: /var/lib/milvus/rdb" in added
    )
    assert resolve([path]).effective_mq == "rocksmq"
    set_key(path, "natsmq.server.port", "4333")  # a Milvus key goes to spec.config
    assert "        port: 4333\n" in path.read_text()
    set_key(path, "spec.mode", "standalone")  # a document path is used as is
    with pytest.raises(InputError, match="must be one of"):
        set_key(path, "spec.dependencies.msgStreamType", "nats")


def test_helm_switch_and_embedded_user_yaml(tmp_path):
    path = tmp_path / "values.yaml"
    path.write_bytes((SAMPLES / "helm-values-natsmq.yaml").read_bytes())
    before = path.read_text()
    set_key(path, "natsmq.server.port", "4333")
    removed, added = changed_lines(before, path.read_text())
    assert (removed, added) == (["        port: 4222"], ["        port: 4333"])
    switch(path, "rocksmq")
    res = resolve([path])
    assert res.effective_mq == "rocksmq"
    assert "  messageQueue: rocksmq\n" in path.read_text()
    bare = write(tmp_path, "cluster:\n  enabled: false\n", "bare.yaml")
    set_key(bare, "mq.type", "natsmq")
    assert (
        bare.read_text()
        == "cluster:\n  enabled: false\n\nextraConfigFiles:\n  user.yaml: |\n    mq:\n      type: natsmq\n"
    )
    assert resolve([bare]).effective_mq == "natsmq"


def test_cluster_helm_switch_turns_toggles(tmp_path):
    path = write(
        tmp_path, "cluster:\n  enabled: true\npulsarv3:\n  enabled: true\nkafka:\n  enabled: false\n", "values.yaml"
    )
    switch(path, "kafka")
    assert path.read_text() == "cluster:\n  enabled: true\npulsarv3:\n  enabled: false\nkafka:\n  enabled: true\n"
    assert resolve([path]).effective_mq == "kafka"


def test_standalone_helm_switch_deploys_what_messagequeue_names(tmp_path):
    from mqctl.config.rules.report import validate

    path = tmp_path / "values.yaml"
    path.write_bytes((SAMPLES / "helm-values-natsmq.yaml").read_bytes())
    switch(path, "pulsar")
    assert "  messageQueue: pulsar\n" in path.read_text() and "pulsarv3:\n  enabled: true\n" in path.read_text()
    assert not [f for f in validate(resolve([path])) if f.severity == "error"]
    switch(path, "natsmq")  # back to an embedded MQ: the chart's Pulsar is turned off again
    assert "pulsarv3:\n  enabled: false\n" in path.read_text()
    assert not [f for f in validate(resolve([path])) if f.code == "MQ140"]


def test_switch_fills_empty_and_null_settings(tmp_path):
    path = write(tmp_path, 'mq:\n  type: rocksmq\nnatsmq:\n  server:\n    storeDir: ""\n    port:\n')
    switch(path, "natsmq")
    text = path.read_text()
    assert 'storeDir: "/var/lib/milvus/nats"\n' in text and "    port: 4222\n" in text
    from mqctl.config.rules.report import validate

    assert not [f for f in validate(resolve([path])) if f.severity == "error"]


def test_anchors_tags_and_aliases_survive_edits(tmp_path):
    path = write(tmp_path, "rocksmq:\n  path: &p /var/lib/rdb\n  other: *p\nnatsmq:\n  server:\n    port: !!str 4222\n")
    with pytest.raises(PreconditionError, match=r"would change rocksmq\.other"):  # the alias would follow
        set_key(path, "rocksmq.path", "/new")
    set_key(path, "natsmq.server.port", "4333")
    assert (
        path.read_text() == "rocksmq:\n  path: &p /var/lib/rdb\n  other: *p\nnatsmq:\n  server:\n    port: !!str 4333\n"
    )
    set_key(path, "rocksmq.other", "/own")  # the alias is replaced, the anchored value stays
    assert "  path: &p /var/lib/rdb\n  other: /own\n" in path.read_text()
    set_key(path, "rocksmq.path", "/new")  # nothing refers to it any more
    assert resolve([path]).value("rocksmq.path") == "/new"
    split = write(tmp_path, "natsmq:\n  server:\n    port: &port\n      4222\n", "split.yaml")
    set_key(split, "natsmq.server.port", "4223")  # the anchor on the line before the value stays too
    assert split.read_text() == "natsmq:\n  server:\n    port: &port\n      4223\n"


# ------------------------------------------------------------------ property test

KEY = st.sampled_from(
    [
        "mq.type",
        "natsmq.server.port",
        "natsmq.server.retention.maxAge",
        "rocksmq.path",
        "rocksmq.retentionSizeInMB",
        "pulsar.address",
        "extra.deep.new.key",
        "quotaAndLimits.enabled",
    ]
)
VALUES = {
    "mq.type": st.sampled_from(["rocksmq", "natsmq", "pulsar", "kafka", "default"]),
    "natsmq.server.port": st.integers(1, 65535).map(str),
    "natsmq.server.retention.maxAge": st.integers(0, 10**6).map(str),
    "rocksmq.path": st.from_regex(r"/[a-z0-9_/]{1,20}", fullmatch=True),
    "rocksmq.retentionSizeInMB": st.integers(1, 10**5).map(str),
    "pulsar.address": st.from_regex(r"[a-z][a-z0-9.-]{0,15}", fullmatch=True),
    "extra.deep.new.key": st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
    "quotaAndLimits.enabled": st.sampled_from(["true", "false"]),
}
BASE = """\
# header comment
mq:
{i}type: default # Valid values: [default, pulsar, kafka, rocksmq, natsmq]

pulsar:
{i}address: "localhost"
{i}port: 6650
rocksmq:
{i}# nested comment
{i}path: /var/lib/milvus/rdb_data
natsmq:
{i}server:
{i}{i}port: 4222
{i}{i}retention:
{i}{i}{i}maxAge: 4320
{i}{i}{i}maxBytes:
tail: [1, 2, 3]"""


@pytest.mark.extra
@settings(PROPERTY, max_examples=60)
@given(
    indent=st.sampled_from(["  ", "    "]),
    crlf=st.booleans(),
    final_newline=st.booleans(),
    edits=st.lists(KEY.flatmap(lambda k: st.tuples(st.just(k), VALUES[k])), min_size=1, max_size=4),
)
def test_random_edits_round_trip_everything_they_do_not_touch(tmp_path, indent, crlf, final_newline, edits):
    newline = "\r\n" if crlf else "\n"
    text = BASE.format(i=indent).replace("\n", newline) + (newline if final_newline else "")
    path = tmp_path / "prop.yaml"
    path.write_bytes(text.encode())
    expected = {}
    for key, value in edits:
        plan = plan_set(path, key, value)
        plan.commit()
        expected[key] = value
    after = path.read_bytes().decode()
    # every original line is still there, in order, untouched, unless it holds an edited key
    edited_leaves = {key.split(".")[-1] for key in expected}
    kept = [line for line in text.split(newline) if line.strip().split(":")[0] not in edited_leaves]
    remaining = iter(after.split(newline))
    assert all(any(line == other for other in remaining) for line in kept)
    assert after.endswith(newline) == final_newline
    assert ("\r\n" in after) == crlf and after.count("\r\n") == after.count("\n") if crlf else "\r" not in after
    res = resolve([path])
    for key, value in expected.items():
        assert res.value(key) == (value or None) or value.strip() == "" or (key == "mq.type" and value == "default")
    for backup in tmp_path.glob("*.bak"):
        backup.unlink()
    # unset restores the exact original bytes for keys that were added
    if "extra.deep.new.key" in expected:
        unset_key(path, "extra")
        assert "extra:" not in path.read_text()


# ------------------------------------------------------------------ corpus


def corpus_yaml() -> list[Path]:
    return sorted((CORPUS / "milvus-yaml").glob("*.yaml")) if (CORPUS / "milvus-yaml").is_dir() else []


@pytest.mark.parametrize("path", corpus_yaml(), ids=lambda p: p.name[:40])
def test_set_on_corpus_changes_exactly_the_intended_lines(path):
    require_corpus()
    try:
        before_res = resolve([path])
    except InputError:
        return  # a clean error (template, compose file) is tested in test_config_resolve
    before = path.read_bytes().decode().lstrip("\ufeff")
    plan = plan_set(path, "natsmq.server.port", "4333")
    removed, added = changed_lines(before, plan.new_text)
    if before_res.yaml_setting("natsmq.server.port") is not None:
        assert len(removed) == 1 and removed[0].replace("4222", "4333", 1) == added[0]
    else:
        assert removed == [] or removed == [before.splitlines()[-1]]  # last line gains its newline only
        assert [line.strip() for line in added if line.strip()][-3:] == ["natsmq:", "server:", "port: 4333"] or added[
            -1
        ].strip() == "port: 4333"
    unset = plan_unset(path, "rocksmq.path")
    removed, added = changed_lines(before, unset.new_text)
    if before_res.yaml_setting("rocksmq.path") is not None:
        assert added == [] and len(removed) == 1 and removed[0].strip().startswith("path:")
    assert path.read_bytes().decode().lstrip("\ufeff") == before  # planning never writes


def test_flow_mappings_values_replace_in_place_but_refuse_new_keys(tmp_path):
    path = write(tmp_path, "mq: {type: natsmq} # inline\n")
    set_key(path, "mq.type", "rocksmq")
    assert path.read_text() == "mq: {type: rocksmq} # inline\n"
    with pytest.raises(InputError, match="flow mapping"):
        set_key(path, "mq.pursuitLag", "5")


def test_multi_document_milvus_yaml_edits_the_first_document(tmp_path):
    path = write(tmp_path, "mq:\n  type: default\n---\nmq:\n  type: kafka\n")
    res = resolve([path])
    assert res.value("mq.type") == "default" and any("reads the first only" in line for line in res.explanation)
    set_key(path, "mq.type", "natsmq")
    assert path.read_text() == "mq:\n  type: natsmq\n---\nmq:\n  type: kafka\n"


# random documents: a nested mapping rendered with random indentation, comments, quoting and blank lines
NAMES = st.sampled_from(["mq", "type", "natsmq", "server", "port", "path", "retention", "maxAge", "a_b", "x1"])
LEAF = st.one_of(st.integers(-5, 10**6).map(str), st.from_regex(r"[a-z/][a-z0-9_/.-]{0,10}", fullmatch=True))
TREE = st.recursive(LEAF, lambda children: st.dictionaries(NAMES, children, min_size=1, max_size=4), max_leaves=12)


def render(tree: dict, indent: int, depth: int, draw_style) -> list[str]:
    lines = []
    for key, value in tree.items():
        pad = " " * (indent * depth)
        if draw_style("blank"):
            lines.append("")
        if draw_style("comment"):
            lines.append(f"{pad}# about {key}")
        if isinstance(value, dict):
            lines.append(f"{pad}{key}:" + (" # section" if draw_style("trail") else ""))
            lines += render(value, indent, depth + 1, draw_style)
        else:
            quoted = f"'{value}'" if draw_style("quote") and not value.lstrip("-").isdigit() else value
            lines.append(f"{pad}{key}: {quoted}" + (" # note" if draw_style("trail") else ""))
    return lines


def leaves(tree: dict, prefix=()):
    for key, value in tree.items():
        if isinstance(value, dict):
            yield from leaves(value, prefix + (key,))
        else:
            yield prefix + (key,), value


@pytest.mark.extra
@settings(PROPERTY, max_examples=80)
@given(
    tree=TREE.filter(lambda t: isinstance(t, dict)),
    indent=st.sampled_from([2, 4]),
    crlf=st.booleans(),
    data=st.data(),
    value=st.integers(0, 99999).map(str),
)
def test_random_documents_change_only_the_edited_line(tmp_path, tree, indent, crlf, data, value):
    styles = data.draw(st.lists(st.booleans(), min_size=200, max_size=200))
    counter = iter(styles)
    lines = render(tree, indent, 0, lambda _: next(counter, False))
    newline = "\r\n" if crlf else "\n"
    text = newline.join(lines) + newline
    path = tmp_path / "doc.yaml"
    path.write_bytes(text.encode())
    existing = list(leaves(tree))
    new_path = data.draw(st.lists(NAMES, min_size=1, max_size=3).map(tuple))
    candidates = [p for p, _ in existing if p != ("mq", "type")]  # mq.type only takes MQ names
    target = data.draw(st.sampled_from(candidates + [("added",) + new_path]))
    plan = plan_set(path, ".".join(target), value)
    before, after = text.split(newline), plan.new_text.split(newline)
    if target in dict(existing):
        assert len(after) == len(before)
        different = [(b, a) for b, a in zip(before, after) if b != a]
        assert len(different) <= 1
        if different:
            old, new = different[0]
            assert old.split(":")[0] == new.split(":")[0] and value in new
    else:
        remaining = iter(after)
        assert all(any(line == other for other in remaining) for line in before)  # only insertions
    if "\r\n" in text:
        assert plan.new_text.count("\n") == plan.new_text.count("\r\n")
    plan.commit()
    assert resolve([path]).value(".".join(target)) == value
    for backup in tmp_path.glob("*.bak"):
        backup.unlink()
