"""Each validation rule fires on the configuration it is about, and only there."""

from __future__ import annotations

import socket
import textwrap
from pathlib import Path

import pytest

from mqctl.config.resolve.resolution import resolve
from mqctl.config.rules.report import RULES, exit_code, validate
from tests.helpers.paths import SAMPLES


def findings_for(tmp_path: Path, text: str, name: str = "milvus.yaml", **options):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    check_host = options.pop("check_host", False)
    return validate(resolve([path], **options), check_host=check_host)


def codes(findings) -> list[str]:
    return [f.code for f in findings]


def test_rule_codes_are_unique_and_explained():
    assert len({rule.code for rule in RULES}) == len(RULES)
    assert all(rule.why and rule.title and rule.severity in ("error", "warning", "info") for rule in RULES)


def test_misspelled_mq_type_suggests_nearest(tmp_path):
    found = findings_for(tmp_path, "mq:\n  type: rocksMQ\n", milvus_version="2.4.0")
    mq100 = next(f for f in found if f.code == "MQ100")
    assert (mq100.severity, mq100.key, mq100.line) == ("error", "mq.type", 2)
    assert "rocksmq" in mq100.hint and "mq type rocksMQ is invalid" in mq100.message
    assert exit_code(found) == 1


def test_standalone_only_in_cluster(tmp_path):
    found = findings_for(tmp_path, "mq:\n  type: natsmq\n", mode="cluster")
    assert "MQ101" in codes(found) and "%!s(MISSING)" in found[0].message


def test_natsmq_versions(tmp_path):
    text = "mq:\n  type: natsmq\n"
    removed = findings_for(tmp_path, text, milvus_version="2.6.0")
    assert codes(removed)[0] == "MQ102" and "before upgrading" in removed[0].hint
    assert "MQ103" in codes(findings_for(tmp_path, text, milvus_version="2.5.3"))
    assert not {"MQ102", "MQ103"} & set(codes(findings_for(tmp_path, text, milvus_version="2.3.5")))


def test_default_resolving_to_nothing(tmp_path):
    found = findings_for(tmp_path, "rocksmq:\n  path: ''\npulsar:\n  address: ''\n", milvus_version="2.3.0")
    assert "MQ104" in codes(found)


def test_explicit_backend_without_address(tmp_path):
    assert "MQ105" in codes(findings_for(tmp_path, "mq:\n  type: kafka\n", milvus_version="2.4.0"))
    assert "MQ105" not in codes(findings_for(tmp_path, "mq:\n  type: kafka\n", milvus_version="2.5.0"))


def test_natsmq_store_port_and_payload(tmp_path):
    found = findings_for(
        tmp_path,
        """\
        mq:
          type: natsmq
        natsmq:
          server:
            storeDir: ""
            port: 0
            maxPayload: 4294967296
        """,
    )
    assert {"MQ110", "MQ111", "MQ114"} <= set(codes(found))
    random_port = findings_for(
        tmp_path, "mq:\n  type: natsmq\nnatsmq:\n  server:\n    port: -1\n    maxPayload: 1048576\n"
    )
    assert {"MQ112", "MQ113"} <= set(codes(random_port))
    assert "random" in next(f for f in random_port if f.code == "MQ112").message


def test_unparsable_numbers_and_disabled_retention(tmp_path):
    found = findings_for(
        tmp_path,
        """\
        mq:
          type: natsmq
        natsmq:
          server:
            retention:
              maxAge: 3d
        rocksmq:
          retentionSizeInMB: 0
        """,
    )
    mq115 = next(f for f in found if f.code == "MQ115")
    assert mq115.line == 6 and "no age limit" in mq115.message
    assert [f.key for f in found if f.code == "MQ116"] == ["rocksmq.retentionSizeInMB"]


def test_unknown_keys_with_did_you_mean(tmp_path):
    found = findings_for(
        tmp_path,
        """\
        mq:
          typ: natsmq
        natsmq:
          server:
            storDir: /x
          retention:
            maxAge: 10
        other:
          anything: 1
        """,
    )
    hints = {f.key: f.hint for f in found if f.code == "MQ120"}
    assert hints["mq.typ"] == "did you mean mq.type?"
    assert hints["natsmq.server.storDir"] == "did you mean natsmq.server.storeDir?"
    assert hints["natsmq.retention.maxAge"] == "did you mean natsmq.server.retention.maxAge?"
    assert "other.anything" not in hints


def test_several_backends_is_info_naming_the_winner():
    found = validate(resolve([SAMPLES / "milvus-2.3-standalone-natsmq.yaml"]))
    mq121 = next(f for f in found if f.code == "MQ121")
    assert mq121.severity == "info" and "Milvus starts natsmq" in mq121.message
    assert exit_code(found) == 0


def test_pulsar_address_with_scheme(tmp_path):
    found = findings_for(tmp_path, "pulsar:\n  address: pulsar://broker:6650\n")
    assert "MQ122" in codes(found)
    assert "MQ122" not in codes(validate(resolve([SAMPLES / "milvus-cluster-pulsar.yaml"], mode="cluster")))


