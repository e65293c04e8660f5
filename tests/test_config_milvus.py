"""What `mqctl config explain` predicts is what a real Milvus 2.3.5 does: the MQ it starts, or its panic."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.milvus


def _logs(box) -> str:
    return "".join(p.read_text(errors="replace") for p in (box.dir / "logs").glob("milvus-std*.log"))


def test_explain_matches_a_real_milvus(tmp_path, cli):
    from mqctl import sandbox
    from mqctl.errors import PreconditionError

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
