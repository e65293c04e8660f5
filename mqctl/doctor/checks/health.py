"""Health checks of the running Milvus: /healthz, its version, its collections and quota state."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mqctl.doctor.checks.examination import FORCE_DENY, Examination, fix_value
from mqctl.doctor.discovery import Target
from mqctl.doctor.verdict import OK, Check
from mqctl.findings import ERROR, INFO, WARNING

if TYPE_CHECKING:
    from mqctl.milvus.client import QuotaStates


# --- health --------------------------------------------------------------------------------------------------------
def health_checks(target: Target, timeout: float) -> list[Check]:
    """/healthz of the running Milvus (runs beside the other checks)."""
    import httpx

    from mqctl import http

    checks = []
    if target.pid is None or not target.health_url:
        checks.append(Check("health", "DR600", INFO, "no running Milvus: /healthz not checked"))
    else:
        try:
            answer = http.client().get(target.health_url, timeout=timeout)
            text = answer.text.strip()[:200]
            if answer.status_code == 200 and "OK" in text:
                checks.append(Check("health", "DR600", OK, f"{target.health_url} answers OK"))
            else:
                checks.append(
                    Check(
                        "health",
                        "DR600",
                        ERROR,
                        f"{target.health_url} answers HTTP {answer.status_code}: {text}",
                        f"see Milvus's log ({target.paths.get('log', 'its stdout')})",
                        impact="a component is down: requests to it fail",
                    )
                )
        except httpx.HTTPError as err:
            checks.append(
                Check(
                    "health",
                    "DR600",
                    ERROR,
                    f"{target.health_url} does not answer within {timeout:g} s: {type(err).__name__}",
                    f"is METRICS_PORT {target.ports.get('health')} right? see Milvus's log",
                )
            )
    return checks


def version_check(target: Target) -> Check:
    """The Milvus version and where it came from (the rules that differ by version use it)."""
    if target.version:
        return Check("health", "DR601", OK, f"Milvus {target.version} (from {target.version_from})")
    return Check(
        "health",
        "DR601",
        INFO,
        "the Milvus version is not known (no `Version:` banner in its log, no server answering): rules that "
        "differ by version give every version's answer",
        "pass --milvus-version (e.g. 2.3.5)",
    )


def collection_checks(target: Target, timeout: float) -> tuple[list[Check], QuotaStates | None]:
    """Over gRPC: the server's version, the collections not loaded (queries on them fail; a restart loads only
    what was loaded), and the quota states its proxy enforces now (CheckHealth; `quota_check` judges them)."""
    from mqctl.milvus.client import MilvusTarget, QuotaStates
    from mqctl.milvus.rpc import MilvusGrpc

    if target.pid is None and not target.milvus:
        return [], None
    if not target.milvus:
        return [
            Check("health", "DR602", INFO, "no gRPC address known: collections not checked", "pass --milvus URI")
        ], None
    uri = target.milvus
    try:
        # the generated stubs and grpc, not pymilvus's client: its import alone took most of a doctor run
        access = MilvusTarget(uri)
        with MilvusGrpc(access.uri, timeout, access.user, access.password, access.token) as client:
            version = client.server_version()
            names, not_loaded = [], []
            for db in client.databases():
                for name in client.collections(db):
                    names.append(f"{db}.{name}")
                    if not client.is_loaded(name, db):
                        not_loaded.append(f"{db}.{name}")
            quota = QuotaStates(*client.check_health())
    except Exception as err:  # gRPC's and Milvus's errors alike: each is one finding, never a traceback
        message = getattr(err, "message", None) or str(err) or type(err).__name__
        return [
            Check(
                "health",
                "DR602",
                WARNING if target.pid is not None else INFO,
                f"Milvus at {uri} does not answer over gRPC within {timeout:g} s: {message[:200]}",
                "check the proxy port (proxy.port) or pass --milvus URI",
            )
        ], None
    if target.version is None:
        target.version, target.version_from = version, "the server (GetVersion)"
    if not_loaded:
        return [
            Check(
                "health",
                "DR602",
                INFO,
                f"{len(not_loaded)} of {len(names)} collection(s) not loaded: {', '.join(not_loaded[:10])}",
                "load them (MilvusClient.load_collection) if they should answer queries",
                impact="searches and queries on them fail until they are loaded",
            )
        ], quota
    return [Check("health", "DR602", OK, f"Milvus {version} at {uri}: {len(names)} collection(s), all loaded")], quota


FORCE_DENY_REASON = "deactivated by the administrator"  # GetQuotaErrorString(ErrorCode_ForceDeny)


def quota_check(exam: Examination, quota: QuotaStates) -> None:
    """DR603: what the quota center makes the proxy refuse right now. forceDeny in the files (DR200) is what
    the next refresh applies; this is what is in force, whoever set it (the yaml, etcd, a migration that
    stopped writes, memory or disk protection)."""
    if not quota.healthy:
        exam.add(
            "health",
            "DR603",
            WARNING,
            f"CheckHealth: Milvus reports itself unhealthy ({'; '.join(quota.reasons)[:300] or 'no reason given'}): "
            "its quota states are not reported",
            f"see Milvus's log ({exam.target.paths.get('log', 'its stdout')})",
        )
        return
    if not quota.states:
        exam.add("health", "DR603", OK, "the quota center limits nothing now (CheckHealth: no quota state)")
        return
    pairs = list(zip(quota.states, quota.reasons + [""] * len(quota.states), strict=False))
    said = "; ".join(f"{state}: {reason}" if reason else state for state, reason in pairs)
    denied = [state for state in quota.states if state.startswith("DenyTo")]
    if not denied:
        exam.add(
            "health",
            "DR603",
            WARNING,
            f"the quota center slows requests down now ({said})",
            "see the quota settings under quotaAndLimits and the node's memory and disk",
            impact="requests over the lowered rates fail with RateLimit until the pressure is gone",
        )
        return
    if exam.target.configs and (exam.res.value("quotaAndLimits.enabled") or "").strip().lower() == "false":
        exam.add(
            "health",
            "DR603",
            INFO,
            f"the proxy reports {said}, but quotaAndLimits.enabled is false ({exam.res.where('quotaAndLimits.enabled')}): "
            "a disabled quota center enforces nothing (the state is what it last applied)",
            "nothing to do while quotas stay off; before enabling them, make sure forceDeny is false",
        )
        return
    forced = any(FORCE_DENY_REASON in reason for reason in quota.reasons)
    in_config = exam.target.configs and (exam.res.value(FORCE_DENY) or "").strip().lower() == "true"
    if forced and in_config:
        fix = f"as for DR200: {fix_value(exam, FORCE_DENY, 'false')}"
    elif forced and exam.journal_fix:
        fix = f"an unfinished migration stopped writes (DR210): {exam.journal_fix}"
    elif forced:
        fix = (
            f"{FORCE_DENY} is not true in the config read here: whoever set it (etcd, another tool) sets it back "
            "to false; `mqctl config explain --etcd URL` shows where it comes from"
        )
    else:
        fix = "free memory or disk on the node (the reasons say which), or raise the quotaAndLimits thresholds"
    what = {
        "DenyToWrite": "every insert, upsert, delete and bulk load fails now",
        "DenyToRead": "every search and query fails now",
    }
    exam.add(
        "health",
        "DR603",
        ERROR,
        f"Milvus refuses {' and '.join(s.removeprefix('DenyTo').lower() + 's' for s in denied)} now ({said})",
        fix,
        impact="; ".join(what.get(state, state) for state in denied) + " (CheckHealth quota states)",
    )
