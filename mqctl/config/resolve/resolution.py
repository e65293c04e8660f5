"""Which MQ a Milvus will start, and why: Milvus's own priority rules, step by step.

Mirrors Milvus's `mustSelectMQType` (internal/util/dependency): an explicit `mq.type` is used
as is (after checking it is valid and allowed in the mode); `default` takes the first enabled
backend in the mode's order. natsmq never takes part in `default` (PR #26791). An explicit
rocksmq, pulsar or kafka whose enabling key is empty is tried and then fails, as a real 2.3.5 shows.
Milvus 2.0-2.2 have no mq.type: there the mode and the first address set decide (_select_before_2_3).
Values are taken as written, `${VAR}` included: Milvus substitutes nothing (placeholders.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mqctl.backends import (
    BACKENDS,
    CLUSTER,
    STANDALONE,
    V2_3,
    V2_6,
    Version,
    default_order,
    is_embedded,
    valid_mq_types,
)
from mqctl.config.known_keys import (
    FULL,
    KEYS,
    OVERLAY,
    KeySpec,
    format_version,
    normalize_key,
    spec_for,
)
from mqctl.config.read import kinds, placeholders
from mqctl.config.read.documents import MILVUS_YAML, Document, load_document
from mqctl.config.read.inference import pick_mode, pick_role, pick_version
from mqctl.config.read.kinds import KindView
from mqctl.config.read.nodes import same_yaml, viper_rank
from mqctl.config.resolve import pinning
from mqctl.config.resolve.sources import DEFAULT_ETCD_ROOT, EtcdConfig, env_settings
from mqctl.config.settings import INTERNAL, Setting
from mqctl.errors import InputError
from mqctl.secrets import REDACTED, is_secret_key

PANIC_INVALID = "mq type {} is invalid"
# 2.6+: the WAL selector runs first (util.InitAndSelectWALName, called by internal/distributed/streaming/
# streaming.go Init and, from the etcd pinning on, first thing in cmd/roles/roles.go): an unknown name, the
# empty one included, panics `mq X is not valid` (internal/util/streamingutil/util/wal_selector.go
# validateWALName; v2.6.20 and master wrap it as `mq X is not valid: invalid wal config`)
PANIC_INVALID_WAL = "mq {} is not valid"
PANIC_STANDALONE_ONLY = "mq %!s(MISSING) is only valid in standalone mode"  # Milvus's format string lacks its argument
PANIC_NOTHING = "no available mq config found"
PANIC_NOTHING_BEFORE_2_3 = {  # Milvus 2.2's DefaultFactory.Init
    STANDALONE: "no available mq configuration, must config rocksmq, Pulsar or Kafka at least one of these!",
    CLUSTER: "no available remote mq configuration, must config Pulsar or Kafka at least one of these!",
}
# An explicit backend whose enabling key is empty: Milvus logs `mqType=X`, then (seen on 2.3.5)
FAILS_EMPTY = {
    "rocksmq": ("fail to init rocksmq", "FATAL"),  # mkdir of an empty path
    "pulsar": ("Failed to add msgstream", "panic"),  # "failed to parse pulsar config ... empty url"
    # rdkafka's warning; Milvus then reports healthy, yet every DDL times out: no broker can be reached
    "kafka": ("No `bootstrap.servers` configured", None),
}
IF_IT_FAILS = (
    f"Had it no valid choice, Milvus would stop at startup: an invalid mq.type panics "
    f"`{PANIC_INVALID.format('X')}`, rocksmq/natsmq in a cluster `{PANIC_STANDALONE_ONLY}`, "
    f"default with nothing enabled `{PANIC_NOTHING}`."
)


@dataclass
class Resolution:
    effective_mq: str | None
    mode: str
    milvus_version: str | None
    explanation: list[str]
    panic: str | None = None  # Milvus's startup panic (or FATAL) when it would not start
    files: list[str] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    mq_type: str = "default"
    attempted_mq: str | None = None  # the MQ Milvus logs `mqType=` for before it fails
    fails: str | None = None  # why Milvus would not start or not work (the panic, or the failure it logs)
    role: str = FULL  # full: missing keys take code defaults; overlay: the stock milvus.yaml's values
    # for rules, get and resolve_again; not part of the JSON contract (metadata INTERNAL)
    role_stated: bool = field(default=False, metadata=INTERNAL)
    parsed_version: Version | None = field(default=None, metadata=INTERNAL)
    mode_stated: bool = field(default=False, metadata=INTERNAL)
    kind_views: list[KindView] = field(default_factory=list, metadata=INTERNAL)
    yaml_values: dict[str, Setting] = field(default_factory=dict, metadata=INTERNAL)  # merged layers, normalised key
    yaml_layers: list[Setting] = field(default_factory=list, metadata=INTERNAL)  # every yaml setting in merge order
    env_values: dict[str, Setting] = field(default_factory=dict, metadata=INTERNAL)
    etcd_values: dict[str, Setting] = field(default_factory=dict, metadata=INTERNAL)
    ignored_files: list[str] = field(default_factory=list, metadata=INTERNAL)
    # etcd was asked: a 2.6.14+ pinned mq.type would be seen (mqctl.config.resolve.pinning)
    etcd_read: bool = field(default=False, metadata=INTERNAL)
    documents: list[Document] = field(default_factory=list, metadata=INTERNAL)  # what was read, for resolve_again
    inputs: dict[str, Any] = field(default_factory=dict, metadata=INTERNAL)  # mode, env, etcd and role as given

    @property
    def version(self) -> Version | None:
        return self.parsed_version

    @property
    def views(self) -> list[KindView]:
        return self.kind_views

    def origin(self, key: str) -> Setting:
        """Where the effective value of `key` comes from: etcd > env > yaml > Milvus default."""
        normal = normalize_key(key)
        for layer in (self.etcd_values, self.env_values, self.yaml_values):
            if normal in layer:
                return layer[normal]
        spec = spec_for(key)
        default = None
        if spec is not None and self._key_exists(spec):
            default = spec.default_in(self.role, self.parsed_version) or None
        return Setting(spec.key if spec else key, default, None, None, "default", self.default_source)

    @property
    def default_source(self) -> str:
        """Where a key left out takes its value: Milvus's code, or the stock milvus.yaml beneath an overlay."""
        source = "stock milvus.yaml" if self.role == OVERLAY else "code default"
        return f"{source} of Milvus {self.milvus_version}" if self.milvus_version else source

    def value(self, key: str) -> str | None:
        return self.origin(key).value

    def yaml_setting(self, key: str) -> Setting | None:
        return self.yaml_values.get(normalize_key(key))

    def overrides(self) -> list[Setting]:
        """Effective env and etcd overrides (etcd hides env for the same key)."""
        merged = {**self.env_values, **self.etcd_values}
        return list(merged.values())

    def _key_exists(self, spec: KeySpec) -> bool:
        version = self.parsed_version
        if version is None:
            return True
        return spec.since <= version and (spec.until is None or version < spec.until)

    def where(self, key: str) -> str:
        """Short provenance for explanations: 'file:line', 'env VAR', 'etcd KEY' or 'Milvus default'."""
        origin = self.origin(key)
        if origin.source == "env":
            return f"env {origin.detail}"
        if origin.source == "etcd":
            return f"etcd {origin.detail}"
        if origin.file:
            via = f" via {origin.detail}" if origin.source in ("operator", "helm") else ""
            return f"{origin.file}:{origin.line}{via}"
        return f"not set: {self.default_source}"


