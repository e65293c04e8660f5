"""mqctl's prediction for a variant, and whether it agrees with what the binary did."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.conformance.variants import Variant, render

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


def predict(
    config_text: str,
    folder: Path,
    env: dict[str, str] | None = None,
    etcd_url: str | None = None,
    etcd_keys: dict[str, str] | None = None,
) -> Prediction:
    """What `mqctl config explain milvus.yaml --milvus-version 2.3.5 [--env] [--etcd URL]` says about this whole
    file, with `env` as the environment and, when `etcd_keys` is not None, those keys alone under the file's
    `<etcd.rootPath>/config/` in the etcd at `etcd_url`."""
    from mqctl.config.resolve.resolution import override_sources, resolve

    path = folder / "milvus.yaml"
    path.write_text(config_text)
    etcd = None
    if etcd_keys is not None:
        if etcd_url is None:
            raise ValueError("an etcd variant needs an etcd to predict it")
        _, etcd = override_sources([path], mode="standalone", milvus_version=MILVUS_VERSION, etcd_url=etcd_url)
        assert etcd is not None
        for key, _value in etcd.get_prefix(etcd.prefix):
            etcd.delete(key[len(etcd.prefix) :])
        for key, value in etcd_keys.items():
            etcd.put(key, value)
    res = resolve([path], mode="standalone", milvus_version=MILVUS_VERSION, env=env or {}, etcd=etcd)
    return Prediction(res.effective_mq, getattr(res, "fails", None) or res.panic, getattr(res, "attempted_mq", None))


def predict_variant(variant: Variant, base: str, folder: Path, etcd_url: str | None = None) -> Prediction:
    """mqctl's prediction for a variant: its file, its environment and its etcd keys."""
    return predict(render(base, variant), folder, variant.environment(), etcd_url, variant.etcd_keys())


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


def check(
    records: list[dict], base: str, folder: Path, etcd_url: str | None = None
) -> list[tuple[str, str, str, bool]]:
    """(variant, binary, mqctl, agree) for each recorded outcome."""
    rows = []
    for record in records:
        variant = Variant(**record["params"])
        mqctl = predict_variant(variant, base, folder, etcd_url)
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
