"""Reading Prometheus text back in the tests, with prometheus_client's own parser (what a scraper does)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.paths import SAMPLES
from tests.helpers.servers import free_port


def samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Every sample by name (a counter's under its _total name): its labels and value."""
    from prometheus_client.parser import text_string_to_metric_families

    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return found


def value(text: str, name: str, **labels: str) -> float:
    """The one sample of `name` whose labels include `labels`."""
    matching = [v for found, v in samples(text).get(name, []) if labels.items() <= found.items()]
    assert len(matching) == 1, f"{name}{labels}: {matching}"
    return matching[0]


def sample_config(folder: Path, sample: str = "milvus-2.3-standalone-rocksmq.yaml", etcd: str = "") -> Path:
    """A shipped sample config with mq.type written out, its natsmq folder in `folder`, and its etcd where none
    answers unless `etcd` is given."""
    folder.mkdir(parents=True, exist_ok=True)
    endpoint = etcd.removeprefix("http://") if etcd else f"127.0.0.1:{free_port()}"
    mq = "natsmq" if "natsmq" in sample else "rocksmq"
    text = (SAMPLES / sample).read_text().replace("localhost:2379", endpoint)
    text = text.replace("/var/lib/milvus/nats", str(folder / "nats-absent"))
    path = folder / "milvus.yaml"
    path.write_text(text.replace("\n  type: default\n", f"\n  type: {mq}\n"))
    return path
