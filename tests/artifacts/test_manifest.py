"""manifest.json parsing and the reprogate.bundle/v1 schema."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from artifacts.lib.archive import ArchiveDigest, FileDigest
from artifacts.lib.manifest import (
    MAX_MANIFEST_BYTES,
    Claim,
    ManifestFile,
    Scenario,
    context_problems,
    listing_problems,
    parse_manifest,
)
from tests.artifacts.corpus.build import good_files, good_manifest, manifest_bytes


def manifest(**changes: Any) -> dict[str, Any]:
    return copy.deepcopy(good_manifest(good_files(), **changes))


def problems(data: dict[str, Any] | bytes) -> list[tuple[str, str | None]]:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return [(p.code, p.path) for p in parse_manifest(raw).problems]


def test_the_design_example_parses_into_typed_values() -> None:
    result = parse_manifest(manifest_bytes(manifest()))

    assert result.problems == ()
    assert result.manifest is not None
    assert result.manifest.created == datetime(2025, 11, 29, 12, tzinfo=UTC)
    assert result.manifest.harness.scenarios == (
        Scenario("cold-c32", "cold", 32, 8, 60.0),
    )
    assert result.manifest.claims == (Claim("ttft_ms", "p99", "cold-c32", 180.0, "ms"),)
    run = good_files()["harness/run.sh"]
    assert result.manifest.file("harness/run.sh") == ManifestFile(
        "harness/run.sh", hashlib.sha256(run).hexdigest(), len(run), "harness"
    )


def test_x_prefixed_keys_are_extensions_and_claims_are_optional() -> None:
    data = manifest(**{"x-pipeline": {"ci": "jenkins"}})
    del data["claims"]
    data["files"][0]["x-note"] = "fine"

    result = parse_manifest(json.dumps(data).encode())

    assert result.problems == ()
    assert result.manifest is not None
    assert result.manifest.extensions == {"x-pipeline": {"ci": "jenkins"}}
    assert result.manifest.claims == ()


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"\xef\xbb\xbf{}", "manifest_bom"),
        (b'{"rfp": "caf\xe9"}', "manifest_not_utf8"),
        (b"\xff\xfe{\x00}\x00", "manifest_not_utf8"),
        (b'{"rfp": "x",}', "manifest_invalid_json"),
        (b'{"value": NaN}', "manifest_invalid_json"),
        (b'{"value": -Infinity}', "manifest_invalid_json"),
        (b'{"size": 1' + b"0" * 5000 + b"}", "manifest_invalid_json"),
        (b"[" * 100_000, "manifest_invalid_json"),
        (b"", "manifest_invalid_json"),
    ],
)
def test_undecodable_manifests_get_one_specific_problem(raw: bytes, code: str) -> None:
    assert [found for found, _ in problems(raw)] == [code]


def test_not_utf8_names_the_offending_byte_and_invalid_json_its_line() -> None:
    (not_utf8,) = parse_manifest(b'{"a": "\xe9"}').problems
    (broken,) = parse_manifest(b'{\n  "a": 1,\n}').problems

    assert not_utf8.message == "Byte 7 is not valid UTF-8."
    assert "line 3" in broken.message


def test_duplicate_keys_and_lone_surrogates_are_refused_with_their_path() -> None:
    raw = manifest_bytes(manifest()).replace(
        b'"stat": "p99"', b'"stat": "p99", "stat": "p50"'
    )
    lone = manifest_bytes(manifest(rfp="RFP-\\ud800")).replace(b"\\\\ud800", b"\\ud800")

    assert problems(raw) == [("manifest_duplicate_key", "claims[0].stat")]
    assert ("manifest_invalid_json", "rfp") in problems(lone)


def test_every_schema_error_is_reported_with_its_path() -> None:
    data = manifest(schema="reprogate.bundle/v2", created="yesterday", colour="red")
    data["files"][3] |= {"sha256": "ABC", "size": -1, "kind": "binary"}
    del data["files"][4]["path"]
    data["harness"]["scenarios"][0]["concurrency"] = 0
    data["claims"][0] |= {"stat": "p42", "value": "fast"}

    found = problems(data)

    assert found == [
        ("manifest_schema", "colour"),
        ("manifest_schema", "schema"),
        ("manifest_schema", "created"),
        ("manifest_schema", "files[3].sha256"),
        ("manifest_schema", "files[3].size"),
        ("manifest_schema", "files[3].kind"),
        ("manifest_schema", "files[4].path"),
        ("manifest_schema", "harness.scenarios[0].concurrency"),
        ("manifest_schema", "claims[0].stat"),
        ("manifest_schema", "claims[0].value"),
    ]


def test_messages_read_well_next_to_their_path() -> None:
    data = manifest()
    data["files"][3]["sha256"] = "abc"

    (problem,) = parse_manifest(json.dumps(data).encode()).problems

    assert (
        str(problem)
        == 'files[3].sha256: Must be 64 lowercase hex characters; got "abc".'
    )


def test_missing_required_fields_are_each_named() -> None:
    assert problems({"schema": "reprogate.bundle/v1"}) == [
        ("manifest_schema", key)
        for key in ("rfp", "vendor", "created", "files", "harness")
    ]
    assert problems(b"[]") == [("manifest_schema", None)]


@pytest.mark.parametrize(
    ("created", "ok"),
    [
        ("2026-11-29T12:00:00Z", True),
        ("2026-11-29t12:00:00.123456789z", True),
        ("2026-11-29T12:00:00+00:00", True),
        ("2026-11-29T12:00:00+01:00", False),
        ("2026-11-29T12:00:00", False),
        ("2026-02-30T12:00:00Z", False),
        ("2026-11-29T24:00:00Z", False),
        ("2026-11-29", False),
        (1764417600, False),
    ],
)
def test_created_must_be_rfc3339_utc(created: Any, ok: bool) -> None:
    assert (problems(manifest(created=created)) == []) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [(0, True), (12, True), (-1, False), (True, False), (1.0, False), ("12", False)],
)
def test_file_size_is_a_non_negative_integer_not_a_bool(value: Any, ok: bool) -> None:
    data = manifest()
    data["files"][0]["size"] = value

    assert (problems(data) == []) is ok


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "../up.json",
        "a\\b.json",
        "./traces/a.json",
        "traces/",
        "a//b",
        "",
        "manifest.json",
        "manifest.json.sig",
    ],
)
def test_file_paths_must_be_plain_relative_posix(path: str) -> None:
    data = manifest()
    data["files"][0]["path"] = path

    assert {code for code, _ in problems(data)} == {"manifest_schema"}


def test_repeated_and_colliding_file_paths_are_refused() -> None:
    data = manifest()
    data["files"].append(dict(data["files"][0]))
    data["files"].append(dict(data["files"][1], path="Environment/Manifest.json"))

    assert problems(data) == [
        ("manifest_schema", "files[6].path"),
        ("manifest_schema", "files[7].path"),
    ]


def test_entrypoint_must_be_a_listed_harness_file() -> None:
    unlisted = manifest()
    unlisted["harness"]["entrypoint"] = "harness/missing.sh"
    wrong_kind = manifest()
    wrong_kind["harness"]["entrypoint"] = "cost/model.json"

    assert problems(unlisted) == [("entrypoint_unlisted", "harness.entrypoint")]
    assert problems(wrong_kind) == [("entrypoint_not_harness", "harness.entrypoint")]


def test_harness_outputs_and_scenarios_are_checked_item_by_item() -> None:
    data = manifest()
    harness = data["harness"]
    harness["outputs"].append({"path": "fio.json", "parser": "iperf"})
    harness["scenarios"].append(
        {
            "name": "cold-c32",
            "cache": "hot",
            "concurrency": True,
            "batch_size": 1,
            "duration_s": 0,
        }
    )

    assert problems(data) == [
        ("manifest_schema", "harness.outputs[1].parser"),
        ("manifest_schema", "harness.scenarios[1].cache"),
        ("manifest_schema", "harness.scenarios[1].concurrency"),
        ("manifest_schema", "harness.scenarios[1].duration_s"),
    ]


def test_repeated_output_paths_and_scenario_names_are_refused() -> None:
    data = manifest()
    data["harness"]["outputs"].append({"path": "fio.json", "parser": "vllm-bench"})
    data["harness"]["scenarios"].append(dict(data["harness"]["scenarios"][0]))

    assert problems(data) == [
        ("manifest_schema", "harness.outputs[1].path"),
        ("manifest_schema", "harness.scenarios[1].name"),
    ]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("metric", "TTFT ms"),
        ("metric", "ttft__ms"),
        ("stat", "p100"),
        ("value", True),
        ("value", None),
        ("unit", ""),
        ("scenario", 3),
    ],
)
def test_claim_fields_are_validated(field: str, value: Any) -> None:
    data = manifest()
    data["claims"][0][field] = value

    assert problems(data) == [("manifest_schema", f"claims[0].{field}")]


def test_claim_values_that_overflow_to_infinity_are_refused() -> None:
    raw = manifest_bytes(manifest()).replace(b"180.0", b"1e400")

    assert problems(raw) == [("manifest_schema", "claims[0].value")]


def test_a_claim_for_an_unknown_scenario_is_its_own_problem() -> None:
    data = manifest()
    data["claims"][0]["scenario"] = "warm-c64"

    assert problems(data) == [("claim_scenario_unknown", "claims[0].scenario")]


def test_unknown_keys_are_refused_at_every_level() -> None:
    data = manifest(extra=1)
    data["harness"]["timeout"] = 5
    data["claims"][0]["confidence"] = 0.9

    assert problems(data) == [
        ("manifest_schema", "extra"),
        ("manifest_schema", "harness.timeout"),
        ("manifest_schema", "claims[0].confidence"),
    ]


def test_oversized_manifest_is_refused_before_parsing() -> None:
    raw = b" " * MAX_MANIFEST_BYTES + b"{}"

    assert problems(raw) == [("manifest_too_large", None)]


def test_valid_file_entries_survive_other_problems() -> None:
    data = manifest(rfp="")
    data["files"][0]["sha256"] = "nope"

    result = parse_manifest(json.dumps(data).encode())

    assert result.manifest is None
    assert len(result.files) == 5
    assert data["files"][0]["path"] in result.mentioned_paths
    assert result.vendor == "acme-flash"


# --- against the archive and the upload -----------------------------------------


def digest(files: Mapping[str, bytes]) -> ArchiveDigest:
    digests = {
        name: FileDigest(len(data), hashlib.sha256(data).hexdigest())
        for name, data in files.items()
    }
    return ArchiveDigest("tar.gz", True, digests, set(), {}, set(), [])


def test_listing_problems_compare_sizes_digests_and_presence() -> None:
    files = good_files()
    result = parse_manifest(manifest_bytes(manifest()))
    present = dict(files)
    del present["reports/summary.md"]
    present["cost/model.json"] += b" "
    present["traces/fio-randread.json"] = present["traces/fio-randread.json"].upper()
    archive = digest(present)
    archive.files["extra.txt"] = FileDigest(1, "0" * 64)
    archive.files["manifest.json"] = FileDigest(1, "0" * 64)

    found = [(p.code, p.path) for p in listing_problems(result, archive)]

    assert found == [
        ("size_mismatch", "cost/model.json"),
        ("digest_mismatch", "cost/model.json"),
        ("file_missing", "reports/summary.md"),
        ("digest_mismatch", "traces/fio-randread.json"),
        ("file_unlisted", "extra.txt"),
    ]


def test_members_the_archive_refused_are_not_reported_missing_again() -> None:
    result = parse_manifest(manifest_bytes(manifest()))
    archive = digest(good_files())
    del archive.files["harness/run.sh"]
    archive.rejected.add("harness/run.sh")

    assert listing_problems(result, archive) == []


def test_context_problems_compare_rfp_and_vendor() -> None:
    result = parse_manifest(manifest_bytes(manifest(vendor="bolt-storage")))

    found = context_problems(result, rfp="RFP-DEMO-1", vendor="acme-flash")

    assert [(p.code, p.path) for p in found] == [("vendor_mismatch", "vendor")]


def test_the_json_checks_report_what_a_document_deep_inside_repeats() -> None:
    data = b'{"a": [{"b": {"c": 1, "c": 2}}], "d": "\\ud800", "\\udc00": 1}'

    codes = [p.code for p in parse_manifest(data).problems]

    assert codes.count("manifest_duplicate_key") == 1
    assert codes.count("manifest_invalid_json") >= 1
