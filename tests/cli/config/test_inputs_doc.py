"""docs/config.md's Inputs paragraph says of a `${VAR}` value what `config validate` does with it."""

from __future__ import annotations

from tests.helpers.paths import REPO

DOCS = REPO / "docs"


def test_config_inputs_say_of_a_var_value_what_mqctl_does(tmp_path):
    """A `${VAR}` value is read literally (a warning, not exit 2): the Inputs paragraph must not call it an error."""
    from tests.helpers.cli import run_cli

    path = tmp_path / "milvus.yaml"
    path.write_text("mq:\n  type: rocksmq\nminio:\n  accessKeyID: ${MINIO_ACCESS_KEY}\n")
    result = run_cli("config", "validate", str(path), "--milvus-version", "2.5.0")
    assert result.code != 2 and "MQ163" in result.stdout + result.stderr
    inputs = (DOCS / "config.md").read_text().split("## Inputs", 1)[1].split("\n## ", 1)[0]
    paragraph = inputs.split("\n\n")[1]
    assert "unrendered `${VAR}` template" not in paragraph and "(#var-placeholders)" in paragraph
