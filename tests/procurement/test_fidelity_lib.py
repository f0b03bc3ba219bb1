"""The fidelity matrix (``procurement.lib.fidelity``): each verdict, and where
each value comes from."""

from __future__ import annotations

from typing import Any

import pytest

from procurement.lib.fidelity import (
    CONTRADICTED,
    MET,
    MISSING,
    PARTIAL,
    Captured,
    Declared,
    Row,
    fidelity_matrix,
    flatten,
    version_satisfies,
)

REQUIREMENTS: dict[str, Any] = {
    "schema": "reprogate.rfp-requirements/v1",
    "approaches": ["nvme-of-appliance", "kv-cache-tiering"],
    "workloads": [
        {
            "id": "chat-70b",
            "model_family": "decoder",
            "params_b": [65, 80],
            "context_tokens": 8192,
            "concurrency": [8, 64],
            "tenants": 4,
            "scenario_kinds": ["steady", "interference", "failover"],
        }
    ],
    "accelerators": [
        {"vendors": ["nvidia", "hygon"], "per_node": 8, "sdk": {"cuda": ">=12.2"}}
    ],
    "fabric": {"transports": ["tcp"], "qos": True},
    "environment": {"pinned": ["kernel", "gpu_driver"]},
    "metrics": [{"metric": "ttft_ms", "stats": ["p99", "p99.9"]}],
    "artifacts": {"mandatory": ["harness", "runbook"], "bid_requires_bundle": True},
}
WORKLOAD = {
    "id": "chat-70b",
    "model_family": "decoder",
    "params_b": 70,
    "context_tokens": 8192,
    "concurrency": [8, 32, 64],
    "tenants": 4,
    "scenario_kinds": ["steady", "interference", "failover"],
}
ENVIRONMENT = {
    "file": "environment/manifest.json",
    "accelerators": [{"vendor": "nvidia", "per_node": 8, "sdk": {"cuda": "12.4"}}],
    "fabric": {"transport": "tcp", "qos": True},
    "pinned": {"kernel": "5.15.0-125-generic", "gpu_driver": "550.127.05"},
}


def _declared(**manifest: Any) -> Declared:
    base = {
        "approach": "kv-cache-tiering",
        "workloads": [WORKLOAD],
        "claims": [
            {"metric": "ttft_ms", "stat": "p99", "scenario": "a", "value": 1},
            {"metric": "ttft_ms", "stat": "p99.9", "scenario": "a", "value": 2},
        ],
    }
    return Declared(
        bundle="b-1",
        manifest=base | manifest,
        kinds=("harness", "runbook"),
        environment=ENVIRONMENT,
    )


def _rows(
    declared: Declared | None = None, captured: Captured | None = None
) -> dict[str, Row]:
    matrix = fidelity_matrix(REQUIREMENTS, declared, captured)
    return {row.id: row for row in matrix.rows}


def test_a_bundle_that_declares_everything_meets_every_row() -> None:
    rows = _rows(_declared())

    assert {r.id: r.verdict for r in rows.values() if r.verdict != MET} == {}
    assert len(rows) == 17


def test_each_row_names_where_its_values_come_from() -> None:
    row = _rows(_declared())["workloads[chat-70b].params_b"]

    assert row.required.source == "requirements.workloads[0].params_b"
    assert (row.required.value, row.required.shown) == ([65, 80], "65 to 80")
    assert row.declared is not None
    assert row.declared.source == "manifest.json:workloads[0].params_b"
    transport = _rows(_declared())["fabric.transports"].declared
    assert transport is not None
    assert transport.source == "environment/manifest.json:fabric.transport"


def test_nothing_declared_is_missing_everywhere() -> None:
    rows = _rows(Declared())

    assert {r.verdict for r in rows.values()} == {MISSING}
    assert all(r.mandatory for r in rows.values())


