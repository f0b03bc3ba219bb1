"""The repository's documents against the code they describe: links lead to
files (and headings) that exist, every field, code, value and limit the code
knows is named, and the worked examples are what the project's own tools build
and compute. No database."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.conf import settings

from artifacts.lib import bundle_build, bundle_verify
from artifacts.lib.archive import DEFAULT_LIMITS
from artifacts.lib.bundle_sources import FOLDER_KINDS, MAX_STORED_PATH, TEMPLATE_KEYS
from artifacts.lib.manifest import (
    CACHES,
    KINDS,
    MAX_DSSE_BYTES,
    MAX_FILES,
    MAX_ITEMS,
    MAX_MANIFEST_BYTES,
    MAX_SIGNATURE_BYTES,
    PARSERS,
    SCHEMA_ID,
    STATS,
    Claim,
    Harness,
    HarnessOutput,
    Manifest,
    ManifestFile,
    Scenario,
    parse_manifest,
)
from artifacts.lib.problems import PROBLEM_CODES
from artifacts.lib.signatures import NAMESPACE, dsse
from artifacts.lib.signatures.sshkeys import load_private_key
from benchmarks.lib.parsers.model import UNIT_SUFFIXES
from benchmarks.lib.sandbox import STOP_REASONS, SandboxLimits
from benchmarks.lib.sandbox.command import harness_env
from config.celery import DEFAULT_QUEUE
from gates.lib.engine import (
    evaluate_plan,
    evaluation_bytes,
    plan_problems,
    results_problems,
)
from gates.lib.engine.validate import (
    DIRECTIONS,
    DRIFT_LEVELS,
    ON_HIGH_CV,
    RUN_STATUSES,
    STAGES,
)
from gates.lib.engine.validate import STATS as GATE_STATS
from tests.architecture.test_layout import APP_MODULES, APPS, LAYER_FOLDERS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
DOCUMENTS = sorted(
    [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *DOCS.glob("*.md")],
    key=lambda p: str(p),
)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(`{3,})")
TOP_LEVEL = frozenset(
    p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")
) - {"var", ".venv"}
REPO_PATH = re.compile(r"`((?:\.ci|[a-z_]+)/[A-Za-z0-9_./-]*)`")


def _text(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8")


def _outside_code(text: str) -> list[str]:
    """The lines of a Markdown text that are not inside fenced code blocks."""
    lines, fence = [], ""
    for line in text.splitlines():
        match = FENCE.match(line)
        if match and (not fence or match.group(1) == fence):
            fence = "" if fence else match.group(1)
            continue
        if not fence:
            lines.append(line)
    return lines


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to -."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    heads = [
        line.lstrip("#").strip()
        for line in _outside_code(path.read_text(encoding="utf-8"))
        if re.match(r"^#{1,6} ", line)
    ]
    return {_slug(h) for h in heads}


def _resolves(document: Path, target: str) -> bool:
    """A relative link names an existing file, and a heading of it if it says one."""
    name, _, fragment = target.partition("#")
    path = (document.parent / name).resolve() if name else document
    if not path.exists():
        return False
    return not fragment or path.suffix != ".md" or fragment in _anchors(path)


def _block_after(text: str, marker: str) -> str:
    """The content of the fenced block right after ``<!-- marker -->``."""
    match = re.search(
        rf"<!-- {re.escape(marker)} -->\n```[a-z]*\n(.*?)^```$",
        text,
        flags=re.DOTALL | re.MULTILINE,
    )
    assert match, f"no code block after <!-- {marker} -->"
    return match.group(1)


def _named(text: str, values: Iterable[str]) -> list[str]:
    """The values that ``text`` does not name in backticks."""
    return [v for v in values if f"`{v}`" not in text]


def _fields_named(text: str, names: Iterable[str]) -> list[str]:
    """The field names that ``text`` names neither as `name` nor as `parent.name`
    (`scenarios[].batch_size`)."""
    return [
        name
        for name in names
        if not re.search(rf"`(?:[\w\[\]]+\.)*{re.escape(name)}`", text)
    ]


def _size(value: int) -> str:
    """A byte count as the documents write it (``2 GiB``, ``64 KiB``)."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= size and value % size == 0:
            return f"{value // size} {unit}"
    return f"{value:,}"


