"""Rules on what a file leaves unknown or misleading: the version, placeholders, missing or misplaced settings.

These do not find a wrong value; they say where the verdict rests on something mqctl cannot see
(the Milvus version, an environment variable Milvus never reads) or where a file looks like
something it is not (Operator keys in a milvus.yaml, a CR without spec, an address still reading
`<kafka_broker>`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from mqctl.backends import BACKENDS, V2_3
from mqctl.config.known_keys import format_version, normalize_key
from mqctl.config.read import kinds, placeholders
from mqctl.config.read.documents import HELM_VALUES, MILVUS_YAML, OPERATOR_CR
from mqctl.config.read.nodes import is_mapping, lookup, repeated_keys, viper_rank, written_dotted
from mqctl.config.resolve.resolution import Resolution
from mqctl.config.rules.assumptions import by_version
from mqctl.config.rules.catalog import RULE_BY_CODE, finding
from mqctl.config.settings import Setting
from mqctl.findings import ERROR, Finding

MQ_SECTIONS = ("mq", *BACKENDS)  # a file writing none of these leaves the MQ to defaults
# keys that decide the MQ: a placeholder in one changes the verdict (Milvus uses the literal string)
DECIDING = ("mq.type", *(backend.enabled_by for backend in BACKENDS.values()))
# fields of an Operator CR or the Helm chart that Milvus ignores at the top of its own yaml
FOREIGN_KEYS = {
    "msgstreamtype": "spec.dependencies.msgStreamType of a Milvus Operator CR",
    "dependenciesmsgstreamtype": "spec.dependencies.msgStreamType of a Milvus Operator CR",
    "specdependenciesmsgstreamtype": "spec.dependencies.msgStreamType of a Milvus Operator CR",
    "messagequeue": "standalone.messageQueue of the Helm chart",
    "standalonemessagequeue": "standalone.messageQueue of the Helm chart",
}
ANGLE_PLACEHOLDER = re.compile(r"<[^<>\s]+>")  # `<kafka_broker>:9094`, as copied from docs


def _version_dependent(res: Resolution) -> list[Finding]:
    alternatives = by_version(res)
    if not alternatives:
        return []
    listed = "; ".join(f"Milvus {lines}: {verdict}" for lines, verdict in alternatives)
    return [
        finding(
            "MQ154",
            f"the Milvus version is unknown and the verdict depends on it: {listed}",
            res.origin("mq.type") if res.origin("mq.type").file else None,
            key="mq.type",
            hint="pass --milvus-version (e.g. 2.5.4), or give the CR/Helm values an image tag",
        )
    ]


def _placeholders(res: Resolution) -> list[Finding]:
    """Every setting that still holds a `${VAR}`: Milvus reads it literally (see placeholders.py)."""
    found = []
    for setting in res.yaml_layers + [s for view in res.views for s in view.fields.values()]:
        if not placeholders.find(setting.value):
            continue
        shown = placeholders.shown(setting.value or "", setting.key)
        deciding = normalize_key(setting.key) in {normalize_key(key) for key in DECIDING}
        effective = res.origin(setting.key)
        if deciding and effective.file == setting.file and effective.line == setting.line:
            found.append(
                finding(
                    "MQ164",
                    f"{setting.key} holds the placeholder {shown}: Milvus substitutes nothing, so it would use "
                    f"the literal string {shown!r} as {setting.key} (the verdict above is what that gives)",
                    setting,
                    hint="render the file first (e.g. envsubst) and check the result, or write the value",
                )
            )
        else:
            found.append(
                finding(
                    "MQ163",
                    f"{setting.key} holds the placeholder {shown}: Milvus reads it literally (no environment "
                    "substitution); it does not decide the MQ",
                    setting,
                    hint="make sure something renders the file before Milvus reads it (envsubst, an entrypoint)",
                )
            )
    return found


def _repeated_keys(res: Resolution) -> list[Finding]:
    """A key written twice in one mapping: Milvus keeps the last occurrence whole (see nodes._last_of_each)."""
    found = []
    for document in res.documents:
        for root in document.roots:
            for key, lines, dropped in repeated_keys(root):
                lost = f"; {', '.join(dropped)} (only in the earlier one) is not read" if dropped else ""
                found.append(
                    Finding(
                        "MQ166",
                        RULE_BY_CODE["MQ166"].severity,
                        f"{key} is written {len(lines)} times (lines {', '.join(map(str, lines))}): Milvus reads "
                        f"only the last one{lost}",
                        key,
                        str(document.path),
                        lines[-1],
                        "merge the blocks into one",
                    )
                )
    return found


def _dotted_and_nested(res: Resolution) -> list[Finding]:
    """One key written as `a.b:` and as `a:` / `b:` in the same file (see nodes.viper_rank)."""
    found = []
    by_file: dict[tuple[str | None, str], list[Setting]] = {}
    for setting in res.yaml_layers:
        if setting.source == "yaml" and setting.written_parts:
            by_file.setdefault((setting.file, normalize_key(setting.key)), []).append(setting)
    for (file, _), settings in by_file.items():
        if len(settings) < 2 or not any(written_dotted(s) for s in settings):
            continue
        read = max(settings, key=viper_rank)
        others = ", ".join(f"line {s.line} ({s.value!r})" for s in settings if s is not read)
        found.append(
            Finding(
                "MQ167",
                RULE_BY_CODE["MQ167"].severity,
                f"{read.key} is written dotted and inside its section in one file: Milvus 2.3/2.4 read line "
                f"{read.line} ({read.value!r}), not {others}; Milvus 2.5+ reads either one at random",
                read.key,
                file,
                read.line,
                "write the key once, inside its section",
            )
        )
    return found


def _no_mq_settings(res: Resolution) -> list[Finding]:
    files = [view for view in res.views if view.document.kind != OPERATOR_CR and view.document.kind != HELM_VALUES]
    if not files or len(files) != len(res.views):
        return []
    written = [s for s in res.yaml_layers if s.key.split(".")[0] in MQ_SECTIONS]
    if written or any(o.key.split(".")[0] in MQ_SECTIONS for o in res.overrides()):
        return []
    verdict = f"Milvus starts {res.effective_mq}" if res.effective_mq else "Milvus does not start"
    sections = [name for name in MQ_SECTIONS if name == "mq" or BACKENDS[name].available(res.version)]
    if res.version is not None and res.version < V2_3:
        sections.remove("mq")
    return [
        finding(
            "MQ155",
            f"no MQ settings at all (no {', '.join(sections)} keys): {verdict} on the {res.default_source} alone",
            key=None,
            hint="check this is the file Milvus reads; --role overlay if it sits on the stock milvus.yaml "
            "(user.yaml), --role full if it is the whole milvus.yaml",
        )
    ]


def _cr_without_spec(res: Resolution) -> list[Finding]:
    found = []
    for view in res.views:
        doc = view.document
        if doc.kind == OPERATOR_CR and not (
            (spec := lookup(doc.main, ["spec"])) is not None and is_mapping(spec[1]) and spec[1].value
        ):
            found.append(
                finding(
                    "MQ156",
                    f"the Milvus CR has no spec: the operator deploys its defaults ({res.mode}, "
                    f"{res.effective_mq or 'no MQ'}), whatever else was meant",
                    kinds.field_setting(doc, "kind"),
                    hint="check the file is the whole CR (spec.dependencies.msgStreamType, spec.config)",
                )
            )
    return found


def _foreign_keys(res: Resolution) -> list[Finding]:
    found = []
    for view in res.views:
        if view.document.kind != MILVUS_YAML:
            continue
        for setting in view.settings:
            meaning = FOREIGN_KEYS.get(normalize_key(setting.key))
            if meaning:
                found.append(
                    finding(
                        "MQ157",
                        f"{setting.key} is {meaning}, not a Milvus setting: Milvus ignores it here, mq.type decides",
                        setting,
                        hint=f"write mq.type: {setting.value} if that MQ is meant (or move the key into the CR/values)",
                    )
                )
    return found


def _placeholder_addresses(res: Resolution) -> list[Finding]:
    found = []
    for name, backend in BACKENDS.items():
        origin = res.origin(backend.enabled_by)
        if origin.source == "default" or not ANGLE_PLACEHOLDER.search(origin.value or ""):
            continue
        used = name in (res.effective_mq, res.attempted_mq)
        found.append(
            finding(
                "MQ158",
                f"{backend.enabled_by} {origin.value!r} looks like a placeholder copied from an example: "
                + (f"Milvus would try to reach it literally ({name} is the MQ it starts)" if used else "not filled in"),
                origin,
                key=backend.enabled_by,
                hint="write the real host:port",
                severity=ERROR if used else None,
            )
        )
    return found


def _woodpecker_storage(res: Resolution) -> list[Finding]:
    """Woodpecker keeps its log in object storage by default (woodpecker.storage.type minio)."""
    if res.effective_mq != "woodpecker" or (res.value("woodpecker.storage.type") or "minio") != "minio":
        return []
    reasons = []
    storage = res.origin("common.storageType")
    if (storage.value or "").lower() == "local":
        reasons.append(f"common.storageType is local ({res.where('common.storageType')})")
    for view in res.views:
        if view.document.kind == HELM_VALUES:
            minio = kinds.field_setting(view.document, "minio.enabled")
            s3 = kinds.field_setting(view.document, "externalS3.enabled")
            if minio and (minio.value or "").lower() == "false" and not (s3 and (s3.value or "").lower() == "true"):
                reasons.append(f"minio.enabled is false and no externalS3 ({minio.file}:{minio.line})")
    if not reasons:
        return []
    return [
        finding(
            "MQ159",
            "woodpecker keeps its log in MinIO/S3 (woodpecker.storage.type minio), but " + "; ".join(reasons),
            res.origin("woodpecker.storage.type") if res.origin("woodpecker.storage.type").file else None,
            key="woodpecker.storage.type",
            hint="set woodpecker.storage.type: local for a single node, or give it object storage",
        )
    ]


def _before_2_3(res: Resolution) -> list[Finding]:
    """Milvus 2.0-2.2 has no mq.type and no natsmq: it picks by mode and by which address is set."""
    if res.version is None or res.version >= V2_3:
        return []
    found = []
    for setting in res.yaml_layers:
        section = setting.key.split(".")[0]
        written = setting.source == "yaml"  # not the operator's or the chart's own choice
        if written and (normalize_key(setting.key) == "mqtype" or section == "natsmq"):
            found.append(
                finding(
                    "MQ162",
                    f"Milvus {res.milvus_version} does not read {setting.key} (mq.type and natsmq came in 2.3): "
                    "it takes rocksmq when rocksmq.path is set (standalone), else Pulsar, else Kafka",
                    setting,
                    hint="set the address of the MQ meant (rocksmq.path, pulsar.address or kafka.brokerList), "
                    "or check --milvus-version",
                )
            )
            break
    operator = next((s for s in res.yaml_layers if s.source == "operator" and s.key == "mq.type"), None)
    backend = BACKENDS.get(operator.value or "") if operator is not None else None
    if operator is not None and backend is not None and not backend.available(res.version):
        found.append(
            finding(
                "MQ162",
                f"msgStreamType {operator.value!r}: Milvus {res.milvus_version} has no {operator.value} "
                f"(it came in {format_version(backend.since)}) and reads no mq.type, so it starts "
                f"{res.effective_mq or 'no MQ'} instead",
                operator,
                key="spec.dependencies.msgStreamType",
                hint="set the msgStreamType of an MQ this Milvus has (rocksmq in standalone, pulsar or kafka), "
                "or check --milvus-version against the CR's image",
            )
        )
    return found


CONTEXT_CHECKS: tuple[Callable[[Resolution], list[Finding]], ...] = (
    _version_dependent,
    _placeholders,
    _repeated_keys,
    _dotted_and_nested,
    _no_mq_settings,
    _cr_without_spec,
    _foreign_keys,
    _placeholder_addresses,
    _woodpecker_storage,
    _before_2_3,
)