def _describe_docs(docs: list[Document], explanation: list[str]) -> None:
    if len(docs) == 1:
        explanation.append(f"Read {docs[0].name} ({docs[0].kind}).")
    else:
        names = ", ".join(f"{doc.name} ({doc.kind})" for doc in docs)
        explanation.append(f"Read in Milvus's merge order, later wins: {names}.")


def resolve(
    paths: Sequence[Path | str],
    *,
    kind: str | None = None,
    mode: str | None = None,
    milvus_version: str | None = None,
    env: dict[str, str] | None = None,
    etcd: EtcdConfig | None = None,
    role: str | None = None,
) -> Resolution:
    """Resolve the MQ a deployment starts from its documents and overrides."""
    if not paths:
        raise InputError("no configuration file given", hint="pass a milvus.yaml, user.yaml, CR or Helm values")
    docs = [load_document(path, kind) for path in paths]
    return _resolve_documents(docs, mode=mode, milvus_version=milvus_version, env=env, etcd=etcd, role=role)


def resolve_again(res: Resolution, version: Version) -> Resolution:
    """The same documents and overrides as Milvus `version` would read them (nothing is read from disk again)."""
    return _resolve_documents(res.documents, milvus_version=format_version(version), **res.inputs)


def _resolve_documents(
    docs: list[Document],
    *,
    mode: str | None,
    milvus_version: str | None,
    env: dict[str, str] | None,
    etcd: EtcdConfig | None,
    role: str | None,
) -> Resolution:
    inputs = {"mode": mode, "env": env, "etcd": etcd, "role": role}
    mode, mode_why, mode_stated = pick_mode(docs, mode)
    version, version_why = pick_version(docs, milvus_version)
    role, role_why, role_stated = pick_role(docs, role)
    explanation: list[str] = []
    _describe_docs(docs, explanation)
    explanation.append(f"Mode: {mode} ({mode_why}).")
    explanation.append(
        f"Milvus version: {format_version(version)} ({version_why})." if version else f"Milvus version: {version_why}."
    )
    explanation.append(f"File role: {role} ({role_why}).")

    ignored: list[str] = []
    used = docs
    if version is not None and version < (2, 4, 0) and len(docs) > 1 and all(d.kind == MILVUS_YAML for d in docs):
        used, ignored = docs[:1], [d.name for d in docs[1:]]
        explanation.append(f"Milvus {format_version(version)} reads milvus.yaml only: ignoring {', '.join(ignored)}.")
    elif version is None and len(docs) > 1 and all(d.kind == MILVUS_YAML for d in docs):
        explanation.append("Merged as Milvus 2.4+ does; Milvus 2.3 reads milvus.yaml only (pass --milvus-version).")

    views = [kinds.view(doc, mode, version) for doc in used]
    yaml_all = [setting for v in views for setting in v.settings]
    for v in views:
        explanation += v.notes
    merged: dict[str, Setting] = {}
    for setting in yaml_all:
        normal = normalize_key(setting.key)
        earlier = merged.get(normal)
        # in one file, a key written both dotted (`mq.type:`) and nested: viper reads the longest written prefix
        # (nodes.viper_rank); across files the later file wins
        if earlier is not None and same_yaml(earlier, setting) and viper_rank(earlier) > viper_rank(setting):
            continue
        merged[normal] = setting
    wanted = {normalize_key(spec.key): spec.key for spec in KEYS}
    wanted.update({normal: s.key for normal, s in merged.items()})
    env_found = env_settings(env, wanted) if env is not None else {}
    etcd_found = etcd.settings(wanted) if etcd is not None else {}
    if etcd_found and _embedded_etcd(env_found, merged):
        explanation.append(
            f"Not applied: {len(etcd_found)} etcd key(s) under {etcd.prefix if etcd else ''}: with etcd.use.embed "
            "true Milvus reads no config from etcd (its embedded etcd is not up yet when the config is read: "
            "initConfigsFromRemote, pkg/util/paramtable/base_table.go; seen on the 2.3.5 binary, which started "
            "on the yaml's mq.type with mq/type set in its embedded etcd)."
        )
        etcd_found = {}

    result = Resolution(
        None,
        mode,
        format_version(version),
        explanation,
        files=[d.name for d in docs],
        kinds=[d.kind for d in docs],
        parsed_version=version,
        mode_stated=mode_stated,
        kind_views=views,
        yaml_values=merged,
        yaml_layers=yaml_all,
        env_values=env_found,
        etcd_values=etcd_found,
        ignored_files=ignored,
        etcd_read=etcd is not None,
        role=role,
        role_stated=role_stated,
        documents=docs,
        inputs=inputs,
    )
    for override in result.overrides():
        yaml_value = merged.get(normalize_key(override.key))
        secret = is_secret_key(override.key)
        shown = REDACTED if secret else repr(override.value)
        explanation.append(
            f"Override from {override.source} {override.detail}: {override.key} = {shown}"
            + (f" (yaml says {REDACTED if secret else repr(yaml_value.value)})" if yaml_value else "")
            + "."
        )
    pinning.note(result)
    _select(result, layout_has_woodpecker=any(normalize_key(s.key).startswith("woodpecker") for s in yaml_all))
    return result


