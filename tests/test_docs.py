"""The docs hold together: links and anchors resolve, the README's test command is the one CI runs, and
every claim about how Milvus picks its MQ cites a conformance case whose recorded outcome says the same."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers.conformance import compare
from tests.helpers.conformance.variants import Variant

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
CLAIM_ID = re.compile(r"\bC(\d+)\b")


def _outside_code(text: str) -> str:
    """The text without fenced blocks and inline code, where brackets are not links."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return re.sub(r"`[^`\n]*`", "", text)


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as dashes, repeats numbered."""
    seen: dict[str, int] = {}
    anchors = set()
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.MULTILINE | re.DOTALL)
    for heading in re.findall(r"^#{1,6} (.+?)\s*$", text, flags=re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _links(page: Path) -> list[str]:
    return [t for t in LINK.findall(_outside_code(page.read_text())) if not re.match(r"^[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_and_anchors_resolve(page):
    broken = []
    for target in _links(page):
        file_part, _, anchor = target.partition("#")
        path = (page.parent / file_part).resolve() if file_part else page
        if not path.exists():
            broken.append(f"{target}: no file {path}")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{target}: no heading #{anchor} in {path.name}")
    assert not broken, f"{page.name}: " + "; ".join(broken)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_test_path_the_docs_name_exists(page):
    """Paths like `tests/cli/test_config.py` or `python -m pytest tests/e2e/...` follow the test layout."""
    found = {path.rstrip(".") for path in re.findall(r"\btests/[\w./*-]*", page.read_text())}
    named = {path for path in found if "*" not in path}  # globs like tests/test_*.py name no one file
    assert [path for path in sorted(named) if not (ROOT / path).exists()] == []


def test_every_docs_page_is_reachable_from_the_readme():
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in _links(ROOT / "README.md")}
    assert {p.resolve() for p in DOCS.glob("*.md")} <= linked


def test_readme_is_the_front_door_and_its_test_command_is_the_one_ci_runs():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    ci = (ROOT / ".ci" / "run").read_text()
    command = ci.split("# The README's test command, verbatim:\n", 1)[1].strip().splitlines()[0]
    assert f"```bash\n{command}\n```" in readme
    assert (
        "```bash\npython3 -m venv .venv && . .venv/bin/activate && pip install -e '.[sandbox]' && mqctl sandbox rehearse\n```"
        in readme
    )


def _claims() -> list[tuple[str, str, list[str]]]:
    """(claim id, outcome, variant ids) for each row of the claims table in docs/conformance.md."""
    text = (DOCS / "conformance.md").read_text().split("\n## Claims\n", 1)[1]
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"C\d+", cells[0]):
            rows.append((cells[0], cells[2], re.findall(r"`([^`]+)`", cells[3])))
    return rows


def _matches(outcome: str, binary: dict) -> bool:
    """Does `starts MQ` / `[tries MQ, ]fails "part of the message"` say what the binary recorded?"""
    started = re.fullmatch(r"starts (\w+)", outcome)
    if started:
        return binary.get("starts") == started.group(1) and "fails" not in binary
    failed = re.fullmatch(r'(?:tries (\w+), )?fails "(.+)"', outcome)
    assert failed, f"unreadable outcome {outcome!r}"
    return failed.group(2) in binary.get("fails", "") and binary.get("attempted") == failed.group(1)


def _variant(variant_id: str) -> Variant:
    params = dict(part.split("=", 1) for part in variant_id.split())
    variant = Variant(**params)
    assert variant.name == variant_id, f"{variant_id!r} is not a variant id (want {variant.name!r})"
    return variant


def test_every_claim_cites_recorded_variants_with_its_outcome():
    recorded = {Variant(**r["params"]): r["binary"] for r in compare.load_fixture()["variants"]}
    claims = _claims()
    assert len({c for c, _, _ in claims}) >= 14
    wrong = []
    for claim, outcome, ids in claims:
        assert ids, f"{claim} cites no variant"
        for variant_id in ids:
            variant = _variant(variant_id)
            if variant not in recorded:
                wrong.append(f"{claim}: {variant_id} is not in {compare.FIXTURE.name}")
            elif not _matches(outcome, recorded[variant]):
                wrong.append(f"{claim}: {variant_id} recorded {recorded[variant]}, the docs say {outcome}")
    assert not wrong, "\n".join(wrong)


def test_claims_cited_in_the_docs_are_in_the_table():
    table = {c for c, _, _ in _claims()}
    section = (DOCS / "config.md").read_text().split("## How Milvus picks its MQ", 1)[1].split("\n## ", 1)[0]
    cited = {f"C{n}" for n in CLAIM_ID.findall(section)}
    assert cited == table, f"cited but not in the table: {cited - table}; in the table, never cited: {table - cited}"


def test_the_outcome_reader_tells_a_wrong_claim():
    binary = {"fails": "fail to init rocksmq", "attempted": "rocksmq"}
    assert _matches('tries rocksmq, fails "fail to init"', binary)
    assert not _matches('fails "fail to init"', binary)
    assert not _matches("starts rocksmq", binary)
    assert not _matches("starts natsmq", {"starts": "rocksmq"})


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_sources_are_milvus_references_not_documents_outside_the_repository(page):
    assert not re.search(r"facts ?§", page.read_text()), f"{page.name} cites a document outside the repository"


def test_the_layers_in_development_md_are_the_packages():
    """docs/development.md draws the layers; every package of mqctl appears in the drawing, and every layer
    the drawing names is a contract import-linter checks."""
    import tomllib

    text = (DOCS / "development.md").read_text()
    drawing = text.split("## Layout", 1)[1].split("```", 2)[1]
    packages = {p.parent.name for p in (ROOT / "mqctl").glob("*/__init__.py")}
    assert packages <= set(re.findall(r"\b(\w+)/", drawing)), packages - set(re.findall(r"\b(\w+)/", drawing))
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["id"] == "layers")["layers"]
    named = {part.strip().removeprefix("mqctl.") for layer in layers for part in layer.split("|")}
    assert named <= packages


def _migrate_finding_codes() -> set[str]:
    """Every code mqctl/migrate gives a finding: Finding(code, …), _check(level, code, …), add(severity, code, …)."""
    import ast

    codes = set()
    for path in (ROOT / "mqctl" / "migrate").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = str(getattr(node.func, "id", None) or getattr(node.func, "attr", ""))
            where = {"Finding": 0, "_check": 1, "add": 1}.get(name)
            code = node.args[where] if where is not None and len(node.args) > where else None
            if isinstance(code, ast.Constant) and isinstance(code.value, str) and re.fullmatch(r"[a-z-]+", code.value):
                codes.add(code.value)
    return codes


def test_json_lists_exactly_the_codes_migrate_plan_gives():
    listed = re.search(r"hint}`; codes[^`]*`([^`]*)`", (DOCS / "json.md").read_text())
    assert listed, "docs/json.md lists no migrate plan codes"
    emitted = _migrate_finding_codes()
    assert len(emitted) > 30  # the scan still finds them
    assert set(listed.group(1).split()) == emitted


def test_an_empty_nats_store_dir_lands_where_the_docs_say(tmp_path):
    """docs/config.md and MQ110 say where an empty natsmq storeDir puts JetStream, citing Milvus's source (it hands
    storeDir to nats-server as is); what nats-server then does is checked here on the real binary."""
    import os
    import subprocess
    import time

    from mqctl.config.rules.catalog import RULE_BY_CODE
    from mqctl.mq.nats.server import nats_server_binary
    from tests.helpers.servers import free_port

    text = (DOCS / "config.md").read_text()
    assert "pkg/mq/msgstream/mqwrapper/nmq/nmq_server.go" in text and "seen on 2.3.5" not in RULE_BY_CODE["MQ110"].why
    assert "HighPriority" in text and "milvus #50217" in text.split("## Overrides, mode and version", 1)[1][:800]
    proc = subprocess.Popen(
        [str(nats_server_binary()), "-js", "-a", "127.0.0.1", "-p", str(free_port())],
        env={**os.environ, "TMPDIR": str(tmp_path)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while not (tmp_path / "nats" / "jetstream").is_dir() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait()
    assert (tmp_path / "nats" / "jetstream").is_dir()
