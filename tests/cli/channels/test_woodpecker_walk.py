"""The walk from `channels peek --woodpecker` to the bytes (docs/development.md, The walk to the bytes): every call
below the command, traced in-process, passes through at most five of mqctl's modules and never comes back into one
it left. The shared shapes and utilities every layer uses (errors, the model modules, declared protos) are not
steps of the walk."""

from __future__ import annotations

import sys

from tests.helpers.paths import FIXTURES

WAL = FIXTURES / "upstream" / "woodpecker-v0.1.37-local" / "wal"
COMMAND = "mqctl.cli.channels.peek"
MAX_MODULES = 5
# used from every layer, so not a step: the error model, shapes, the clock and text utilities, the terminal
NOT_STEPS = {
    "mqctl.errors",
    "mqctl.files",
    "mqctl.clock",
    "mqctl.sorting",
    "mqctl.secrets",
    "mqctl.urls",
    "mqctl.interrupts",
    "mqctl.findings",
    "mqctl.backends",
    "mqctl.cli.terminal",
    "mqctl.cli.context",
    "mqctl.cli.common",
    "mqctl.mq.model",
    "mqctl.mq.woodpecker.segment_model",
    "mqctl.mq.declared_protos",
    "mqctl.milvus.protos",
}


def walks(args: list[str]) -> tuple[int, dict[tuple[str, ...], str]]:
    """Run the command in this process; every distinct chain of mqctl modules on the stack below the command's
    function (one module's consecutive frames once), with the function that ended it."""
    from mqctl.cli import run

    found: dict[tuple[str, ...], str] = {}

    def module(frame) -> str | None:
        name = frame.f_globals.get("__name__", "")
        return name if name.startswith("mqctl") and frame.f_code.co_name != "<module>" else None

    def trace(frame, event, arg):
        if event != "call" or module(frame) is None:
            return
        chain: list[str] = []
        at = frame
        while at is not None:
            name = module(at)
            if name is not None and (not chain or chain[-1] != name):
                chain.append(name)
            if name == COMMAND:
                break
            at = at.f_back
        if chain and chain[-1] == COMMAND:
            walk = tuple(m for m in reversed(chain) if m not in NOT_STEPS)
            found.setdefault(walk, frame.f_code.co_name)

    sys.setprofile(trace)
    try:
        code = run(args)
    finally:
        sys.setprofile(None)
    return code, found


def test_peek_reaches_the_bytes_through_at_most_five_modules_without_coming_back(capsys):
    code, found = walks(["channels", "peek", "1", "--woodpecker", str(WAL), "--limit", "3", "--json"])
    assert code == 0, capsys.readouterr().err
    assert '"messages"' in capsys.readouterr().out
    reads = [walk for walk, function in found.items() if function == "read_regular_file"]
    assert reads, "the walk never reached the segment file's bytes"
    assert reads[0][-1] == "mqctl.mq.woodpecker.segment_files"
    longest = max(found, key=len)
    assert len(longest) <= MAX_MODULES, longest
    back = [walk for walk in found if len(set(walk)) != len(walk)]
    assert back == [], back
