"""The doctor's Prometheus exposition escapes hostile label values and reads back whole (the formats through the
CLI: tests/cli/doctor/test_doctor_formats.py)."""

from __future__ import annotations

import math

from tests.helpers.metrics import samples


def test_hostile_label_values_are_escaped_and_read_back_whole():
    from mqctl.doctor.metrics import Family, exposition

    hostile = 'dml"0\\n\nend} 1\n# TYPE x counter'
    family = Family("mqctl_channel_messages", "Messages stored in the channel", ("mq", "channel"))
    family.add(3, "natsmq", hostile)
    family.add(math.inf, "natsmq", "plain")
    text = exposition([family])
    assert len([line for line in text.splitlines() if not line.startswith("#")]) == 2
    assert samples(text)["mqctl_channel_messages"] == [
        ({"mq": "natsmq", "channel": hostile}, 3.0),
        ({"mq": "natsmq", "channel": "plain"}, math.inf),
    ]