# --- every document ------------------------------------------------------------------


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_document_links_lead_to_existing_files_and_headings(document: Path) -> None:
    targets = [
        target
        for line in _outside_code(document.read_text(encoding="utf-8"))
        for target in LINK.findall(line)
        if not re.match(r"^[a-z]+:", target)  # http:, https:, mailto:
    ]

    assert targets
    assert [t for t in targets if not _resolves(document, t)] == []


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_document_repository_paths_exist(document: Path) -> None:
    missing = [
        path
        for path in REPO_PATH.findall(document.read_text(encoding="utf-8"))
        if path.split("/")[0] in TOP_LEVEL | {".ci"}
        and not (ROOT / path.rstrip("/")).exists()
    ]

    assert missing == []


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_document_points_at_nothing_outside_the_repository(document: Path) -> None:
    text = document.read_text(encoding="utf-8")

    assert "../shared" not in text
    assert not re.search(r"\bDESIGN\b|STYLE\.md", text)
    assert not re.search(r"\bissues?\s*#?\d+|(?<![\w/&])#\d+\b", text, re.IGNORECASE)


def test_readme_links_every_document() -> None:
    readme = _text("README.md")

    for path in [*sorted(DOCS.glob("*.md")), ROOT / "CONTRIBUTING.md"]:
        assert f"]({path.relative_to(ROOT)})" in readme


# --- architecture --------------------------------------------------------------------


def test_architecture_names_every_app_queue_and_beat_task() -> None:
    text = _text("docs/architecture.md")
    apps = sorted(p.parent.name for p in ROOT.glob("*/apps.py"))
    tasks = [str(entry["task"]) for entry in settings.CELERY_BEAT_SCHEDULE.values()]

    assert _named(text, [f"{app}/" for app in apps]) == []
    assert _named(text, [DEFAULT_QUEUE, "pool.<name>", *tasks]) == []
    assert "gates → benchmarks → artifacts → procurement → accounts" in text


def test_architecture_picture_is_svg_naming_every_app() -> None:
    root = ET.parse(DOCS / "architecture.svg").getroot()  # noqa: S314 - our own file
    words = " ".join(
        t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")
    )
    apps = sorted(p.parent.name for p in ROOT.glob("*/apps.py"))

    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert [app for app in apps if app not in words] == []
    assert "artifacts/lib" in words
    assert "gates/lib/engine" in words


ANATOMY = "## One anatomy for every app"


def _section(text: str, heading: str) -> str:
    """The lines of ``text`` from ``heading`` to the next heading of its level."""
    assert heading in text, f"no {heading!r}"
    level = heading.split(" ", 1)[0] + " "
    rest = text.split(heading, 1)[1].split("\n")
    return "\n".join(itertools.takewhile(lambda line: not line.startswith(level), rest))


def anatomy_mismatches(text: str) -> list[str]:
    """What the anatomy section of ``text`` (architecture.md) says otherwise than
    the layout test (tests/architecture/test_layout.py): the apps named in its
    first paragraph, the folders and modules its tables have a row for."""
    section = _section(text, ANATOMY)
    first_paragraph = section.strip().split("\n\n", 1)[0]
    said = {
        "apps": set(re.findall(r"`([a-z_]+)/`", first_paragraph)),
        "layer folders": set(re.findall(r"^\| `([a-z_]+)/` \|", section, re.M)),
        "app modules": set(re.findall(r"^\| `([a-z_]+\.py)` \|", section, re.M)),
    }
    code = {
        "apps": set(APPS),
        "layer folders": LAYER_FOLDERS,
        "app modules": APP_MODULES,
    }
    found = []
    for what, names in said.items():
        found += [f"{what}: {n} only in the page" for n in sorted(names - code[what])]
        found += [f"{what}: {n} not in the page" for n in sorted(code[what] - names)]
    return found


