"""Rules on how a deployment carries its settings: Operator CR, Helm values, overrides, version and role."""

from __future__ import annotations

from collections.abc import Callable

from mqctl.backends import BACKENDS, CLUSTER, STANDALONE, default_order, is_embedded
from mqctl.config.known_keys import FULL, OVERLAY, normalize_key, spec_for
from mqctl.config.read import kinds
from mqctl.config.read.documents import HELM_VALUES, OPERATOR_CR
from mqctl.config.resolve import pinning
from mqctl.config.resolve.resolution import Resolution
from mqctl.config.rules.catalog import finding
from mqctl.findings import ERROR, INFO, WARNING, Finding
from mqctl.secrets import REDACTED, is_secret_key


def _operator(res: Resolution) -> list[Finding]:
    found = []
    for view in res.views:
        if view.document.kind != OPERATOR_CR:
            continue
        config_type = next((s for s in view.settings if s.source == "yaml" and normalize_key(s.key) == "mqtype"), None)
        chosen = next((s for s in view.settings if s.source == "operator" and s.key == "mq.type"), None)
        if config_type and chosen and config_type.value != chosen.value:
            found.append(
                finding(
                    "MQ130",
                    f"spec.config mq.type {config_type.value!r} contradicts msgStreamType "
                    f"{chosen.value!r}: the operator writes mq.type from msgStreamType",
                    config_type,
                    hint="remove spec.config.mq.type or make both the same",
                )
            )
        if chosen is not None:
            for backend in kinds.OPERATOR_ENDPOINTS:
                block = kinds.field_setting(view.document, f"spec.dependencies.{backend}")
                if backend != chosen.value and block is not None:
                    found.append(
                        finding(
                            "MQ131",
                            f"spec.dependencies.{backend} is configured but Milvus uses {chosen.value}",
                            block,
                            key=f"spec.dependencies.{backend}",
                            hint="remove the unused dependency so the operator does not deploy it",
                        )
                    )
        rolling = kinds.field_setting(view.document, "spec.components.enableRollingUpdate")
        if rolling and (rolling.value or "").lower() == "true" and is_embedded(res.effective_mq):
            found.append(
                finding(
                    "MQ132",
                    f"enableRollingUpdate with {res.effective_mq}: the operator's webhook rejects it",
                    rolling,
                    hint="turn rolling updates off, or use pulsar/kafka",
                )
            )
    return found


def _helm(res: Resolution) -> list[Finding]:
    found = []
    for view in res.views:
        if view.document.kind != HELM_VALUES:
            continue
        fields = view.fields
        queue = fields.get("standalone.messageQueue")

        pulsar_on = [n for n in kinds.HELM_PULSAR_TOGGLES if kinds.helm_enabled(fields, n)]
        kafka_on = [n for n in kinds.HELM_KAFKA_TOGGLES if kinds.helm_enabled(fields, n)]
        if res.mode == STANDALONE and queue is not None:
            if queue.value == "pulsar" and not pulsar_on:
                found.append(
                    finding(
                        "MQ140",
                        "standalone.messageQueue pulsar but no pulsar*.enabled is true: nothing deploys Pulsar",
                        queue,
                        hint="set pulsarv3.enabled: true (or externalPulsar)",
                        severity=ERROR,
                    )
                )
            if queue.value == "kafka" and not kafka_on:
                found.append(
                    finding(
                        "MQ140",
                        "standalone.messageQueue kafka but kafka.enabled/externalKafka.enabled "
                        "is not true: nothing deploys Kafka",
                        queue,
                        hint="set kafka.enabled: true",
                        severity=ERROR,
                    )
                )
            used = {"pulsar": pulsar_on, "kafka": kafka_on}.get(queue.value or "", [])
            for name in pulsar_on + kafka_on:
                if name not in used:
                    found.append(
                        finding(
                            "MQ140",
                            f"{name}: true deploys a service that standalone.messageQueue {queue.value} does not use",
                            fields[name],
                            hint=f"set {name}: false",
                        )
                    )
        if res.mode == CLUSTER and len(pulsar_on + kafka_on) > 1:
            found.append(
                finding(
                    "MQ140",
                    f"several MQs enabled in a cluster ({', '.join(pulsar_on + kafka_on)}): "
                    f"Milvus uses {res.effective_mq}",
                    fields[(pulsar_on + kafka_on)[1]],
                    hint="enable only one",
                )
            )
        chart_choice = next((s for s in view.settings if s.source == "helm"), None)
        user_type = next((s for s in view.settings if s.source == "yaml" and normalize_key(s.key) == "mqtype"), None)
        if chart_choice and user_type and user_type.value != chart_choice.value:
            found.append(
                finding(
                    "MQ140",
                    f"extraConfigFiles.user.yaml sets mq.type {user_type.value} but the chart "
                    f"is set up for {chart_choice.value} ({chart_choice.detail})",
                    user_type,
                    hint="make standalone.messageQueue / *.enabled match user.yaml's mq.type",
                )
            )
    return found