def _embedded_etcd(env_found: dict[str, Setting], yaml_values: dict[str, Setting]) -> bool:
    """Milvus runs its embedded etcd (`etcd.use.embed`, from the environment or the yaml; default false), read as
    paramtable's GetAsBool does (strconv.ParseBool: 1, t, T, true, True, TRUE)."""
    normal = normalize_key("etcd.use.embed")
    setting = env_found.get(normal) or yaml_values.get(normal)
    return setting is not None and (setting.value or "") in ("1", "t", "T", "true", "True", "TRUE")


def _backend_states(result: Resolution, woodpecker_known: bool) -> dict[str, bool]:
    """Each backend's enabled state and the key that makes it so, as explanation lines."""
    states = {}
    result.explanation.append("Backends (enabled = its key is not empty):")
    for backend, key in ((b.name, b.enabled_by) for b in BACKENDS.values()):
        if (backend == "woodpecker" and not woodpecker_known) or not BACKENDS[backend].available(result.version):
            continue
        value = result.value(key)
        states[backend] = bool(value)
        state = "enabled" if value else "not enabled"
        if backend == "natsmq" and value:
            state += ", but never chosen by default"
        shown = REDACTED if is_secret_key(key) else (value or "(empty)")
        result.explanation.append(f"  {backend}: {state} ({key} = {shown}, {result.where(key)}){_literal(value, key)}.")
    return states


