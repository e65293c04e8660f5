"""Random YAML-ish text never crashes the config reader (the property test of the hostile-input probe).

It needs hypothesis (the test extra): without it this module is skipped; marked `extra`.
"""

from __future__ import annotations

import pytest

from mqctl.config.resolve.resolution import resolve
from mqctl.config.rules.report import validate
from mqctl.errors import MqctlError

hypothesis = pytest.importorskip("hypothesis")
HealthCheck, given, settings, st = hypothesis.HealthCheck, hypothesis.given, hypothesis.settings, hypothesis.strategies
pytestmark = pytest.mark.extra


# YAML made of the characters that matter to a YAML parser, and Milvus keys
YAMLISH = st.lists(
    st.sampled_from(
        list(" \t\n:-[]{},&*!|>'\"#%@`?<=~.\\")
        + ["mq", "type", "natsmq", "server", "port", "<<", "\ufeff", "\x00", "&a", "*a", "---", "\n  ", "\n    "]
    ),
    max_size=120,
).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=YAMLISH)
def test_random_yaml_never_crashes(tmp_path, text):
    path = tmp_path / "fuzz.yaml"
    path.write_text(text, encoding="utf-8")
    try:
        validate(resolve([path]))
    except MqctlError:
        pass