@pytest.mark.parametrize(
    ("workload", "row", "verdict"),
    [
        ({"model_family": "encoder"}, "model_family", CONTRADICTED),
        ({"params_b": 8}, "params_b", CONTRADICTED),
        ({"context_tokens": 4096}, "context_tokens", PARTIAL),
        ({"concurrency": [8, 16]}, "concurrency", PARTIAL),
        ({"concurrency": [128]}, "concurrency", CONTRADICTED),
        ({"tenants": 1}, "tenants", PARTIAL),
        ({"scenario_kinds": ["steady"]}, "scenario_kinds", PARTIAL),
    ],
)
def test_workload_declarations_are_judged(
    workload: dict[str, Any], row: str, verdict: str
) -> None:
    rows = _rows(_declared(workloads=[WORKLOAD | workload]))

    assert rows[f"workloads[chat-70b].{row}"].verdict == verdict


def test_another_approach_is_contradicted_with_a_reason() -> None:
    row = _rows(_declared(approach="local-nvme"))["approaches"]

    assert row.verdict == CONTRADICTED
    assert "not one the RFP allows" in row.reason


def test_a_workload_of_another_id_leaves_the_required_one_missing() -> None:
    rows = _rows(_declared(workloads=[WORKLOAD | {"id": "code-8b"}]))

    assert rows["workloads[chat-70b].model_family"].verdict == MISSING


def test_an_older_sdk_and_a_transport_not_allowed_are_contradicted() -> None:
    environment = ENVIRONMENT | {
        "accelerators": [{"vendor": "nvidia", "per_node": 8, "sdk": {"cuda": "11.8"}}],
        "fabric": {"transport": "rdma", "qos": True},
    }
    rows = _rows(Declared(environment=environment))

    assert rows["accelerators[0].sdk.cuda"].verdict == CONTRADICTED
    assert rows["fabric.transports"].verdict == CONTRADICTED


def test_a_capture_that_differs_from_the_declaration_contradicts_it() -> None:
    capture = {"kernel": {"release": "6.1.0-28-amd64"}, "gpus": [{"vendor": "NVIDIA"}]}
    captured = Captured(run="r-9", facts=flatten(capture))

    rows = _rows(_declared(), captured)

    kernel = rows["environment.pinned.kernel"]
    assert kernel.verdict == CONTRADICTED
    assert kernel.captured is not None
    assert kernel.captured.value == "6.1.0-28-amd64"
    assert kernel.captured.source == "run r-9: kernel.release"
    assert "the lab captured 6.1.0-28-amd64" in kernel.reason
    assert rows["accelerators[0].vendors"].verdict == MET  # NVIDIA = nvidia


def test_a_capture_that_agrees_keeps_the_row_met() -> None:
    capture = {"kernel": {"release": "5.15.0-125-generic"}}

    rows = _rows(_declared(), Captured(run="r-1", facts=flatten(capture)))

    assert rows["environment.pinned.kernel"].verdict == MET


def test_captured_but_undeclared_is_partial_or_contradicted() -> None:
    meets = flatten({"nvme": [{"transport": "tcp"}]})
    breaks = flatten({"nvme": [{"transport": "rdma"}]})

    assert _rows(Declared(), Captured("r", meets))["fabric.transports"].verdict == (
        PARTIAL
    )
    assert _rows(Declared(), Captured("r", breaks))["fabric.transports"].verdict == (
        CONTRADICTED
    )


def test_a_pinned_field_the_table_does_not_know_is_found_by_its_name() -> None:
    requirements = REQUIREMENTS | {"environment": {"pinned": ["bios"]}}
    declared = Declared(environment={"pinned": {"bios": "1.2"}})
    captured = Captured("r", flatten({"cpu": {"bios": "1.3"}}))

    rows = {r.id: r for r in fidelity_matrix(requirements, declared, captured).rows}

    assert rows["environment.pinned.bios"].verdict == CONTRADICTED


