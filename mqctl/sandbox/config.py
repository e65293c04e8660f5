"""A sandbox's files on creation: Milvus's config rendered once by the ``milvus`` package, then
every listener moved to a free port so several sandboxes can run side by side."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mqctl.errors import PreconditionError
from mqctl.host.ports import restartable_ports

CONFIG_REL = "configs/milvus.yaml"
ETCD_CONFIG_REL = "configs/etcd.yaml"
NATS_STORE_REL = "data/natsmq"

# Port keys of the package's template, plus the listeners the template leaves fixed.
TEMPLATE_PORT_KEYS = (
    "proxy_port",
    "proxy_internal_port",
    "root_coord_port",
    "query_coord_port",
    "query_node_port",
    "index_coord_port",
    "index_node_port",
    "data_coord_port",
    "data_node_port",
    "etcd_port",
)
EXTRA_PORT_KEYS = ("etcd_peer_port", "metrics_port", "natsmq_port")
# The ports mqctl reads by name from a sandbox it did not just create (URIs, health, etcd listeners).
NAMED_PORT_KEYS = ("proxy_port", "metrics_port", "etcd_port", "etcd_peer_port")
ETCD_MODES = ("embedded", "external")  # inside Milvus | an etcd server the sandbox runs


@dataclass(frozen=True)
class SandboxState:
    """What `sandbox.json` holds: the listeners' ports (fixed at creation), the etcd mode, the package version."""

    ports: dict[str, int]
    etcd: str = "embedded"
    milvus: str | None = None
    # Kafka's bootstrap given with `--kafka` (None: the sandbox's own broker, on `kafka_port`, or no Kafka at all)
    kafka: str | None = None

    @property
    def own_kafka(self) -> bool:
        """The sandbox runs its own Kafka broker (created with `--mq kafka` and no `--kafka`)."""
        return "kafka_port" in self.ports

    @property
    def kafka_bootstrap(self) -> str | None:
        """The Kafka the sandbox was created on: its own broker's or the one given with `--kafka`."""
        return f"127.0.0.1:{self.ports['kafka_port']}" if self.own_kafka else self.kafka

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: object, path: Path) -> SandboxState:
        """The state read from `path`, or PreconditionError naming the first key that is missing or wrong."""

        def wrong(key: str, what: str) -> PreconditionError:
            return PreconditionError(
                f"{path}: {key} {what}",
                hint=f"fix {key} there, or create a new sandbox with `mqctl sandbox up --dir` in another folder",
            )

        if not isinstance(data, dict):
            raise wrong("the state", "is not a JSON object")
        ports = data.get("ports")
        if not isinstance(ports, dict):
            raise wrong("ports", "is missing or not an object")
        for key in dict.fromkeys([*NAMED_PORT_KEYS, *ports]):  # each named one, then every other one there
            port = ports.get(key)
            if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
                raise wrong(f"ports.{key}", f"is {port!r}, not a port 1-65535")
        etcd = data.get("etcd", "embedded")
        if etcd not in ETCD_MODES:
            raise wrong("etcd", f"is {etcd!r}, not {' or '.join(ETCD_MODES)}")
        version = data.get("milvus")
        if version is not None and not isinstance(version, str):
            raise wrong("milvus", f"is {version!r}, not a version")
        kafka = data.get("kafka")
        if kafka is not None and not isinstance(kafka, str):
            raise wrong("kafka", f"is {kafka!r}, not a HOST:PORT bootstrap")
        return cls(ports=dict(ports), etcd=etcd, milvus=version, kafka=kafka)


def render_config(directory: Path, mq: str, external_etcd: bool, kafka: str | None = None) -> SandboxState:
    """Render the config and unpack the binary into `directory`; returns the sandbox's state
    (the package version, the port of every listener, the etcd mode, the Kafka). On `mq` kafka without a
    `kafka` bootstrap the sandbox gets its own broker's two ports."""
    try:
        import milvus
    except ImportError as err:
        raise PreconditionError(
            "the `milvus` package (embedded Milvus 2.3.5) is not installed",
            hint="pip install 'mqctl[sandbox]' (Linux x86_64)",
        ) from err
    from mqctl.sandbox.kafka import KAFKA_PORT_KEYS

    port_keys = TEMPLATE_PORT_KEYS + EXTRA_PORT_KEYS + (KAFKA_PORT_KEYS if mq == "kafka" and kafka is None else ())
    port_map = dict(zip(port_keys, restartable_ports(len(port_keys))))
    directory.mkdir(parents=True, exist_ok=True)
    server_config = milvus.MilvusServerConfig(data_dir=str(directory), **{k: port_map[k] for k in TEMPLATE_PORT_KEYS})
    server_config.resolve()  # writes configs/milvus.yaml and glog.conf
    # The package's own helper that unpacks the Milvus binary and its libraries into DIR/bin.
    milvus._initialize_data_files(str(directory))
    (directory / "run").mkdir(exist_ok=True)
    _write_etcd_config(directory, port_map)
    state = SandboxState(
        ports=port_map, etcd="external" if external_etcd else "embedded", milvus=milvus.__version__, kafka=kafka
    )
    _finish_config(directory, port_map, mq, external_etcd, state.kafka_bootstrap)
    return state


def _write_etcd_config(directory: Path, ports: dict[str, int]) -> None:
    # The embedded etcd would listen on 2379/2380 whatever `etcd.endpoints` says; its own
    # config file (Milvus key `etcd.config.path`) moves both listeners.
    client, peer = f"http://127.0.0.1:{ports['etcd_port']}", f"http://127.0.0.1:{ports['etcd_peer_port']}"
    (directory / ETCD_CONFIG_REL).write_text(
        f"name: default\nlisten-client-urls: {client}\nadvertise-client-urls: {client}\n"
        f"listen-peer-urls: {peer}\ninitial-advertise-peer-urls: {peer}\ninitial-cluster: default={peer}\n"
    )


def _finish_config(
    directory: Path, ports: dict[str, int], mq: str, external_etcd: bool, kafka: str | None = None
) -> None:
    from ruamel.yaml import YAML

    config_path = directory / CONFIG_REL
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 1 << 16  # a long path stays on its key's line: a folded value breaks line-based edits and grep
    doc = yaml.load(config_path.read_text())
    doc["etcd"]["config"] = {"path": str(directory / ETCD_CONFIG_REL)}
    if external_etcd:
        doc["etcd"]["use"]["embed"] = False
        doc["etcd"]["endpoints"] = f"127.0.0.1:{ports['etcd_port']}"
    nats = doc["natsmq"]["server"]
    nats["port"] = ports["natsmq_port"]
    nats["storeDir"] = str(directory / NATS_STORE_REL)
    nats["monitor"]["logFile"] = str(directory / "logs" / "nats.log")
    doc["mq"]["type"] = mq
    if kafka is not None:  # the package's template has no `kafka:` section (only a commented example)
        doc["kafka"] = {"brokerList": kafka}
    # Restarts are what a sandbox is for. stop() kills Milvus (its graceful stop hangs), so its sessions stay
    # in etcd until their lease ends, and a restarted Milvus loads no collection before: 15 s, not 30.
    doc["common"]["session"]["ttl"] = 15
    # forceDeny reaches the proxies at the quota center's next round; migrate waits two rounds (1 s, not 3).
    doc["quotaAndLimits"]["quotaCenterCollectInterval"] = 1
    with config_path.open("w") as handle:
        yaml.dump(doc, handle)