def test_architecture_anatomy_matches_the_layout_test() -> None:
    assert anatomy_mismatches(_text("docs/architecture.md")) == []


@pytest.mark.parametrize(
    ("removed", "expected"),
    [
        (" and\n`gates/`,", "apps: gates not in the page"),
        ("| `storage/` |", "layer folders: storage not in the page"),
        ("| `admin.py` |", "app modules: admin.py not in the page"),
    ],
)
def test_the_anatomy_check_finds_a_name_the_page_lost(
    removed: str, expected: str
) -> None:
    text = _text("docs/architecture.md")
    assert removed in text

    assert anatomy_mismatches(text.replace(removed, "", 1)) == [expected]


def test_the_anatomy_check_finds_a_name_the_code_lacks() -> None:
    text = _text("docs/architecture.md").replace(
        "| `forms/` |", "| `forms/` | x |\n| `helpers/` |", 1
    )

    assert anatomy_mismatches(text) == ["layer folders: helpers only in the page"]


# --- bundle format -------------------------------------------------------------------


def test_bundle_format_names_every_manifest_field_and_value() -> None:
    text = _text("docs/bundle-format.md")
    fields = {
        f.name
        for cls in (Manifest, ManifestFile, Harness, HarnessOutput, Scenario, Claim)
        for f in dataclasses.fields(cls)
        if f.name != "extensions"
    }

    assert _fields_named(text, sorted(fields)) == []
    assert _named(text, [*KINDS, *PARSERS, *STATS, *CACHES]) == []
    assert _named(text, [SCHEMA_ID, NAMESPACE, dsse.PAYLOAD_TYPE]) == []
    assert _named(text, [*TEMPLATE_KEYS, *(f"{d}/" for d in FOLDER_KINDS)]) == []


def test_bundle_format_lists_every_problem_code() -> None:
    text = _text("docs/bundle-format.md")

    assert _named(text, sorted(PROBLEM_CODES)) == []


def test_bundle_format_states_the_code_limits() -> None:
    text = _text("docs/bundle-format.md")
    limits = [
        _size(DEFAULT_LIMITS.max_member_bytes),
        _size(DEFAULT_LIMITS.max_total_bytes),
        f"{DEFAULT_LIMITS.max_members:,}",
        f"{DEFAULT_LIMITS.max_ratio:g}",
        _size(DEFAULT_LIMITS.ratio_grace_bytes),
        _size(MAX_MANIFEST_BYTES),
        _size(MAX_SIGNATURE_BYTES),
        _size(MAX_DSSE_BYTES),
        f"{MAX_FILES:,}",
        f"{MAX_ITEMS:,}",
        f"{MAX_STORED_PATH}",
        f"{dsse.MAX_SIGNATURES}",
    ]

    assert [limit for limit in limits if limit not in text] == []


def _example_sources(text: str, root: Path) -> dict[str, bytes]:
    sources = {}
    for name in re.findall(r"<!-- example-file: (\S+) -->", text):
        data = _block_after(text, f"example-file: {name}").encode("utf-8")
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
        sources[name] = data
    return sources


def test_bundle_format_example_is_what_bundle_build_writes(tmp_path: Path) -> None:
    text = _text("docs/bundle-format.md")
    sources = _example_sources(text, tmp_path / "src")
    pem = Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    )
    key = load_private_key(pem, comment="vendor@acme-flash")
    created = datetime(2026, 11, 29, 12, tzinfo=UTC)
    out = tmp_path / "bundle.tar.gz"

    built = bundle_build.build_bundle(
        tmp_path / "src", key=key, output=out, created=created, environ={}
    )
    signers = bundle_verify.parse_allowed_signers(
        f'acme-flash namespaces="{NAMESPACE}" {key.public.openssh}\n'
    )
    report = bundle_verify.verify_bundle(out, signers, at=created)

    assert "bundle.json" in sources
    assert built.manifest.decode("utf-8") == _block_after(text, "example-manifest")
    assert report.ok, report.problems