def override_sources(
    paths: Sequence[Path | str],
    *,
    kind: str | None = None,
    mode: str | None = None,
    milvus_version: str | None = None,
    environment: dict[str, str] | None = None,
    etcd_url: str | None = None,
    etcd_root: str | None = None,
) -> tuple[dict[str, str] | None, EtcdConfig | None]:
    """(env, EtcdConfig) for resolve(); the etcd root defaults to the yaml's etcd.rootPath, as Milvus's."""
    etcd = None
    if etcd_url:
        if etcd_root is None:
            etcd_root = resolve(paths, kind=kind, mode=mode, milvus_version=milvus_version).value("etcd.rootPath")
        etcd = EtcdConfig(etcd_url, etcd_root or DEFAULT_ETCD_ROOT)
    return environment, etcd


def _select(result: Resolution, *, layout_has_woodpecker: bool) -> None:
    """Milvus's mustSelectMQType, recording each step."""
    explanation = result.explanation
    version = result.version
    if version is not None and version < V2_3:
        _select_before_2_3(result)
        return
    origin = result.origin("mq.type")
    # written but empty (`type:`, `type: ~`, MQ_TYPE="", an empty etcd value): Milvus reads "", not the default
    # (the key is present; paramtable falls back to the default only for a missing key: param_item.go getWithRaw)
    mq_type = "" if origin.source != "default" and not origin.value else (origin.value or "default")
    result.mq_type = mq_type
    explanation.append(f"mq.type = {mq_type} ({result.where('mq.type')}){_literal(mq_type, 'mq.type')}.")
    woodpecker_known = (version is not None and BACKENDS["woodpecker"].available(version)) or (
        version is None and layout_has_woodpecker
    )
    states = _backend_states(result, woodpecker_known)
    valid = valid_mq_types(version) if version else tuple(dict.fromkeys(valid_mq_types(None) + ("woodpecker",)))
    if mq_type != "default":
        if mq_type not in valid:
            invalid = PANIC_INVALID_WAL if version is not None and version >= V2_6 else PANIC_INVALID
            result.panic = result.fails = invalid.format(as_error_prints(mq_type))
            empty = (
                " An empty value is a value: Milvus does not fall back to the default (docker compose writes an empty "
                "MQ_TYPE for `MQ_TYPE: ${MQ_TYPE}` when the shell has none)."
                if not mq_type
                else ""
            )
            explanation.append(
                f"{mq_type!r} is not a valid mq.type"
                + (f" for {result.milvus_version}" if version else "")
                + f" (valid: {', '.join(valid)}): Milvus panics at startup: `{result.panic}`.{empty}"
            )
            return
        if result.mode != STANDALONE and is_embedded(mq_type):
            result.panic = result.fails = PANIC_STANDALONE_ONLY
            explanation.append(f"{mq_type} works in standalone only: Milvus panics at startup: `{result.panic}`.")
            return
        if mq_type in FAILS_EMPTY and not states.get(mq_type):
            _fails_empty(result, mq_type)
            return
        result.effective_mq = mq_type
        explanation.append(
            f"An explicit mq.type is used as is: Milvus starts {mq_type}; the priority order and "
            "the other backends' settings do not matter."
        )
        explanation.append(IF_IT_FAILS)
        return
    order = default_order(result.mode, version)
    if version is None and layout_has_woodpecker:
        order += ("woodpecker",)
    explanation.append(
        f"mq.type default: the {result.mode} priority order is {' > '.join(order)}"
        " (natsmq never takes part in default, PR #26791, whatever the comment in milvus.yaml says)."
    )
    chosen = next((backend for backend in order if states.get(backend)), None)
    if chosen is not None:
        result.effective_mq = chosen
        explanation.append(f"Milvus starts {chosen}: the first enabled backend in that order.")
        explanation.append(IF_IT_FAILS)
        return
    result.panic = result.fails = PANIC_NOTHING
    explanation.append(f"No backend in that order is enabled: Milvus panics at startup: `{PANIC_NOTHING}`.")


