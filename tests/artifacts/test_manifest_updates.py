"""An update bundle's manifest fields: ``supersedes`` and ``changes``, each
problem named by its path."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from artifacts.lib.manifest import Change, parse_manifest
from tests.artifacts.corpus.build import good_files, good_manifest

ACCEPTED = "a" * 64
DRIVER = {"component": "gpu_driver", "from": "550.54.15", "to": "560.35.03"}


def manifest(**changes: Any) -> bytes:
    return json.dumps(copy.deepcopy(good_manifest(good_files(), **changes))).encode()


def problems(data: bytes) -> list[tuple[str, str | None]]:
    return [(p.code, p.path) for p in parse_manifest(data).problems]


def test_update_manifest_parses_supersedes_and_changes() -> None:
    note = {**DRIVER, "note": "fixes a timeout"}

    result = parse_manifest(manifest(supersedes=ACCEPTED, changes=[note]))

    assert result.manifest is not None, result.problems
    assert result.manifest.supersedes == ACCEPTED
    assert result.manifest.changes == (
        Change("gpu_driver", "550.54.15", "560.35.03", "fixes a timeout"),
    )


def test_plain_manifest_supersedes_nothing() -> None:
    result = parse_manifest(manifest())

    assert result.manifest is not None
    assert result.manifest.supersedes is None
    assert result.manifest.changes == ()


def test_update_may_list_no_changes() -> None:
    result = parse_manifest(manifest(supersedes=ACCEPTED, changes=[]))

    assert result.manifest is not None
    assert result.manifest.changes == ()


@pytest.mark.parametrize(
    ("supersedes", "path"),
    [("A" * 64, "supersedes"), ("abc", "supersedes"), (12, "supersedes")],
)
def test_supersedes_must_be_a_sha256(supersedes: Any, path: str) -> None:
    assert problems(manifest(supersedes=supersedes)) == [("manifest_schema", path)]


def test_changes_without_supersedes_are_refused() -> None:
    found = problems(manifest(changes=[DRIVER]))

    assert found == [("changes_without_supersedes", "changes")]


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({**DRIVER, "component": "flux_capacitor"}, "changes[0].component"),
        ({**DRIVER, "to": ""}, "changes[0].to"),
        ({**DRIVER, "to": DRIVER["from"]}, "changes[0].to"),
        ({"component": "kernel", "to": "6.8"}, "changes[0].from"),
        ({**DRIVER, "why": "x"}, "changes[0].why"),
        ({**DRIVER, "note": " padded"}, "changes[0].note"),
        ("gpu_driver", "changes[0]"),
    ],
)
def test_a_broken_change_is_named_by_its_path(change: Any, path: str) -> None:
    result = parse_manifest(manifest(supersedes=ACCEPTED, changes=[change]))

    assert result.manifest is None
    assert [p.path for p in result.problems] == [path]


def test_changes_must_be_a_list() -> None:
    found = problems(manifest(supersedes=ACCEPTED, changes={"gpu_driver": "560"}))

    assert found == [("manifest_schema", "changes")]
