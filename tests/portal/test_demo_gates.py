"""The demo seed's lab validation on RFP-DEMO-2 (``seed_demo --lab-validation``)
without running any harness: v1 default and frozen, v2 accepting the lab's
environment and frozen (superseding v1), made through the audited plan services;
no plans without the option; no lab runs on a host without bubblewrap (the tests
say it is missing), none for a vendor the lab already ran, and no evaluation when
the runs did not succeed. The real runs and verdicts are in
tests/gates/test_demo_verdicts.py."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

import portal.demo as demo
from accounts.models import AuditEvent
from artifacts.models import Bundle
from benchmarks.models import Campaign, LabPool, Run
from gates.models import Evaluation, GatePlan
from gates.services.plan_documents import default_plan, rfp_terms
from portal.demo import (
    LAB_ENVIRONMENT_NOTE,
    LAB_POOL,
    LAB_RFP,
    demo_seed,
    lab_plan_document,
)
from procurement.models import Rfp

pytestmark = pytest.mark.django_db
VENDORS = ["acme-flash", "bolt-storage"]


@pytest.fixture
def var_dir(settings: Any, tmp_path: Path, clock: Any) -> Path:
    """Files under the test's folder; a frozen clock, moved past RFP-DEMO-2's
    deadline instead of waiting for it."""
    settings.VAR_DIR = tmp_path
    return tmp_path


@pytest.fixture
def no_bubblewrap(monkeypatch: pytest.MonkeyPatch) -> str:
    message = "bubblewrap (bwrap) is not installed on this host (test)"
    monkeypatch.setattr(demo, "sandbox_problem", lambda: message)
    return message


def _plans(vendor: str) -> list[GatePlan]:
    return list(
        GatePlan.objects.filter(
            rfp__reference=LAB_RFP, vendor_organisation__slug=vendor
        ).order_by("version")
    )


def _stop_loss(plan: GatePlan) -> dict[str, list[str]]:
    return {g["name"]: [s["id"] for s in g["stop_loss"]] for g in plan.plan["gates"]}


def test_seed_freezes_a_default_plan_then_one_accepting_the_lab(
    var_dir: Path, no_bubblewrap: str
) -> None:
    demo_seed(lab_validation=True)

    rfp = Rfp.objects.get(reference=LAB_RFP)
    for vendor in VENDORS:
        first, second = _plans(vendor)
        bundle = Bundle.objects.get(
            rfp=rfp, organisation__slug=vendor, status=Bundle.Status.ACCEPTED
        )
        assert (first.version, first.status) == (1, GatePlan.Status.SUPERSEDED)
        assert (second.version, second.status) == (2, GatePlan.Status.FROZEN)
        assert second.supersedes == first
        assert first.bundle == bundle == second.bundle
        assert first.plan == default_plan(
            rfp_reference=LAB_RFP,
            vendor=vendor,
            claims=bundle.manifest["claims"],
            terms=rfp_terms(rfp),
        )
        assert not first.lab_environment_accepted
        assert second.lab_environment_accepted
        assert second.lab_environment_note == LAB_ENVIRONMENT_NOTE
        assert "Debian 12" in second.lab_environment_note
        assert first.frozen_by.username == second.frozen_by.username == "buyer"
        # Only lab validation loses the drift stop-loss; the criteria are v1's,
        # and the lab's resilience gate follows lab validation.
        assert _stop_loss(first)["lab-validation"] == ["env-drift", "failed-run"]
        assert _stop_loss(second) == {
            "lab-validation": ["failed-run"],
            "lab-resilience": ["failed-run"],
            "pilot": ["env-drift", "failed-run"],
            "rollout": ["env-drift", "failed-run"],
        }
        kept = [g for g in second.plan["gates"] if g["name"] != "lab-resilience"]
        gates = zip(first.plan["gates"], kept, strict=True)
        assert all(a["criteria"] == b["criteria"] for a, b in gates)
        [resilience] = [g for g in second.plan["gates"] if g["stage"] == "lab"][1:]
        judged = {(c["metric"], c["scenario"]) for c in resilience["criteria"]}
        assert judged == {
            ("failover_recovery_s", "failover-c8-b8"),
            ("fairness_jain", "interference-c8-b8"),
            ("model_load_s", "warmup-c8-b8"),
        }
        kinds = {
            s["name"]: s.get("kind") for s in bundle.manifest["harness"]["scenarios"]
        }
        assert {kinds[scenario] for _, scenario in judged} == {
            "failover", "interference", "warmup"
        }  # fmt: skip


def test_the_plans_are_made_through_the_audited_plan_services(
    var_dir: Path, no_bubblewrap: str
) -> None:
    demo_seed(lab_validation=True)

    for vendor in VENDORS:
        trail = [
            (e.action, e.data["version"])
            for e in AuditEvent.objects.filter(
                action__startswith="gate_plan.", data__vendor=vendor
            ).order_by("id")
        ]
        assert trail == [
            ("gate_plan.created", 1),
            ("gate_plan.frozen", 1),
            ("gate_plan.created", 2),
            ("gate_plan.updated", 2),
            ("gate_plan.superseded", 1),
            ("gate_plan.frozen", 2),
        ]


def test_without_lab_validation_the_seed_makes_no_plan_and_runs_nothing(
    var_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse() -> str:
        raise AssertionError("the sandbox was probed")

    monkeypatch.setattr(demo, "sandbox_problem", refuse)

    demo_seed()

    assert not GatePlan.objects.exists()
    assert not Campaign.objects.exists()
    assert not Evaluation.objects.exists()


def test_a_second_seed_makes_no_new_plan(var_dir: Path, no_bubblewrap: str) -> None:
    demo_seed(lab_validation=True)
    plans = list(GatePlan.objects.values_list("pk", "status", "sha256"))
    assert len(plans) == 4
    events = AuditEvent.objects.count()

    report = demo_seed(lab_validation=True)

    assert list(GatePlan.objects.values_list("pk", "status", "sha256")) == plans
    assert AuditEvent.objects.count() == events
    # the missing sandbox is said again, nothing else
    assert report.created == [f"no {LAB_RFP} lab runs (bubblewrap missing)"]


def test_the_lab_edit_keeps_the_plan_it_was_given(
    var_dir: Path, no_bubblewrap: str
) -> None:
    demo_seed(lab_validation=True)
    first = _plans("acme-flash")[0]

    edited: dict[str, Any] = lab_plan_document(first)

    assert "env-drift" not in [s["id"] for s in edited["gates"][0]["stop_loss"]]
    assert _stop_loss(first)["lab-validation"] == ["env-drift", "failed-run"]


def test_without_bubblewrap_the_seed_says_so_and_runs_nothing(
    var_dir: Path, no_bubblewrap: str
) -> None:
    said: list[str] = []

    report = demo_seed(lab_validation=True, progress=said.append)

    assert said == [no_bubblewrap]
    assert f"no {LAB_RFP} lab runs (bubblewrap missing)" in report.created
    assert not Campaign.objects.exists()
    assert not Evaluation.objects.exists()
    # the plans are there all the same
    assert GatePlan.objects.filter(status=GatePlan.Status.FROZEN).count() == 2


def test_the_sandbox_problem_names_bubblewrap_and_what_to_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Missing:
        bwrap = None
        bwrap_works = False

    monkeypatch.setattr(demo, "host_support", lambda: Missing())

    problem = demo.sandbox_problem()

    assert problem is not None
    assert "bubblewrap (bwrap) is not installed" in problem
    assert "apt-get install bubblewrap" in problem
    assert "seed_demo --lab-validation" in problem


def test_the_command_passes_the_option_and_prints_the_progress(
    settings: Any, var_dir: Path, no_bubblewrap: str
) -> None:
    settings.DEBUG = True
    out = io.StringIO()

    call_command("seed_demo", "--lab-validation", stdout=out)

    assert no_bubblewrap in out.getvalue()
    assert GatePlan.objects.filter(status=GatePlan.Status.FROZEN).count() == 2
    assert not Campaign.objects.exists()


def test_the_command_without_the_option_does_not_look_at_the_sandbox(
    settings: Any, var_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.DEBUG = True

    def refuse() -> str:
        raise AssertionError("the sandbox was probed")

    monkeypatch.setattr(demo, "sandbox_problem", refuse)

    call_command("seed_demo", stdout=io.StringIO())

    assert not GatePlan.objects.exists()
    assert not Campaign.objects.exists()


def _labops_campaign(vendor: str) -> Campaign:
    from benchmarks.services.campaigns import campaign_start

    return campaign_start(
        bundle=Bundle.objects.get(
            rfp__reference=LAB_RFP,
            organisation__slug=vendor,
            status=Bundle.Status.ACCEPTED,
        ),
        pool=LabPool.objects.get(name=LAB_POOL),
        repetitions=1,
        actor=get_user_model().objects.get(username="labops"),
    )


def test_a_vendor_the_lab_ran_already_gets_no_seeded_campaign(
    var_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    demo_seed()  # opened, no plans yet
    mine = {vendor: _labops_campaign(vendor) for vendor in VENDORS}

    def refuse() -> str:
        raise AssertionError("the sandbox was probed with nothing to run")

    monkeypatch.setattr(demo, "sandbox_problem", refuse)
    said: list[str] = []

    demo_seed(lab_validation=True, progress=said.append)

    assert set(Campaign.objects.all()) == set(mine.values())
    assert said == []
    assert GatePlan.objects.filter(status=GatePlan.Status.FROZEN).count() == 2
    assert not Evaluation.objects.exists()


def test_runs_that_do_not_succeed_leave_the_campaign_unevaluated(
    var_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A runner that never takes the runs (they stay queued until the seed
    cancels them): the campaign is kept for labops, nothing is evaluated."""
    monkeypatch.setattr(demo, "sandbox_problem", lambda: None)
    monkeypatch.setattr(demo.LoopbackAgent, "execute", lambda *args: "skipped")
    said: list[str] = []

    report = demo_seed(lab_validation=True, progress=said.append)

    assert Campaign.objects.count() == 2
    assert set(Run.objects.values_list("state", flat=True)) == {Run.State.CANCELLED}
    assert not Evaluation.objects.exists()
    assert said[0] == "Running acme-flash lab runs: 1/6 (cold-c32-b8, repetition 1)"
    failed = [line for line in said if "did not succeed" in line]
    assert len(failed) == 2
    assert failed[0].startswith("acme-flash: 6 of 6 lab runs did not succeed")
    assert f"{LAB_RFP} campaign bolt-storage (runs failed)" in report.created
    # A later seed leaves them be.
    demo_seed(lab_validation=True, progress=said.append)
    assert Campaign.objects.count() == 2