def as_error_prints(value: str) -> str:
    """A value as it appears in Milvus's panic message. Milvus builds its errors with github.com/cockroachdb/errors
    (`errors.Newf`), which formats each argument through cockroachdb/redact, and redact trims final spaces and
    newlines from it (internal/escape/escape.go, `InternalEscapeBytes(..., strip)`). Seen on 2.3.5: mq.type
    `" natsmq "` panics `mq type  natsmq is invalid`; the check itself uses the value untrimmed."""
    return value.rstrip(" \n")


def _literal(value: str | None, key: str) -> str:
    """What an explanation adds about a `${VAR}` in a deciding value: Milvus substitutes nothing (placeholders.py)."""
    found = placeholders.find(value)
    if not found:
        return ""
    shown = placeholders.shown(value or "", key)
    return f"; a placeholder, which Milvus does not substitute: Milvus would use the literal string {shown!r}"


def _select_before_2_3(result: Resolution) -> None:
    """Milvus 2.0-2.2 has neither mq.type nor natsmq: its dependency factory (DefaultFactory.Init in
    internal/util/dependency/factory.go, 2.2) runs rocksmq in standalone when rocksmq.path is set, else
    Pulsar when pulsar.address is set, else Kafka when kafka.brokerList is."""
    order = default_order(result.mode, result.version)
    result.explanation.append(
        f"Milvus {result.milvus_version} chooses by mode and by which address is set: in {result.mode} "
        f"the first of {' > '.join(order)} whose key is set."
    )
    states = _backend_states(result, woodpecker_known=False)
    chosen = next((backend for backend in order if states.get(backend)), None)
    if chosen is not None:
        result.effective_mq = chosen
        result.explanation.append(f"Milvus starts {chosen}.")
        return
    result.panic = result.fails = PANIC_NOTHING_BEFORE_2_3[result.mode]
    result.explanation.append(f"None is set: Milvus panics at startup: `{result.panic}`.")


def _fails_empty(result: Resolution, mq_type: str) -> None:
    """An explicit backend with its enabling key empty: Milvus tries it and fails."""
    message, how = FAILS_EMPTY[mq_type]
    key = BACKENDS[mq_type].enabled_by
    result.attempted_mq, result.fails = mq_type, message
    if how:
        result.panic = message
        result.explanation.append(
            f"An explicit mq.type is used as is, but {key} is empty: Milvus logs "
            f"mqType={mq_type}, then stops at startup ({how} `{message}`)."
        )
    else:
        result.explanation.append(
            f"An explicit mq.type is used as is, but {key} is empty: Milvus logs "
            f"mqType={mq_type} and reports healthy, but cannot reach any broker "
            f"(`{message}`): every collection operation times out."
        )
