"""The completeness and transparency report (pure functions, no database)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from artifacts.lib.completeness import (
    RequiredArtifact,
    RequiredMetric,
    completeness_report,
    environment_report,
    stats_of,
    words_of,
)
from artifacts.lib.manifest import Claim, Manifest, parse_manifest
from tests.artifacts.corpus.build import good_files, good_manifest, manifest_bytes

FULL_ENVIRONMENT = {
    "hosts": {
        "gpu": {
            "os": "Ubuntu 22.04.5 LTS",
            "kernel": "5.15.0-125-generic",
            "gpu": {"driver": "550.127.05", "vbios": "96.00.99.00.01"},
            "nics": [{"driver": "mlx5_core", "firmware": "28.42.1000"}],
        }
    },
    "nvmeof": {"transport": "rdma", "subsystems": 4},
    "topology": {"description": "two-tier 200GbE RoCE fabric"},
}


def manifest(**changes: Any) -> Manifest:
    parsed = parse_manifest(manifest_bytes(good_manifest(good_files(), **changes)))
    assert parsed.manifest is not None, parsed.problems
    return parsed.manifest


def env(document: Any) -> dict[str, bytes | None]:
    return {"environment/manifest.json": json.dumps(document).encode()}


def found(report: dict[str, Any]) -> dict[str, bool]:
    return {field["key"]: field["found"] for field in report["fields"]}


# --- artifacts ----------------------------------------------------------------------


def test_required_kinds_present_and_mandatory_missing() -> None:
    required = [
        RequiredArtifact("trace", "Raw traces"),
        RequiredArtifact("cost_model", "Cost model", mandatory=False),
        RequiredArtifact("other", "Signed power measurements"),
    ]

    report = completeness_report(manifest=manifest(), required_artifacts=required)

    artifacts = report["artifacts"]
    assert [item["present"] for item in artifacts["required"]] == [True, True, False]
    assert artifacts["missing_mandatory"] == [
        {"kind": "other", "title": "Signed power measurements"}
    ]
    assert (artifacts["mandatory_present"], artifacts["mandatory_total"]) == (1, 2)
    assert artifacts["complete"] is False


def test_a_missing_optional_artifact_keeps_the_checklist_complete() -> None:
    required = [RequiredArtifact("other", "Extras", mandatory=False)]

    report = completeness_report(manifest=manifest(), required_artifacts=required)

    assert report["artifacts"]["complete"] is True
    assert report["artifacts"]["missing_mandatory"] == []


# --- environment --------------------------------------------------------------------


def test_a_full_environment_manifest_names_every_field() -> None:
    report = environment_report(env(FULL_ENVIRONMENT))

    assert all(found(report).values())
    assert report["complete"] is True
    where = {f["key"]: f["where"] for f in report["fields"]}
    assert where["nvmeof_transport"] == {
        "file": "environment/manifest.json",
        "key": "nvmeof.transport",
        "value": "rdma",
    }
    assert where["kernel"]["key"] == "hosts.gpu.kernel"


@pytest.mark.parametrize(
    ("key", "field"),
    [
        ("OS_VERSION", "os"),
        ("operatingSystem", "os"),
        ("kernel-release", "kernel"),
        ("uname_r", "kernel"),
        ("nvmeDriverVersion", "driver"),
        ("MOFED", "driver"),
        ("ssd_fw_rev", "firmware"),
        ("nvmeOfTransport", "nvmeof_transport"),
        ("nvme_of.trtype", "nvmeof_transport"),
        ("fabric.Topology", "topology"),
    ],
)
def test_environment_keys_are_read_with_tolerant_spellings(
    key: str, field: str
) -> None:
    report = environment_report(env({key: "x 1.0"}))

    assert [k for k, hit in found(report).items() if hit] == [field]


def test_os_release_style_text_is_read() -> None:
    text = b'PRETTY_NAME="Rocky Linux 9.4"\nkernel = 5.14.0\n# topology: none\n'

    report = environment_report({"environment/os-release": text})

    assert found(report)["os"]
    assert found(report)["kernel"]
    assert not found(report)["topology"]  # a comment is not a value
    assert report["missing"] == ["driver", "firmware", "nvmeof_transport", "topology"]


def test_empty_values_do_not_count() -> None:
    report = environment_report(env({"os": "", "kernel": None, "driver": [], "fw": {}}))

    assert not any(found(report).values())


def test_unreadable_or_absent_environment_is_incomplete() -> None:
    report = environment_report({"environment/a.bin": b"\xff\xfe\x00", "env/b": None})

    assert report["unreadable"] == ["env/b", "environment/a.bin"]
    assert report["complete"] is False
    assert environment_report({})["missing"] == [f["key"] for f in report["fields"]]


def test_a_deeply_nested_environment_does_not_break_the_report() -> None:
    nested = b'{"x":' * 500 + b'{"kernel": "6.8"}' + b"}" * 500
    bomb = b'{"a":' * 100_000 + b"1" + b"}" * 100_000

    report = environment_report({"nested.json": nested, "bomb.json": bomb})

    assert report["unreadable"] == ["bomb.json"]
    assert not found(report)["kernel"]  # deeper than anyone writes a manifest


def test_key_words_split_case_separators_and_joins() -> None:
    assert words_of("nvmeOf.transport_type") >= {"nvme", "of", "nvmeof", "transport"}
    assert "os" not in words_of("hosts.cost")


# --- claims and metrics ------------------------------------------------------------


def test_claims_are_checked_against_the_harness_scenarios() -> None:
    good = manifest()
    stray = Claim("ttft_ms", "p99", "warm-c64", 150.0, "ms")

    report = completeness_report(manifest=replace(good, claims=(*good.claims, stray)))

    claims = report["claims"]
    assert [c["scenario_in_harness"] for c in claims["claims"]] == [True, False]
    assert claims["unknown_scenarios"] == ["warm-c64"]
    assert claims["complete"] is False


def test_required_metrics_and_stats_are_covered_by_claims() -> None:
    required = [
        RequiredMetric("ttft_ms", stats_of("p50, p99")),
        RequiredMetric("tokens_per_s"),
    ]

    report = completeness_report(manifest=manifest(), required_metrics=required)

    metrics = report["metrics"]
    assert metrics["required"][0]["stats_missing"] == ["p50"]
    assert metrics["missing"] == ["tokens_per_s"]
    assert metrics["complete"] is False


def test_the_report_is_json_with_a_score() -> None:
    report = completeness_report(manifest=manifest(), environment=env(FULL_ENVIRONMENT))

    assert json.loads(json.dumps(report)) == report
    assert report["score"] == {"passed": 4, "total": 4}
    assert report["complete"] is True


def test_a_report_file_counts_as_supplied_never_as_signed() -> None:
    required = [RequiredArtifact("report", "Signed benchmark reports")]

    report = completeness_report(manifest=manifest(), required_artifacts=required)

    (item,) = report["artifacts"]["required"]
    assert item["present"] is True  # reports/summary.md is of kind report
    assert item["signature"] == "not_verified"  # nothing here checked a signature
    assert item["pdf_files"] == 0


def _with_pdf() -> Manifest:
    files = good_files() | {"reports/bench.pdf": b"%PDF-1.7 signed\n"}
    parsed = parse_manifest(manifest_bytes(good_manifest(files)))
    assert parsed.manifest is not None, parsed.problems
    return parsed.manifest


@pytest.mark.parametrize(
    ("status", "present"),
    [("valid", True), ("invalid", False), ("unsigned", False), ("unreadable", False)],
)
def test_a_report_counts_only_when_a_pdf_signature_validated(
    status: str, present: bool
) -> None:
    required = [RequiredArtifact("report", "Signed benchmark reports")]
    problem = {} if present else {"problem": {"code": "c", "message": "m"}}
    signed = {"reports/bench.pdf": {"status": status, "signatures": [], **problem}}

    report = completeness_report(
        manifest=_with_pdf(), required_artifacts=required, signed=signed
    )

    (item,) = report["artifacts"]["required"]
    assert item["present"] is present
    assert item["supplied"] is True
    assert item["signature"] == status
    assert ("report" in report["artifacts"]["kinds_counted"]) is present
    assert "report" in report["artifacts"]["kinds_present"]
    assert report["signed_reports"]["valid"] == int(present)
    paths = [p["path"] for p in report["signed_reports"]["problems"]]
    assert paths == ([] if present else ["reports/bench.pdf"])


def test_a_statement_problem_names_the_statement_path() -> None:
    problem = {"code": "report_statement_invalid", "message": "m"}
    statement = {
        "path": "reports/bench.pdf.dsse",
        "status": "invalid",
        "problem": problem,
    }
    signed = {"reports/bench.pdf": {"status": "valid", "statement": statement}}

    report = completeness_report(manifest=_with_pdf(), signed=signed)

    (found,) = report["signed_reports"]["problems"]
    assert found["path"] == "reports/bench.pdf.dsse"
    assert found["code"] == "report_statement_invalid"


def test_without_verdicts_there_is_no_signed_reports_part() -> None:
    report = completeness_report(manifest=_with_pdf())

    assert "signed_reports" not in report
    assert report["artifacts"]["kinds_counted"] == report["artifacts"]["kinds_present"]


def test_other_kinds_carry_no_signature_state() -> None:
    required = [RequiredArtifact("trace", "Raw traces")]

    report = completeness_report(manifest=manifest(), required_artifacts=required)

    assert "signature" not in report["artifacts"]["required"][0]
