"""What an answer assumed (mode, Milvus version, file role) and whether it would change with the version.

`explain` states each assumption as a step; the JSON report lists them (`assumptions`), each with what
was assumed and how to say otherwise. When the version is unknown, the deployment is resolved again as
each Milvus release line would read it, so a verdict that depends on the version says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from mqctl.backends import Version
from mqctl.config.known_keys import FULL, OVERLAY
from mqctl.config.resolve.resolution import Resolution, resolve_again

# One version per behaviour range: 2.3 (kafka.brokerList empty in code), 2.4 (user.yaml merged),
# 2.5 (natsmq deprecated, kafka localhost:9092 in code), 2.6 (natsmq gone, woodpecker, chart/operator defaults).
RELEASE_LINES: tuple[tuple[str, Version], ...] = (
    ("2.3", (2, 3, 0)),
    ("2.4", (2, 4, 0)),
    ("2.5", (2, 5, 0)),
    ("2.6+", (2, 6, 0)),
)


@dataclass
class Assumption:
    """One thing the answer took for granted (part of the JSON report)."""

    subject: str  # mode, version, role
    assumed: str
    change: str  # how to tell mqctl otherwise


def assumptions(res: Resolution) -> list[Assumption]:
    """The mode, version and role the resolution assumed rather than read from the documents or options."""
    found = []
    if not res.mode_stated:
        found.append(
            Assumption("mode", res.mode, "--mode cluster for a cluster")  # only standalone is ever assumed
        )
    if res.version is None:
        found.append(
            Assumption(
                "version",
                "unknown: rules common to Milvus 2.3-2.6 apply",
                "--milvus-version (e.g. 2.3.5), or an image tag in the CR/Helm values",
            )
        )
    if not res.role_stated:
        other = OVERLAY if res.role == FULL else FULL
        meaning = {
            FULL: "Milvus reads it as its whole milvus.yaml: keys left out take code defaults",
            OVERLAY: "it sits on the stock milvus.yaml: keys left out take the stock file's values",
        }
        found.append(Assumption("role", f"{res.role} ({meaning[res.role]})", f"--role {other}"))
    return found


def outcome(res: Resolution) -> str:
    """The verdict in a few words: the MQ Milvus starts, or how it fails."""
    if res.effective_mq:
        return res.effective_mq
    if res.attempted_mq:
        return f"tries {res.attempted_mq} and fails (`{res.fails}`)"
    return f"does not start (`{res.panic}`)"


def by_version(res: Resolution) -> list[tuple[str, str]]:
    """(release lines, verdict) when the version is unknown and the verdict differs between release lines;
    [] when it is known or every line agrees. Consecutive lines with one verdict are joined ("2.3-2.5")."""
    if res.version is not None:
        return []
    verdicts = [(label, outcome(resolve_again(res, version))) for label, version in RELEASE_LINES]
    if len({verdict for _, verdict in verdicts}) < 2:
        return []
    groups: list[tuple[list[str], str]] = []
    for label, verdict in verdicts:
        if groups and groups[-1][1] == verdict:
            groups[-1][0].append(label)
        else:
            groups.append(([label], verdict))
    return [(_span(labels), verdict) for labels, verdict in groups]


def _span(labels: list[str]) -> str:
    """["2.3", "2.4"] -> "2.3-2.4"; ["2.5", "2.6+"] -> "2.5+"."""
    if len(labels) > 1 and labels[-1].endswith("+"):
        return labels[0] + "+"
    return labels[0] if len(labels) == 1 else f"{labels[0]}-{labels[-1]}"