def _overrides(res: Resolution) -> list[Finding]:
    found = []
    for override in res.overrides():
        yaml = res.yaml_setting(override.key)
        if yaml is None or yaml.value == override.value:
            continue
        if override.source == "etcd" and pinning.pins(res.version) and normalize_key(override.key) == pinning.PIN_KEY:
            continue  # the pinned mq.type (MQ160): deleting it is no way to switch
        new, old = (REDACTED, REDACTED) if is_secret_key(override.key) else (repr(override.value), repr(yaml.value))
        found.append(
            Finding(
                "MQ150",
                WARNING,
                f"{override.source} {override.detail} sets {override.key} "
                f"{new}, hiding the yaml's {old}: the yaml change will not take effect",
                yaml.key,
                yaml.file,
                yaml.line,
                f"change or delete the {override.source} override ({override.detail})",
            )
        )
    return found


def _context(res: Resolution) -> list[Finding]:
    found = []
    for name in res.ignored_files:
        found.append(
            Finding(
                "MQ151",
                WARNING,
                f"Milvus {res.milvus_version} reads milvus.yaml only: {name} is ignored",
                None,
                name,
                None,
                "merge its settings into milvus.yaml, or upgrade to 2.4+",
            )
        )
    if not res.mode_stated:
        found.append(
            Finding(
                "MQ152",
                INFO,
                "mode not stated by the document: checked as standalone",
                None,
                res.files[0] if res.files else None,
                None,
                "pass --mode cluster for a cluster",
            )
        )
    found.extend(_role_assumed(res))
    return found


def _role_assumed(res: Resolution) -> list[Finding]:
    """The assumed file role changes a backend's enabling key: say which default was taken."""
    if res.role_stated:
        return []
    other = OVERLAY if res.role == FULL else FULL
    deciding = default_order(res.mode, res.version) if res.mq_type == "default" else (res.mq_type,)
    differing = [BACKENDS[mq].enabled_by for mq in deciding if mq in BACKENDS]
    differing = [
        key
        for key in differing
        if res.origin(key).source == "default"
        and (spec := spec_for(key)) is not None
        and spec.default_in(res.role, res.version) != spec.default_in(other, res.version)
    ]
    if not differing:
        return []
    taken = ", ".join(f"{key} = {res.value(key) or '(empty)'}" for key in differing)
    return [
        Finding(
            "MQ153",
            INFO,
            f"not set, so taken from the {res.default_source}: {taken} (file role {res.role})",
            None,
            res.files[0] if res.files else None,
            None,
            f"pass --role {other} if this file is "
            + ("layered on the stock milvus.yaml" if other == OVERLAY else "Milvus's whole milvus.yaml"),
        )
    ]


DEPLOY_CHECKS: tuple[Callable[[Resolution], list[Finding]], ...] = (_operator, _helm, _overrides, _context)
