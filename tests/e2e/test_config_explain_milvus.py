"""What `mqctl config explain` predicts is what a real Milvus 2.3.5 does: the MQ it starts, or its panic."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.milvus


def _logs(box) -> str:
    return "".join(p.read_text(errors="replace") for p in (box.dir / "logs").glob("milvus-std*.log"))


def test_explain_matches_a_real_milvus(tmp_path, cli):
    from mqctl.errors import PreconditionError
    from mqctl.sandbox import server as sandbox

    directory = str(tmp_path / "sandbox")
    info = sandbox.up(directory, timeout=240)
    box = sandbox.Sandbox(directory)
    try:
        assert cli("config", "explain", info.config, "--json").json()["effective_mq"] == "rocksmq"
        assert "[mqType=rocksmq]" in _logs(box)
        box.stop(timeout=10)

        # a misspelled mq.type: explain predicts the panic, Milvus panics with that message
        assert cli("config", "set", info.config, "mq.type", "natsmq", "--yes").code == 0
        text = box.config_path.read_text()
        box.config_path.write_text(text.replace("type: natsmq", "type: natmq", 1))
        predicted = cli("config", "explain", info.config, "--json").json()
        assert predicted["effective_mq"] is None and predicted["panic"] == "mq type natmq is invalid"
        with pytest.raises(PreconditionError):
            box.start(timeout=60)
        assert predicted["panic"] in _logs(box)
        box.config_path.write_text(text)

        # the switch explain predicts: natsmq (the sandbox already holds a free natsmq port and storeDir)
        assert cli("config", "explain", info.config, "--json").json()["effective_mq"] == "natsmq"
        box.start(timeout=240)
        assert "[mqType=natsmq]" in _logs(box)
    finally:
        box.stop(timeout=10)


def _without(text: str, *sections: str) -> str:
    from tests.helpers.conformance.variants import drop_section

    lines = text.splitlines()
    for section in sections:
        lines = drop_section(lines, section)
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    """One sandbox whose binary runs each config in turn (tests/helpers/conformance/runner.py)."""
    from tests.helpers.conformance.runner import Worker

    worker = Worker(tmp_path_factory.mktemp("code-defaults"))
    yield worker
    worker.close()


# A whole milvus.yaml takes Milvus's code defaults for the keys it leaves out, not the stock
# file's values: rocksmq.path and pulsar.address are empty in code (natsmq's storeDir is not).
CODE_DEFAULT_CASES = [
    ("default", ("rocksmq", "pulsar", "natsmq"), None, "no available mq config found"),  # 2.3.5 has no kafka section
    ("rocksmq", ("rocksmq",), None, "fail to init rocksmq"),
    ("default", ("rocksmq",), "pulsar", None),
]


@pytest.mark.parametrize(
    ("mq_type", "removed", "starts", "fails"),
    CODE_DEFAULT_CASES,
    ids=["default-nothing-left", "rocksmq-without-section", "default-pulsar-kept"],
)
def test_missing_sections_take_code_defaults(worker, tmp_path, cli, mq_type, removed, starts, fails):
    text = _without(worker.base.replace("type: rocksmq", f"type: {mq_type}", 1), *removed)
    outcome = worker.run(text).outcome
    path = tmp_path / "milvus.yaml"
    path.write_text(text)
    predicted = cli("config", "explain", str(path), "--milvus-version", "2.3.5", "--json").json()
    assert (outcome.starts, predicted["effective_mq"]) == (starts, starts)
    if fails:
        assert fails in outcome.fails and predicted["panic"] == fails
        assert predicted["attempted_mq"] == outcome.attempted
