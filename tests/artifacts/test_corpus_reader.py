"""The hostile and broken bundles of the corpus, against the checks that need no
keys and no database: the archive reader and ``inspect_bundle``."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from artifacts.lib.archive import digest_archive, strip_dot_prefix
from artifacts.lib.manifest import inspect_bundle
from artifacts.lib.problems import PROBLEM_CODES, ProblemList
from tests.artifacts.corpus.build import (
    CORPUS,
    CORPUS_KEYS,
    UPLOAD_RFP,
    UPLOAD_VENDOR,
    CorpusCase,
    good_bundle,
)

OFFLINE = [c for c in CORPUS if c.layer in ("archive", "manifest", "ingest")]
ARCHIVE = [c for c in CORPUS if c.layer == "archive"]
SIGNED = [c for c in CORPUS if c.layer == "signature" and c.name != "signature_missing"]


def by_name(name: str) -> CorpusCase:
    return next(c for c in CORPUS if c.name == name)


def inspect(path: Path) -> set[str]:
    found = inspect_bundle(path, rfp=UPLOAD_RFP, vendor=UPLOAD_VENDOR).problems
    return {problem.code for problem in found}


def test_corpus_has_at_least_25_named_cases_with_registered_codes() -> None:
    names = [c.name for c in CORPUS]

    assert len(CORPUS) >= 25
    assert len(names) == len(set(names))
    assert all(c.description and c.codes for c in CORPUS)
    assert {code for c in CORPUS for code in c.codes} <= PROBLEM_CODES.keys()
    assert {c.key for c in CORPUS} <= CORPUS_KEYS.keys()


def test_problem_lists_refuse_unregistered_codes_and_drop_repeats() -> None:
    problems = ProblemList()
    problems.add("path_traversal", "The path climbs out.", "../a")
    problems.add("path_traversal", "The path climbs out.", "../a")

    with pytest.raises(ValueError, match="unregistered"):
        problems.add("path_travesal", "typo")
    assert [p.as_dict() for p in problems] == [
        {"code": "path_traversal", "message": "The path climbs out.", "path": "../a"}
    ]


@pytest.mark.parametrize("fmt", ["tar.gz", "tar", "zip"])
def test_a_good_bundle_passes_every_offline_check(tmp_path: Path, fmt: str) -> None:
    path = good_bundle(tmp_path, fmt)  # type: ignore[arg-type]

    result = inspect_bundle(path, rfp=UPLOAD_RFP, vendor=UPLOAD_VENDOR)

    assert result.problems == ()
    assert result.manifest is not None
    assert result.signature is not None


@pytest.mark.parametrize("case", OFFLINE, ids=lambda c: c.name)
def test_offline_checks_report_exactly_the_expected_codes(
    tmp_path: Path, case: CorpusCase
) -> None:
    path = case.build(tmp_path)

    assert inspect(path) == case.codes


@pytest.mark.parametrize("case", ARCHIVE, ids=lambda c: c.name)
def test_archive_cases_are_caught_by_the_reader_alone(
    tmp_path: Path, case: CorpusCase
) -> None:
    result = digest_archive(case.build(tmp_path))

    assert {problem.code for problem in result.problems} == case.codes
    assert all(problem.message for problem in result.problems)


def test_several_problems_are_reported_at_once_with_their_paths(
    tmp_path: Path,
) -> None:
    result = digest_archive(by_name("several_problems").build(tmp_path))

    assert [(p.code, p.path) for p in result.problems] == [
        ("path_traversal", "../escape.sh"),
        ("member_symlink", "harness/link"),
        ("member_device", "dev/sda"),
        ("name_duplicate", "cost/model.json"),
    ]
    assert result.complete


def test_a_missing_signature_is_seen_without_keys(tmp_path: Path) -> None:
    path = by_name("signature_missing").build(tmp_path)

    assert inspect(path) == {"signature_missing"}


@pytest.mark.parametrize("case", SIGNED, ids=lambda c: c.name)
def test_signature_cases_are_otherwise_intact(tmp_path: Path, case: CorpusCase) -> None:
    result = inspect_bundle(case.build(tmp_path), rfp=UPLOAD_RFP, vendor=UPLOAD_VENDOR)

    assert result.problems == ()
    assert result.signature is not None


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen")
@pytest.mark.parametrize("case", SIGNED, ids=lambda c: c.name)
def test_ssh_keygen_agrees_with_the_signature_cases(
    tmp_path: Path, case: CorpusCase
) -> None:
    result = inspect_bundle(case.build(tmp_path))
    assert result.manifest_bytes is not None
    assert result.signature is not None
    (tmp_path / "manifest.json.sig").write_bytes(result.signature)
    signer = CORPUS_KEYS[case.key]
    (tmp_path / "allowed").write_text(f"signer {signer.public_line}\n")
    command = ["ssh-keygen", "-Y", "verify", "-f", str(tmp_path / "allowed")]
    command += ["-I", "signer", "-n", "reprogate-bundle"]
    command += ["-s", str(tmp_path / "manifest.json.sig")]

    verified = subprocess.run(command, input=result.manifest_bytes, capture_output=True)

    # Key-state cases carry a good signature: only the registry refuses them.
    key_state = case.codes <= {
        "signature_key_not_allowed",
        "signature_key_revoked",
        "signature_key_expired",
    }
    assert (verified.returncode == 0) is key_state


def test_reader_names_agree_with_tarfile_on_every_corpus_tar(tmp_path: Path) -> None:
    # tarfile itself needs ~20 s for the oversized pax header (CVE-2024-6232).
    for case in [c for c in CORPUS if c.name != "pax_header_oversized"]:
        (tmp_path / case.name).mkdir()
        path = case.build(tmp_path / case.name)
        if not tarfile.is_tarfile(path):
            continue
        try:
            with tarfile.open(path) as archive:
                names = {strip_dot_prefix(m.name) for m in archive if m.isreg()}
        except (tarfile.TarError, EOFError, OSError):
            continue
        assert set(digest_archive(path).files) <= names, case.name
