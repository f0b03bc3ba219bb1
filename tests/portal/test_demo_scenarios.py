"""The demo's resilience gate and the buyer's baseline sources
(``portal.demo_scenarios``): a valid gate judging the example bundles' failover,
interference and warm-up scenarios, put after lab validation; a sentence naming
what a host lacks to run it; the baseline's sources laid over the open harness."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import portal.demo_scenarios as scenarios
from artifacts.lib.manifest import scenario_problems
from benchmarks.lib.lab.lab_plan import lab_plan_problems
from gates.lib.engine.validate import plan_problems
from portal.demo_scenarios import (
    EXAMPLES_DIR,
    RESILIENCE_GATE,
    baseline_sources,
    resilience_gate,
    resilience_problem,
    with_resilience_gate,
)

VENDORS = ("acme-flash", "bolt-storage")


def _gate(name: str) -> dict[str, Any]:
    return {**resilience_gate(), "name": name}


def _plan(*names: str) -> dict[str, Any]:
    return {
        "schema": "reprogate.gate-plan/v1",
        "rfp": "RFP-DEMO-2",
        "vendor": "acme-flash",
        "gates": [_gate(n) for n in names],
    }


def test_the_gate_is_a_valid_plan_gate() -> None:
    assert plan_problems(with_resilience_gate(_plan("lab-validation"), "x")) == []


@pytest.mark.parametrize("vendor", VENDORS)
def test_each_example_declares_the_scenarios_the_gate_judges(vendor: str) -> None:
    manifest = json.loads((EXAMPLES_DIR / vendor / "bundle.json").read_text())
    declared = {s["name"]: s for s in manifest["harness"]["scenarios"]}

    judged = {c["scenario"] for c in resilience_gate()["criteria"]}

    assert {declared[name]["kind"] for name in judged} == {
        "failover",
        "interference",
        "warmup",
    }
    for index, scenario in enumerate(manifest["harness"]["scenarios"]):
        assert scenario_problems(scenario, f"harness.scenarios[{index}]") == []
    # the interference names one of the lab's standard neighbours: no plan needed
    assert lab_plan_problems({}, manifest["harness"]["scenarios"]) == []


def test_the_gate_goes_right_after_the_one_named_and_replaces_its_namesake() -> None:
    document = _plan("lab-validation", RESILIENCE_GATE, "pilot", "rollout")
    document["gates"][1]["criteria"] = []

    edited = with_resilience_gate(document, after="lab-validation")

    assert [g["name"] for g in edited["gates"]] == [
        "lab-validation",
        RESILIENCE_GATE,
        "pilot",
        "rollout",
    ]
    assert edited["gates"][1] == resilience_gate()
    assert [g["name"] for g in with_resilience_gate(_plan("a"), "zz")["gates"]] == [
        "a",
        RESILIENCE_GATE,
    ]


@pytest.mark.parametrize(
    ("missing", "uid", "named"),
    [
        ((), 0, None),
        (("nbdkit",), 0, "needs nbdkit on this host"),
        (("fio", "ip"), 0, "needs ip, fio on this host"),
        ((), 1000, "needs root on this host"),
    ],
)
def test_what_the_host_lacks_is_named(
    monkeypatch: pytest.MonkeyPatch,
    missing: tuple[str, ...],
    uid: int,
    named: str | None,
) -> None:
    monkeypatch.setattr(
        scenarios.shutil,
        "which",
        lambda tool: None if tool in missing else f"/usr/bin/{tool}",
    )
    monkeypatch.setattr(scenarios.os, "geteuid", lambda: uid)
    monkeypatch.setattr(scenarios, "scratch_host_reason", lambda: None)

    problem = resilience_problem()

    if named is None:
        assert problem is None
    else:
        assert problem is not None
        assert named in problem
        assert "campaigns were not started" in problem


def test_the_baseline_is_the_open_harness_under_the_lab_s_tier_model(
    tmp_path: Path,
) -> None:
    root = baseline_sources(tmp_path)

    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert "harness/run.sh" in files
    assert "README.md" not in files
    assert not [f for f in files if f.startswith(("traces/", "cost/", "reports/"))]
    config = json.loads((root / "harness" / "config.json").read_text())
    vendor = json.loads(
        (EXAMPLES_DIR / "acme-flash" / "harness" / "config.json").read_text()
    )
    assert config["tiers"]["ssd_blocks"] < vendor["tiers"]["ssd_blocks"]
    assert config["engine"] == vendor["engine"]  # the same GPU hosts
    template = json.loads((root / "bundle.json").read_text())
    assert template["vendor"] == "northwind-ai"
    assert template["claims"] == []
    environment = json.loads((root / "environment" / "manifest.json").read_text())
    assert "storage_target" not in environment["hosts"]


def test_a_host_without_loop_devices_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scenarios.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setattr(scenarios.os, "geteuid", lambda: 0)
    monkeypatch.setattr(
        scenarios, "scratch_host_reason", lambda: "no /dev/loop-control"
    )

    assert "needs loop devices on this host" in (resilience_problem() or "")