def test_operator_conflicts(tmp_path):
    found = findings_for(
        tmp_path,
        """\
        apiVersion: milvus.io/v1beta1
        kind: Milvus
        metadata: {name: m}
        spec:
          components:
            enableRollingUpdate: true
          dependencies:
            msgStreamType: rocksmq
            pulsar:
              inCluster: {}
          config:
            mq:
              type: kafka
        """,
        "cr.yaml",
    )
    assert {"MQ130", "MQ131", "MQ132"} <= set(codes(found))
    assert next(f for f in found if f.code == "MQ130").line == 13


def test_helm_mismatches(tmp_path):
    found = findings_for(
        tmp_path,
        """\
        cluster:
          enabled: false
        standalone:
          messageQueue: pulsar
        pulsar:
          enabled: false
        kafka:
          enabled: true
        """,
        "values.yaml",
    )
    assert [f.severity for f in found if f.code == "MQ140"] == ["error", "warning"]
    user_yaml = findings_for(
        tmp_path,
        "cluster:\n  enabled: false\nextraConfigFiles:\n  user.yaml: |\n    mq:\n      type: natsmq\n",
        "values2.yaml",
    )
    assert next(f for f in user_yaml if f.code == "MQ140").line == 6


def test_env_override_shadowing_yaml():
    res = resolve([SAMPLES / "user-2.5-standalone-natsmq.yaml"], env={"NATSMQ_SERVER_PORT": "4333"})
    shadow = next(f for f in validate(res) if f.code == "MQ150")
    assert shadow.line == 9 and "NATSMQ_SERVER_PORT" in shadow.message


def test_strict_makes_warnings_fail():
    found = validate(resolve([SAMPLES / "operator-cr-natsmq.yaml"]))
    assert codes(found) == ["MQ103"]
    assert exit_code(found) == 0 and exit_code(found, strict=True) == 1
    strict = validate(resolve([SAMPLES / "operator-cr-natsmq.yaml"]), strict=True)
    assert [f.severity for f in strict] == ["error"] and exit_code(strict) == 1


def test_host_checks(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        readonly = tmp_path / "ro"
        readonly.mkdir(mode=0o500)
        found = findings_for(
            tmp_path,
            f"""\
            mq:
              type: natsmq
            natsmq:
              server:
                port: {port}
                storeDir: {readonly}/nats
                maxFileStore: {2**62}
            """,
            check_host=True,
        )
    expected = {"HOST201", "HOST203"} | (set() if __import__("os").geteuid() == 0 else {"HOST202"})
    assert expected <= set(codes(found))
    assert "HOST201" not in codes(
        findings_for(tmp_path, "mq:\n  type: natsmq\nnatsmq:\n  server:\n    port: -1\n", check_host=True)
    )


@pytest.mark.parametrize(
    "sample, clean",
    [
        ("milvus-2.3-standalone-rocksmq.yaml", True),
        ("milvus-2.3-standalone-natsmq.yaml", True),
        ("user-2.5-standalone-natsmq.yaml", True),
        ("operator-cr-natsmq.yaml", True),
        ("helm-values-natsmq.yaml", True),
        ("broken-mq-config.yaml", False),
    ],
)
def test_samples(sample, clean):
    found = validate(resolve([SAMPLES / sample]))
    assert (exit_code(found) == 0) == clean


def test_natsmq_settings_with_default_type_are_ignored(tmp_path):
    found = findings_for(
        tmp_path,
        """\
        mq:
          type: default
        rocksmq:
          path: ""
        natsmq:
          server:
            storeDir: /data/nats
        """,
    )
    mq106 = next(f for f in found if f.code == "MQ106")
    # a whole milvus.yaml: pulsar.address takes its empty code default, so nothing is enabled (seen on 2.3.5)
    assert "Milvus does not start" in mq106.message and mq106.line == 7
    overlay = findings_for(
        tmp_path,
        'mq:\n  type: default\nrocksmq:\n  path: ""\nnatsmq:\n  server:\n    storeDir: /data/nats\n',
        name="user.yaml",
    )
    assert "Milvus starts pulsar" in next(f for f in overlay if f.code == "MQ106").message  # stock pulsar.address
    stock = validate(resolve([SAMPLES / "milvus-2.3-standalone-rocksmq.yaml"]))
    assert "MQ106" not in codes(stock)


def test_override_findings_never_show_secrets(tmp_path):
    path = tmp_path / "milvus.yaml"
    path.write_text("kafka:\n  brokerList: b:9092\n  saslPassword: old-secret\n")
    res = resolve([path], env={"KAFKA_SASLPASSWORD": "new-secret"})
    text = repr(validate(res)) + "\n".join(res.explanation)
    assert "MQ150" in text and "KAFKA_SASLPASSWORD" in text
    assert "new-secret" not in text and "old-secret" not in text


def test_the_rules_docstring_names_every_module_validate_runs():
    import sys

    from mqctl.config.resolve import pinning
    from mqctl.config.rules import host as hostcheck
    from mqctl.config.rules import report as rules
    from mqctl.config.rules.context import CONTEXT_CHECKS
    from mqctl.config.rules.deploy import DEPLOY_CHECKS
    from mqctl.config.rules.mq import MQ_CHECKS

    checks = (*MQ_CHECKS, *DEPLOY_CHECKS, *CONTEXT_CHECKS, pinning.findings, hostcheck.host_checks)
    files = {Path(sys.modules[check.__module__].__file__ or "").name for check in checks}
    assert rules.__doc__ and {name for name in files if name not in rules.__doc__} == set()
