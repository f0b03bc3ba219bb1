"""A gate criterion held to the buyer's baseline, judged on the server: the
results document carries the RFP's baseline campaign's runs with ``"role":
"baseline"``, the limit is the baseline's median ± pct, and ``reprogate gate
evaluate`` (without Django) recomputes the same evaluation bytes from the stored
plan and results; a plan without baseline criteria gets no baseline runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from accounts.models import Organisation
from benchmarks.models import Campaign
from gates.exceptions import GatesError
from gates.models import GatePlan, RetestObligation
from gates.services.evaluations import gate_evaluate
from gates.services.pipeline import gate_judge
from procurement.models import Rfp
from tests.gates.baseline_support import run_baseline
from tests.gates.engine.support import criterion
from tests.gates.support import (
    CRITERION,
    LAB,
    PASS,
    finish_runs,
    make_frozen_plan,
    plan_document,
)

pytestmark = pytest.mark.django_db

RELATIVE = criterion(
    id="ttft-vs-current", scenario="cold-c1", claim=None, band=None,
    baseline={"scenario": "warm-c1", "pct": 10},
)  # fmt: skip


@pytest.fixture
def baseline_campaign(tmp_path: Path, rfp: Rfp, buyer: Any, labops: Any) -> Any:
    """``baseline_campaign(values)``: the buyer's own bundle (signed with its
    key) run by the lab, its warm-c1 runs finished at ``values``."""

    def make(values: list[float]) -> Campaign:
        return run_baseline(tmp_path / "base", rfp, buyer, labops, {"warm-c1": values})

    return make


def _cli(plan: str, results: str, tmp_path: Path) -> list[str]:
    """``reprogate gate evaluate`` in a fresh Python without Django."""
    (tmp_path / "plan.json").write_text(plan, encoding="utf-8")
    (tmp_path / "results.json").write_text(results, encoding="utf-8")
    code = (
        "import sys; from reprogate_cli.main import main; status = main(sys.argv[1:]);"
        "assert 'django' not in sys.modules, 'django was imported'; sys.exit(status)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "gate", "evaluate", "--plan",
         str(tmp_path / "plan.json"), "--results", str(tmp_path / "results.json")],
        capture_output=True, text=True, check=False, timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path.cwd())},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_server_and_cli_give_the_same_bytes_for_a_baseline_criterion(
    rfp: Rfp, vendor_a_org: Organisation, buyer: Any, gate_campaign: Any,
    baseline_campaign: Any, tmp_path: Path,
) -> None:  # fmt: skip
    plan = make_frozen_plan(
        rfp, vendor_a_org, buyer, plan_document(rfp.reference, vendor_a_org.slug,
                                                criteria=[RELATIVE, CRITERION])
    )  # fmt: skip
    baseline = baseline_campaign([200.0, 190.0, 210.0])
    campaign = gate_campaign(3)
    finish_runs(campaign, {"cold-c1": PASS})

    evaluation = gate_evaluate(plan=plan, gate=LAB, campaign=campaign, actor=buyer)

    results = json.loads(evaluation.results_document)
    roles = [(r["scenario"], r.get("role", "vendor")) for r in results["runs"]]
    assert roles.count(("warm-c1", "baseline")) == 3
    assert {str(r.public_id) for r in baseline.runs.all()} == {
        r["id"] for r in results["runs"] if r.get("role") == "baseline"
    }
    judged = json.loads(evaluation.evaluation_document)["criteria"][0]
    assert (judged["verdict"], judged["limit"]) == ("PASS", 220.0)
    assert judged["baseline"]["median"] == 200.0
    assert len(judged["runs"]) == 3
    assert "baseline median 200.0 ms in warm-c1 over 3 runs" in judged["reason"]
    lines = _cli(evaluation.plan_document, evaluation.results_document, tmp_path)
    assert lines[0] == evaluation.evaluation_document
    assert evaluation.max_drift == "none"


def test_a_slower_vendor_than_the_baseline_fails(
    rfp: Rfp, vendor_a_org: Organisation, buyer: Any, gate_campaign: Any,
    baseline_campaign: Any,
) -> None:  # fmt: skip
    plan = make_frozen_plan(
        rfp, vendor_a_org, buyer,
        plan_document(rfp.reference, vendor_a_org.slug, criteria=[RELATIVE]),
    )  # fmt: skip
    baseline_campaign([150.0, 150.0, 150.0])  # limit 165 ms
    campaign = gate_campaign(3)
    finish_runs(campaign, {"cold-c1": PASS})

    evaluation = gate_evaluate(plan=plan, gate=LAB, campaign=campaign, actor=buyer)

    assert evaluation.verdict == "FAIL"
    [row] = evaluation.criterion_results.all()
    assert (row.limit, row.claim) == (pytest.approx(165.0), None)


def test_no_baseline_campaign_fails_baseline_not_measured(
    rfp: Rfp, vendor_a_org: Organisation, buyer: Any, gate_campaign: Any
) -> None:
    plan = make_frozen_plan(
        rfp, vendor_a_org, buyer,
        plan_document(rfp.reference, vendor_a_org.slug, criteria=[RELATIVE]),
    )  # fmt: skip
    campaign = gate_campaign(3)
    finish_runs(campaign, {"cold-c1": PASS})

    evaluation = gate_evaluate(plan=plan, gate=LAB, campaign=campaign, actor=buyer)

    assert evaluation.verdict == "FAIL"
    [row] = evaluation.criterion_results.all()
    assert row.limit is None
    assert "baseline not measured" in row.reason


def test_a_plan_without_baseline_criteria_gets_no_baseline_runs(
    frozen_plan: GatePlan, gate_campaign: Any, baseline_campaign: Any, buyer: Any
) -> None:
    baseline_campaign([200.0])
    campaign = gate_campaign(3)
    finish_runs(campaign, {"cold-c1": PASS})

    evaluation = gate_evaluate(
        plan=frozen_plan, gate=LAB, campaign=campaign, actor=buyer
    )

    runs = json.loads(evaluation.results_document)["runs"]
    assert all("role" not in r for r in runs)
    assert len(runs) == campaign.runs.count()


def test_a_baseline_campaign_is_not_judged_as_the_vendors(
    frozen_plan: GatePlan, baseline_campaign: Any, buyer: Any
) -> None:
    baseline = baseline_campaign([200.0])

    with pytest.raises(GatesError, match="another vendor's bundle"):
        gate_evaluate(plan=frozen_plan, gate=LAB, campaign=baseline, actor=buyer)


def test_baseline_not_measured_raises_no_retest_on_the_vendor(
    rfp: Rfp, vendor_a_org: Organisation, buyer: Any, gate_campaign: Any,
    baseline_campaign: Any,
) -> None:  # fmt: skip
    plan = make_frozen_plan(
        rfp, vendor_a_org, buyer,
        plan_document(rfp.reference, vendor_a_org.slug, criteria=[RELATIVE]),
    )  # fmt: skip
    campaign = gate_campaign(3)
    finish_runs(campaign, {"cold-c1": PASS})

    unmeasured = gate_judge(plan=plan, gate=LAB, campaign=campaign, actor=buyer)
    baseline_campaign([150.0, 150.0, 150.0])  # the vendor is slower than 165 ms
    failed = gate_judge(plan=plan, gate=LAB, campaign=campaign, actor=buyer)

    assert (unmeasured.verdict, failed.verdict) == ("FAIL", "FAIL")
    [obligation] = RetestObligation.objects.all()
    assert obligation.evaluation == failed


@pytest.mark.parametrize("measured", [True, False])
def test_gate_and_criterion_pages_show_a_baseline_criterion(
    measured: bool, rfp: Rfp, vendor_a_org: Organisation, vendor_a: Any,
    buyer: Any, gate_campaign: Any, baseline_campaign: Any, client_for: Any,
) -> None:  # fmt: skip
    plan = make_frozen_plan(
        rfp, vendor_a_org, buyer,
        plan_document(rfp.reference, vendor_a_org.slug, criteria=[RELATIVE]),
    )  # fmt: skip
    baseline = baseline_campaign([200.0]) if measured else None
    campaign = gate_campaign(3)
    finish_runs(campaign, {"cold-c1": PASS})
    gate_evaluate(plan=plan, gate=LAB, campaign=campaign, actor=buyer)
    args = [rfp.public_id, vendor_a_org.slug, LAB]

    for user in (buyer, vendor_a):
        client = client_for(user)
        gate = client.get(reverse("gates:gate", args=args))
        page = client.get(reverse("gates:criterion", args=[*args, RELATIVE["id"]]))

        assert (gate.status_code, page.status_code) == (200, 200)
        said = "baseline median 200.0 ms" if measured else "baseline not measured"
        assert said in gate.content.decode()
        if baseline is not None:  # the baseline's runs are not the vendor's
            for run in baseline.runs.all():
                assert str(run.public_id) not in page.content.decode()
