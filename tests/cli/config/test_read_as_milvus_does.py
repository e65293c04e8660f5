"""Values read the way Milvus reads milvus.yaml (gopkg.in/yaml.v2, non-strict) and its overrides: an empty
value is a value, a section written twice keeps only its last block, and numbers take yaml.v2's forms.
Sources: Milvus pkg/config (env_source.go, etcd_source.go, file_source.go), param_item.go getWithRaw,
internal/util/dependency/factory.go, internal/util/streamingutil/util/wal_selector.go (v2.4.23-v2.6.20,
master); the 2.3.5 binary for the empty mq.type (shared facts §10)."""

from __future__ import annotations

import base64

import httpx
import pytest

from tests.helpers.cli import run_cli
from tests.helpers.files import write_yaml

ROCKS = "rocksmq:\n  path: /var/lib/milvus/rdb_data\n"


@pytest.mark.parametrize("written", ["type:", "type: ~", "type: null", 'type: ""'])
@pytest.mark.parametrize(
    ("version", "panic"),
    [
        ("2.3.5", "mq type  is invalid"),
        ("2.5.4", "mq type  is invalid"),
        ("2.6.3", "mq  is not valid"),
    ],
)
def test_an_empty_mq_type_in_the_yaml_panics_like_milvus(tmp_path, written, version, panic):
    config = write_yaml(tmp_path, f"mq:\n  {written}\n{ROCKS}")
    result = run_cli("config", "explain", str(config), "--milvus-version", version, "--json")
    assert result.json()["panic"] == panic and result.json()["effective_mq"] is None
    finding = next(f for f in result.json()["findings"] if f["code"] == "MQ100")
    assert finding["line"] == 2 and "not the default" in finding["hint"]


def test_an_empty_mq_type_variable_hides_the_yaml(tmp_path):
    config = write_yaml(tmp_path, f"mq:\n  type: rocksmq\n{ROCKS}")
    result = run_cli(
        "config", "explain", str(config), "--env", "--milvus-version", "2.3.5", "--json", env={"MQ_TYPE": ""}
    )
    assert result.json()["panic"] == "mq type  is invalid"
    unset = run_cli("config", "explain", str(config), "--env", "--milvus-version", "2.3.5", "--json")
    assert unset.json()["effective_mq"] == "rocksmq"


def test_a_missing_mq_type_is_the_default(tmp_path):
    config = write_yaml(tmp_path, f"mq:\n{ROCKS}")  # `mq:` null: the section, not the key, is written
    result = run_cli("config", "explain", str(config), "--milvus-version", "2.3.5", "--json")
    assert result.json()["effective_mq"] == "rocksmq" and result.json()["mq_type"] == "default"


@pytest.mark.etcd
def test_an_empty_etcd_override_is_a_value(etcd_url, tmp_path):
    def b64(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    httpx.post(f"{etcd_url}/v3/kv/put", json={"key": b64("emptyroot/config/mq/type"), "value": ""}).raise_for_status()
    config = write_yaml(tmp_path, f"mq:\n  type: rocksmq\n{ROCKS}")
    result = run_cli(
        "config", "explain", str(config), "--etcd", etcd_url, "--etcd-root", "emptyroot",
        "--milvus-version", "2.5.4", "--json",
    )  # fmt: skip
    assert result.json()["panic"] == "mq type  is invalid", result.stdout


def test_a_section_written_twice_keeps_only_its_last_block(tmp_path):
    config = write_yaml(
        tmp_path,
        "rocksmq:\n  path: /var/lib/milvus/rdb_data\nmq:\n  type: rocksmq\nrocksmq:\n  retentionTimeInMinutes: 10\n",
    )
    got = run_cli("config", "get", str(config), "rocksmq.path", "--json").json()
    assert not got.get("value")  # the first block's path is not read
    result = run_cli("config", "validate", str(config), "--milvus-version", "2.3.5", "--json")
    finding = next(f for f in result.json()["findings"] if f["code"] == "MQ166")
    assert finding["line"] == 5 and "rocksmq.path" in finding["message"] and "lines 1, 5" in finding["message"]
    assert result.json()["effective_mq"] is None  # rocksmq chosen with an empty path: it fails
    assert result.code == 1


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("010", "8"),
        ("0x10", "16"),
        ("1_000", "1000"),
        ("1e3", "1000"),
        ("+5", "5"),
        ("0o10", "8"),
        ("08", "8"),
        ("1.0", "1"),
        ('"010"', "010"),
        ("9223372036854775808", "9223372036854775808"),
        ("18446744073709551616", "18446744073709552000"),
        ("1e400", "1e400"),
    ],
)
def test_numbers_take_yaml_v2s_forms(tmp_path, written, read):
    config = write_yaml(tmp_path, f"mq:\n  type: natsmq\nnatsmq:\n  server:\n    retention:\n      maxAge: {written}\n")
    got = run_cli("config", "get", str(config), "natsmq.server.retention.maxAge", "--json")
    assert got.json()["value"] == read, got.stdout


