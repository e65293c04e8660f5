"""What a replay of the fixtures must give: the rows the fixture script inserted and deleted
(tests/fixtures/expected.json), and the same shape read back from replayed Spark rows."""

from __future__ import annotations

import json
from typing import Any

from tests.helpers.paths import FIXTURES

EXPECTED: dict[str, Any] | None = (
    json.loads((FIXTURES / "expected.json").read_text()) if (FIXTURES / "expected.json").exists() else None
)


def _expected() -> dict[str, Any]:
    assert EXPECTED is not None, "tests/fixtures not written yet (python tests/helpers/make_fixtures.py)"
    return EXPECTED


def expected_inserts(phase: str, collection: str) -> dict[Any, dict[str, Any]]:
    """pk -> inserted row of one phase, values as Spark returns them (JSON and $meta parsed, binary as bytes)."""
    from mqctl.replay.reader.schema import type_key

    expected = _expected()
    info = expected["collections"][collection]
    pk = info["primary_key"]
    declared = {f["name"]: f["type"] for f in info["fields"]}
    rows = {}
    for batch in expected["inserts"]:
        if batch["phase"] != phase or batch["collection"] != collection:
            continue
        for row in batch["rows"]:
            value = {
                name: bytes.fromhex(row[name]) if type_key(kind) == "BINARYVECTOR" else row[name]
                for name, kind in declared.items()
            }
            if info["enable_dynamic_field"]:
                value["$meta"] = {k: v for k, v in row.items() if k not in declared}
            rows[row[pk]] = value
    return rows


def expected_deletes(phase: str, collection: str) -> list[Any]:
    return sorted(
        pk for d in _expected()["deletes"] if d["phase"] == phase and d["collection"] == collection for pk in d["pks"]
    )


def replayed(rows: Any, collection: str) -> tuple[dict[Any, dict[str, Any]], list[Any]]:
    """(pk -> inserted row, sorted deleted pks) from replayed Spark rows; no pk may come twice."""
    from mqctl.replay.reader.schema import type_key

    info = _expected()["collections"][collection]
    pk, declared = info["primary_key"], {f["name"]: f["type"] for f in info["fields"]}
    inserts: dict[Any, dict[str, Any]] = {}
    deletes = []
    for row in rows:
        data = row.asDict()
        if data["_op"] == "delete":
            deletes.append(data[pk])
            assert all(data[name] is None for name in declared if name != pk)
            continue
        assert data[pk] not in inserts, f"pk {data[pk]} replayed twice"
        value = {}
        for name, kind in declared.items():
            value[name] = json.loads(data[name]) if type_key(kind) == "JSON" else data[name]
            if type_key(kind) == "BINARYVECTOR":
                value[name] = bytes(data[name])
        if info["enable_dynamic_field"]:
            value["$meta"] = json.loads(data["$meta"])
        inserts[data[pk]] = value
    return inserts, sorted(deletes)