def test_bundle_format_example_manifest_validates() -> None:
    text = _text("docs/bundle-format.md")
    manifest = _block_after(text, "example-manifest").encode("utf-8")

    result = parse_manifest(manifest)

    assert result.problems == ()
    assert result.manifest is not None
    assert {f.path for f in result.manifest.files} == {
        "harness/run.sh",
        "environment/manifest.json",
    }


# --- runner contract -----------------------------------------------------------------


def test_runner_contract_names_every_variable_the_harness_gets() -> None:
    text = _text("docs/runner-contract.md")
    given = harness_env(
        {"REPROGATE_SCENARIO": "{}", "REPROGATE_RUN_ID": "r"},
        home="/tmp",  # noqa: S108
        tmp="/tmp",  # noqa: S108
        output_dir="/sandbox/output",
    )
    runner = set(
        re.findall(
            r"REPROGATE_[A-Z_]+",
            (ROOT / "reprogate_agent/execute.py").read_text(encoding="utf-8"),
        )
    )

    assert _named(text, sorted(given)) == []
    assert _named(text, sorted(runner)) == []


def test_runner_contract_names_every_stop_reason_parser_and_unit() -> None:
    text = _text("docs/runner-contract.md")
    suffixes = [suffix for suffix, _ in UNIT_SUFFIXES]
    units = [unit for _, unit in UNIT_SUFFIXES]

    assert _named(text, sorted(STOP_REASONS)) == []
    assert _named(text, PARSERS) == []
    assert _named(text, suffixes) == []
    assert _named(text, units) == []


def test_runner_contract_states_the_sandbox_defaults() -> None:
    text = _text("docs/runner-contract.md")
    limits = SandboxLimits()

    assert f"{_size(limits.memory_bytes)}" in text
    assert f"{limits.processes} live processes" in text
    assert f"{_size(limits.output_bytes)} of stdout and stderr" in text
    assert limits.network is False


# --- gate documents ------------------------------------------------------------------


def test_gate_documents_name_every_choice_the_validator_knows() -> None:
    text = _text("docs/gate-documents.md")
    verdicts = ["PASS", "WARN", "FAIL", "INCONCLUSIVE", "HALTED"]

    assert _named(text, [*STAGES, *DIRECTIONS, *ON_HIGH_CV, *GATE_STATS]) == []
    assert _named(text, [*DRIFT_LEVELS, *RUN_STATUSES, *verdicts]) == []


def test_gate_documents_example_plan_and_results_are_valid() -> None:
    text = _text("docs/gate-documents.md")

    plan = json.loads(_block_after(text, "example: plan"))
    results = json.loads(_block_after(text, "example: results"))

    assert plan_problems(plan) == []
    assert results_problems(results) == []


def test_gate_documents_example_evaluation_is_what_the_engine_prints() -> None:
    text = _text("docs/gate-documents.md")
    plan = json.loads(_block_after(text, "example: plan"))
    results = json.loads(_block_after(text, "example: results"))

    printed = [evaluation_bytes(doc).decode() for doc in evaluate_plan(plan, results)]

    assert "\n".join(printed) + "\n" == _block_after(text, "example: evaluation")


def test_gate_documents_baseline_example_is_what_the_engine_prints() -> None:
    text = _text("docs/gate-documents.md")
    plan = json.loads(_block_after(text, "example: baseline plan"))
    results = json.loads(_block_after(text, "example: baseline results"))

    printed = [evaluation_bytes(doc).decode() for doc in evaluate_plan(plan, results)]

    assert "\n".join(printed) + "\n" == _block_after(
        text, "example: baseline evaluation"
    )
