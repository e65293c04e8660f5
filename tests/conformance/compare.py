"""mqctl's prediction for a variant, and whether it agrees with what the binary did."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tests.conformance.variants import Variant, render

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "milvus-2.3.5.json"
BASE = HERE / "milvus-2.3.5-base.yaml"  # the sandbox's rendered milvus.yaml, its folder as SANDBOX_DIR
SANDBOX_DIR = "/var/lib/milvus-sandbox"
MILVUS_VERSION = "2.3.5"


@dataclass(frozen=True)
class Prediction:
    effective_mq: str | None
    fails: str | None  # `fails` of the JSON contract (the panic, or the failure Milvus logs)
    attempted_mq: str | None


def predict(config_text: str, folder: Path) -> Prediction:
    """What `mqctl config explain milvus.yaml --milvus-version 2.3.5` says about this whole file."""
    from mqctl.config.resolve.resolution import resolve

    path = folder / "milvus.yaml"
    path.write_text(config_text)
    res = resolve([path], mode="standalone", milvus_version=MILVUS_VERSION, env={})
    return Prediction(res.effective_mq, getattr(res, "fails", None) or res.panic, getattr(res, "attempted_mq", None))


def agrees(binary: dict, mqctl: Prediction) -> bool:
    """Same MQ started, or both say it fails with mqctl's message inside Milvus's and the same attempted MQ."""
    if binary.get("starts"):
        return mqctl.effective_mq == binary["starts"] and mqctl.fails is None
    return (
        mqctl.effective_mq is None
        and bool(mqctl.fails)
        and mqctl.fails in binary["fails"]
        and mqctl.attempted_mq == binary.get("attempted")
    )


def describe(binary: dict) -> str:
    if binary.get("starts"):
        return f"starts {binary['starts']}" + (" (broker unreachable)" if binary.get("note") else "")
    return (f"{binary['attempted']}: " if binary.get("attempted") else "") + f"fails `{binary['fails'][:60]}`"


def describe_prediction(mqctl: Prediction) -> str:
    if mqctl.effective_mq:
        return f"starts {mqctl.effective_mq}" + (f" (fails `{mqctl.fails}`)" if mqctl.fails else "")
    return (f"{mqctl.attempted_mq}: " if mqctl.attempted_mq else "") + f"fails `{(mqctl.fails or '')[:60]}`"


def load_fixture() -> dict:
    return json.loads(FIXTURE.read_text())


def fixture_base() -> str:
    return BASE.read_text()


def check(records: list[dict], base: str, folder: Path) -> list[tuple[str, str, str, bool]]:
    """(variant, binary, mqctl, agree) for each recorded outcome."""
    rows = []
    for record in records:
        variant = Variant(**record["params"])
        mqctl = predict(render(base, variant), folder)
        rows.append(
            (variant.name, describe(record["binary"]), describe_prediction(mqctl), agrees(record["binary"], mqctl))
        )
    return rows


def table(rows: list[tuple[str, str, str, bool]]) -> str:
    widths = [max(len(str(r[i])) for r in rows) for i in range(3)]
    lines = [f"{'variant':<{widths[0]}}  {'binary':<{widths[1]}}  {'mqctl':<{widths[2]}}  agree"]
    lines += [f"{v:<{widths[0]}}  {b:<{widths[1]}}  {m:<{widths[2]}}  {'yes' if ok else 'NO'}" for v, b, m, ok in rows]
    agreed = sum(ok for *_, ok in rows)
    lines.append(f"mqctl agrees with Milvus {MILVUS_VERSION} on {agreed}/{len(rows)} variants")
    return "\n".join(lines)