def test_nvme_firmware_is_compared_on_the_declared_transport_only() -> None:
    requirements = REQUIREMENTS | {"environment": {"pinned": ["nvme_firmware"]}}
    declared = Declared(
        environment={"fabric": {"transport": "tcp"}, "pinned": {"nvme_firmware": "1.2"}}
    )
    disks = [{"transport": "pcie", "firmware": "9.9"}, {"transport": "tcp"}]
    remote = [*disks[:1], {"transport": "tcp", "firmware": "1.3"}]

    def verdict(nvme: list[dict[str, str]]) -> str:
        captured = Captured("r", flatten({"nvme": nvme}))
        rows = fidelity_matrix(requirements, declared, captured).rows
        return next(
            r for r in rows if r.id == "environment.pinned.nvme_firmware"
        ).verdict

    assert verdict(disks) == MET  # the lab host's own disk is not the offer
    assert verdict(remote) == CONTRADICTED


def test_metrics_and_artifacts_rows() -> None:
    declared = _declared(claims=[{"metric": "ttft_ms", "stat": "p99"}])
    rows = _rows(Declared(kinds=("harness",), manifest=declared.manifest))

    assert rows["metrics[ttft_ms]"].verdict == PARTIAL
    assert rows["artifacts.harness"].verdict == MET
    assert rows["artifacts.runbook"].verdict == MISSING


def test_the_matrix_counts_and_lists_contradicted_mandatory_rows() -> None:
    matrix = fidelity_matrix(REQUIREMENTS, _declared(approach="local-nvme"))

    assert matrix.counts[CONTRADICTED] == 1
    assert [r.id for r in matrix.contradicted_mandatory] == ["approaches"]
    assert matrix.as_dict()["rows"][0]["declared"] == {
        "value": "local-nvme",
        "source": "manifest.json:approach",
    }


@pytest.mark.parametrize(
    ("version", "spec", "ok"),
    [
        ("12.4", ">=12.2", True),
        ("12.10", ">=12.2", True),
        ("11.8", ">=12.2", False),
        ("8.0.RC1", ">=8.0", True),
        ("12.4.1", "12.4", True),
        ("12.40", "12.4", False),
        ("12.2", ">12.2", False),
        # every clause form the requirements document accepts (SDK_SPEC_RE)
        ("12.4", ">=12.2,<13", True),
        ("13.0.1", ">=12.2,<13", False),
        ("8.3", "~=8.0", True),
        ("9.0", "~=8.0", False),
        ("12.2", "!=12.2", False),
        ("12.2.0", "12.2", True),
    ],
)
def test_version_specs(version: str, spec: str, ok: bool) -> None:
    assert version_satisfies(version, spec) is ok


def test_a_metric_required_as_a_series_is_met_by_any_claim_of_it() -> None:
    requirements = REQUIREMENTS | {
        "metrics": [{"metric": "cache_hit_rate", "stats": [], "series": True}]
    }
    claims = [{"metric": "cache_hit_rate", "stat": "mean", "scenario": "a"}]

    met = fidelity_matrix(requirements, _declared(claims=claims)).rows
    missing = fidelity_matrix(requirements, _declared(claims=[])).rows

    [row] = [r for r in met if r.id == "metrics[cache_hit_rate]"]
    assert (row.verdict, row.reason) == (MET, "Claimed.")
    [row] = [r for r in missing if r.id == "metrics[cache_hit_rate]"]
    assert row.verdict == MISSING
    assert row.reason == "The bundle does not declare it."


def test_captured_but_undeclared_says_what_the_lab_captured() -> None:
    captured = Captured("r", flatten({"kernel": {"release": "6.1.0-18-amd64"}}))
    declared = _declared()
    environment = {**ENVIRONMENT, "pinned": {"gpu_driver": "550.127.05"}}
    undeclared = Declared(
        bundle="b-1", manifest=declared.manifest, kinds=declared.kinds,
        environment=environment,
    )  # fmt: skip

    row = _rows(undeclared, captured)["environment.pinned.kernel"]

    assert row.verdict == PARTIAL
    assert row.reason == "Not declared; the lab captured 6.1.0-18-amd64."
