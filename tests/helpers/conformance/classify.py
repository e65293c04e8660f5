"""Read a Milvus 2.3.5 startup log into `{starts: <mq>}` or `{fails: <message>}`."""

from __future__ import annotations

import re
from dataclasses import dataclass

MQ_LINE = re.compile(r'\["try to init mq"\].*\[mqType=(\w+)\]')
PANIC_LINE = re.compile(r"^panic: (.+)$", re.MULTILINE)
FATAL_LINE = re.compile(r'\[FATAL\] \[[^\]]*\] \["([^"]+)"\]', re.MULTILINE)
STARTED_LINE = '["Proxy successfully started"]'
# No broker runs here: these lines show Milvus chose the backend and went on to connect to it.
BROKER_TRIED = {"pulsar": "Failed to connect to broker.", "kafka": "/bootstrap: Connect to"}
# rdkafka's warning when kafka.brokerList is empty: Milvus 2.3.5 then reports healthy, yet
# every DDL times out (no broker can ever be reached), so it counts as a failure.
KAFKA_NO_BROKERS = "No `bootstrap.servers` configured"
UNREACHABLE = "broker unreachable here (none runs in the test)"


@dataclass(frozen=True)
class Outcome:
    starts: str | None = None  # the MQ Milvus started (healthy)
    fails: str | None = None  # Milvus's panic or FATAL message, or why it never became healthy
    attempted: str | None = None  # the mqType of the "try to init mq" line, if logged
    note: str | None = None

    def as_dict(self) -> dict:
        return {
            k: v
            for k, v in (
                ("starts", self.starts),
                ("fails", self.fails),
                ("attempted", self.attempted),
                ("note", self.note),
            )
            if v
        }


def classify(log: str, *, exited: bool, healthy: bool, timed_out: bool) -> Outcome | None:
    """The outcome once the log (or the process) says it; None while it is still undecided."""
    mq = MQ_LINE.search(log)
    attempted = mq.group(1) if mq else None
    panic = PANIC_LINE.search(log)
    if panic:
        return Outcome(fails=panic.group(1).strip(), attempted=attempted)
    fatal = FATAL_LINE.search(log)
    if fatal:
        return Outcome(fails=fatal.group(1), attempted=attempted)
    if attempted == "kafka" and KAFKA_NO_BROKERS in log:
        return Outcome(fails=KAFKA_NO_BROKERS, attempted=attempted)
    if attempted in BROKER_TRIED and BROKER_TRIED[attempted] in log:
        return Outcome(starts=attempted, note=UNREACHABLE)
    if healthy and STARTED_LINE in log:
        return Outcome(starts=attempted) if attempted else Outcome(fails="healthy without a 'try to init mq' line")
    if exited:
        return Outcome(fails="exited without a panic or FATAL line", attempted=attempted)
    if timed_out:
        return Outcome(fails="never became healthy", attempted=attempted)
    return None
