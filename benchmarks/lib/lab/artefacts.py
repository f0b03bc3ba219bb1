"""Runner artefacts: files the runner makes about a run (never the harness),
kept in the workspace root outside the harness's output directory and uploaded
through their own runner API route (``PUT runs/<id>/artefacts/<name>``).

``artefact_digests`` gives ``{name: sha256}`` of a run's artefacts: what a
host's statement names as its subjects beside the outputs."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Final

TELEMETRY: Final = "telemetry.bin"
ENVIRONMENT: Final = "environment.json"
SPANS: Final = "spans.jsonl"
SCENARIO: Final = "scenario.json"  # benchmarks.lib.lab.scenario_document
# Every name a runner may upload, and the most bytes each may have.
RUNNER_ARTEFACTS: Final = {
    TELEMETRY: 64 << 20,
    ENVIRONMENT: 16 << 20,
    SPANS: 256 << 20,
    SCENARIO: 16 << 20,
}
CHUNK: Final = 1 << 20


def artefact_name_problem(name: str) -> str:
    """Why ``name`` is not a runner artefact's name ("" when it is)."""
    if name not in RUNNER_ARTEFACTS:
        known = ", ".join(sorted(RUNNER_ARTEFACTS))
        return f"{name[:100]!r} is not a runner artefact (known: {known})."
    return ""


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def artefact_digests(files: Mapping[str, Path]) -> dict[str, str]:
    """``{name: sha256}`` of the runner artefacts among ``files`` (name → local
    copy), sorted by name; a name that is not an artefact's is left out."""
    return {
        name: file_sha256(files[name])
        for name in sorted(files)
        if not artefact_name_problem(name)
    }