def test_a_number_past_int64_reads_as_0_like_atoi(tmp_path):
    config = write_yaml(tmp_path, "mq:\n  type: natsmq\nnatsmq:\n  server:\n    port: 9223372036854775808\n")
    result = run_cli("config", "validate", str(config), "--milvus-version", "2.3.5", "--json")
    assert any(f["key"] == "natsmq.server.port" for f in result.json()["findings"]), result.stdout


@pytest.mark.parametrize(
    ("written", "panic"),
    [
        ('" natsmq "', "mq type  natsmq is invalid"),  # seen on the 2.3.5 binary: redact drops the final space
        ('"natsmq \\n"', "mq type natsmq is invalid"),
        ("RocksMQ", "mq type RocksMQ is invalid"),
    ],
)
def test_a_padded_or_cased_mq_type_panics_as_milvus_prints_it(tmp_path, written, panic):
    config = write_yaml(tmp_path, f"mq:\n  type: {written}\n{ROCKS}")
    result = run_cli("config", "explain", str(config), "--milvus-version", "2.3.5", "--json")
    assert (result.json()["panic"], result.json()["effective_mq"]) == (panic, None)
    finding = next(f for f in result.json()["findings"] if f["code"] == "MQ100")
    assert "lower case and without spaces" in finding["hint"]
    assert f"`{panic}`" in run_cli("config", "explain", str(config), "--milvus-version", "2.3.5").stdout


@pytest.mark.parametrize("first", [True, False])
def test_a_dotted_mq_type_beats_the_mq_section_wherever_it_stands(tmp_path, first):
    """Seen on the 2.3.5 binary: a top-level `mq.type: natsmq` wins over `mq: {type: rocksmq}`, before or after."""
    dotted, section = "mq.type: natsmq\n", f"mq:\n  type: rocksmq\n{ROCKS}"
    config = write_yaml(tmp_path, dotted + section if first else section + dotted)
    result = run_cli("config", "explain", str(config), "--milvus-version", "2.3.5", "--json")
    assert result.json()["effective_mq"] == "natsmq"
    finding = next(f for f in result.json()["findings"] if f["code"] == "MQ167")
    dotted_line, section_line = (1, 3) if first else (5, 2)
    assert finding["line"] == dotted_line and f"not line {section_line} ('rocksmq')" in finding["message"]
    assert "2.5+ reads either one at random" in finding["message"]
    # a dotted key alone is read as the nested one, with no warning
    alone = write_yaml(tmp_path, dotted + ROCKS, "alone.yaml")
    only = run_cli("config", "explain", str(alone), "--milvus-version", "2.3.5", "--json").json()
    assert only["effective_mq"] == "natsmq" and "MQ167" not in {f["code"] for f in only["findings"]}


@pytest.mark.etcd
@pytest.mark.parametrize("key", ["mq/type", "mq.type", "MQ_TYPE"])
def test_etcd_override_keys_are_matched_as_milvus_formats_them(etcd_url, tmp_path, key):
    """formatKey (pkg/config): lower case, `/ _ .` dropped; each spelling started natsmq on the 2.3.5 binary."""
    root = f"spelling-{key.replace('/', '-').replace('.', '-')}"
    put = {
        "key": base64.b64encode(f"{root}/config/{key}".encode()).decode(),
        "value": base64.b64encode(b"natsmq").decode(),
    }
    httpx.post(f"{etcd_url}/v3/kv/put", json=put).raise_for_status()
    config = write_yaml(tmp_path, f"mq:\n  type: rocksmq\n{ROCKS}")
    result = run_cli(
        "config", "explain", str(config), "--etcd", etcd_url, "--etcd-root", root, "--env",
        "--milvus-version", "2.3.5", "--json", env={"MQ_TYPE": ""},
    )  # fmt: skip
    assert result.json()["effective_mq"] == "natsmq", result.stdout  # etcd hides the empty MQ_TYPE


@pytest.mark.etcd
@pytest.mark.parametrize(("embed", "effective"), [("true", "rocksmq"), ("false", "natsmq")])
def test_etcd_keys_apply_only_without_the_embedded_etcd(etcd_url, tmp_path, embed, effective):
    """Seen on the 2.3.5 binary: mq/type written into its embedded etcd did not change the MQ at the next start."""
    root = f"embed-{embed}"
    put = {
        "key": base64.b64encode(f"{root}/config/mq/type".encode()).decode(),
        "value": base64.b64encode(b"natsmq").decode(),
    }
    httpx.post(f"{etcd_url}/v3/kv/put", json=put).raise_for_status()
    config = write_yaml(tmp_path, f"etcd:\n  use:\n    embed: {embed}\nmq:\n  type: rocksmq\n{ROCKS}")
    args = ("config", "explain", str(config), "--etcd", etcd_url, "--etcd-root", root, "--milvus-version", "2.3.5")
    assert run_cli(*args, "--json").json()["effective_mq"] == effective
    assert ("Not applied: 1 etcd key(s)" in run_cli(*args).stdout) == (embed == "true")
