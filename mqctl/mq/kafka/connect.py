"""How mqctl reaches a Kafka cluster: the bootstrap list, SASL and TLS, as options or as Milvus's `kafka.*` config
derives them, turned into one librdkafka configuration (confluent-kafka).

The derivation follows Milvus's own (pkg/mq/msgstream/mqwrapper/kafka/kafka_client.go `GetBasicConfig`, 2.3–2.5):
`kafka.brokerList` -> bootstrap.servers, `kafka.securityProtocol` -> security.protocol, `kafka.saslMechanisms`/
`saslUsername`/`saslPassword` -> sasl.* (only when both the user and the password are set; one without the other
makes Milvus panic), `kafka.ssl.enabled` -> ssl.certificate.location/key.location/ca.location from
`kafka.ssl.tlsCert`/`tlsKey`/`tlsCaCert` (and `tlsKeyPassword`). The password never leaves this module's objects:
their repr hides it and no message quotes it.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mqctl.errors import InputError

if TYPE_CHECKING:
    from mqctl.config.resolve.resolution import Resolution

BROKER_LIST_KEY = "kafka.brokerList"
SECURITY_PROTOCOLS = ("plaintext", "ssl", "sasl_plaintext", "sasl_ssl")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI", "OAUTHBEARER")


@dataclass(frozen=True)
class KafkaAccess:
    """Where and how to reach the brokers."""

    bootstrap: str  # host:port[,host:port...]
    security_protocol: str | None = None
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    ssl_ca: str | None = None
    ssl_cert: str | None = None
    ssl_key: str | None = None
    ssl_key_password: str | None = field(default=None, repr=False)
    timeout: float = 5.0  # seconds for each request (metadata, offsets, configs) and for the first connection
    source: str = "--kafka"  # where the bootstrap came from (an option, or a config file and line)

    def __post_init__(self) -> None:
        check_bootstrap(self.bootstrap, self.source)
        if not (math.isfinite(self.timeout) and 0 < self.timeout <= 3600):
            raise InputError(f"--timeout {self.timeout:g} is not a number of seconds above 0 to 3600")
        protocol = (self.security_protocol or "").lower()
        if protocol and protocol not in SECURITY_PROTOCOLS:
            raise InputError(
                f"security protocol {self.security_protocol!r} ({self.source}) is not one Kafka knows",
                hint=f"use one of {', '.join(SECURITY_PROTOCOLS)}",
            )
        if bool(self.sasl_username) != bool(self.sasl_password):
            raise InputError(
                "SASL needs a user and a password together (Milvus panics on one without the other)",
                hint="set both --kafka-sasl-user and MQCTL_KAFKA_PASSWORD (kafka.saslUsername/saslPassword), or neither",
            )

    def client_config(self) -> dict[str, Any]:
        """The librdkafka settings every mqctl client (admin, consumer, producer) starts from. librdkafka logs
        nothing on its own here: its errors reach mqctl through `error_cb` and are reported once."""
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "socket.timeout.ms": max(1000, int(self.timeout * 1000)),
            "socket.connection.setup.timeout.ms": max(1000, int(self.timeout * 1000)),
            "reconnect.backoff.max.ms": 1000,
            "logger": _QUIET,
        }
        if self.security_protocol:
            config["security.protocol"] = self.security_protocol.lower()
        if self.sasl_username and self.sasl_password:
            config["sasl.mechanisms"] = self.sasl_mechanism or "PLAIN"
            config["sasl.username"] = self.sasl_username
            config["sasl.password"] = self.sasl_password
        for key, value in (
            ("ssl.ca.location", self.ssl_ca),
            ("ssl.certificate.location", self.ssl_cert),
            ("ssl.key.location", self.ssl_key),
            ("ssl.key.password", self.ssl_key_password),
        ):
            if value:
                config[key] = value
        return config


_QUIET = logging.getLogger("mqctl.kafka.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def check_bootstrap(bootstrap: str, where: str = "--kafka") -> str:
    """host:port[,host:port...] (a `kafka://` or `PLAINTEXT://` scheme is accepted, as brokerList allows none)."""
    hosts = [part.strip() for part in bootstrap.split(",")]
    for host in hosts:
        address = host.split("://", 1)[-1]
        name, _, port = address.rpartition(":")
        if not name or not port.isdigit() or not 0 < int(port) < 65536:
            raise InputError(
                f"{where}: {host!r} is not a broker address",
                hint="pass HOST:PORT, several separated by commas (e.g. 127.0.0.1:9092)",
            )
    return bootstrap


def access_from_config(resolution: Resolution, timeout: float = 5.0) -> KafkaAccess:
    """The access Milvus's `kafka.*` settings describe (GetBasicConfig's rules, above)."""
    bootstrap = (resolution.value(BROKER_LIST_KEY) or "").strip()
    if not bootstrap:
        raise InputError(
            f"{BROKER_LIST_KEY} is empty ({resolution.where(BROKER_LIST_KEY)}), so the config names no Kafka",
            hint="set kafka.brokerList, or pass --kafka HOST:PORT",
        )

    def value(key: str) -> str | None:
        return (resolution.value(key) or "").strip() or None

    ssl = (value("kafka.ssl.enabled") or "").lower() == "true"
    return KafkaAccess(
        bootstrap,
        security_protocol=value("kafka.securityProtocol"),
        sasl_mechanism=value("kafka.saslMechanisms"),
        sasl_username=value("kafka.saslUsername"),
        sasl_password=value("kafka.saslPassword"),
        ssl_ca=value("kafka.ssl.tlsCaCert") if ssl else None,
        ssl_cert=value("kafka.ssl.tlsCert") if ssl else None,
        ssl_key=value("kafka.ssl.tlsKey") if ssl else None,
        ssl_key_password=value("kafka.ssl.tlsKeyPassword") if ssl else None,
        timeout=timeout,
        source=f"{BROKER_LIST_KEY} ({resolution.where(BROKER_LIST_KEY)})",
    )
