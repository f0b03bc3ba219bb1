"""Each role's dashboard lists what waits for that role: the lab operator's the
re-tests a vendor asked for, the gates of frozen plans ready to run, and the
campaigns running or failing; the auditor's the log to check. When nothing waits,
"Needs you now" says what would appear there for the user's own roles."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import Organisation
from benchmarks.models import LabPool, Run
from gates.models import GatePlan, RetestObligation
from gates.services.decisions import decision_record, decision_second
from gates.services.runs import gate_campaign_start
from tests.artifacts import ingest_support
from tests.benchmarks.runner.support import make_pool
from tests.gates import support as gates_support
from tests.gates.api.support import PASSING, judged
from tests.gates.read_support import oblige

pytestmark = pytest.mark.django_db
# the gates tests' fixtures
rfp = ingest_support.upload_rfp
frozen_plan = gates_support.frozen_plan
gate_bundle = gates_support.gate_bundle
gate_campaign = gates_support.gate_campaign
GATE = "lab-validation"
RUN_IT = "Run Acme Flash&#x27;s lab-validation gate: plan v1 is frozen"


@pytest.fixture
def pool(buyer_org: Organisation) -> LabPool:
    return make_pool(buyer_org.engages.get(kind=Organisation.Kind.LAB), "gate-lab")


def dashboard(client_for: Any, user: Any) -> str:
    return " ".join(client_for(user).get("/dashboard/").content.decode().split())


def test_labops_sees_the_gates_ready_to_run_until_a_campaign_runs_them(
    client_for: Any, labops: Any, frozen_plan: GatePlan, pool: Any, gate_bundle: Any
) -> None:
    before = dashboard(client_for, labops)
    link = gate_campaign_start(plan=frozen_plan, gate=GATE, pool=pool, actor=labops)

    after = dashboard(client_for, labops)

    assert RUN_IT in before
    assert f"/vendors/acme-flash/gates/{GATE}/" in before
    assert RUN_IT not in after
    assert 'data-testid="lab-campaign"' in after
    assert "3 queued or running" in after
    assert str(link.campaign.public_id) in after


def test_labops_sees_a_campaign_with_failed_runs(
    client_for: Any, labops: Any, frozen_plan: GatePlan, pool: Any, gate_bundle: Any
) -> None:
    link = gate_campaign_start(plan=frozen_plan, gate=GATE, pool=pool, actor=labops)
    link.campaign.runs.update(state=Run.State.FAILED)  # as factories do

    html = dashboard(client_for, labops)

    assert "3 failed, cancelled or timed out" in html


def test_labops_sees_a_retest_waiting_for_the_lab(
    client_for: Any, labops: Any, frozen_plan: GatePlan, gate_campaign: Any
) -> None:
    evaluation = judged(frozen_plan, gate_campaign(3), labops, PASSING)
    oblige(evaluation, status=RetestObligation.Status.SCHEDULED)

    html = dashboard(client_for, labops)

    assert 'data-kind="retest_lab"' in html
    assert "Start the re-test of Acme Flash&#x27;s lab-validation gate" in html


def test_an_open_retest_is_the_vendors_not_the_labs(
    client_for: Any, labops: Any, frozen_plan: GatePlan, gate_campaign: Any
) -> None:
    evaluation = judged(frozen_plan, gate_campaign(3), labops, PASSING)
    oblige(evaluation)  # open: the vendor has not asked for it yet

    assert 'data-kind="retest_lab"' not in dashboard(client_for, labops)


def test_labops_with_nothing_waiting_reads_the_labs_empty_state(
    client_for: Any, labops: Any
) -> None:
    html = dashboard(client_for, labops)

    assert "Nothing waits for you. Re-tests waiting for the lab, gates ready" in html
    assert "Questions to answer" not in html
    assert "No campaign is running" in html


def test_the_auditors_empty_state_is_its_own(client_for: Any, auditor: Any) -> None:
    html = dashboard(client_for, auditor)

    assert "Nothing waits for you. New transparency-log entries to check" in html
    assert "bids to open" not in html


def test_the_auditor_is_asked_to_check_a_grown_log(
    client_for: Any, auditor: Any, gate_bundle: Any
) -> None:
    html = dashboard(client_for, auditor)

    assert 'data-kind="log_check"' in html
    assert "Check the transparency log: you have not checked it yet" in html


def test_the_buyer_keeps_the_buyers_wording(client_for: Any, buyer: Any) -> None:
    html = dashboard(client_for, buyer)

    assert "Nothing waits for you. Questions to answer, bids to open" in html
    assert "Re-tests waiting for the lab" not in html


def test_the_next_gate_is_ready_once_the_one_before_is_promoted(
    client_for: Any,
    labops: Any,
    buyer: Any,
    evaluator: Any,
    frozen_plan: GatePlan,
    gate_campaign: Any,
) -> None:
    judged(frozen_plan, gate_campaign(3), labops, PASSING)  # lab-validation PASS
    before = dashboard(client_for, labops)
    promotion = decision_record(
        plan=frozen_plan, gate=GATE, kind="promote", rationale="Met.", actor=buyer
    )
    decision_second(decision=promotion, actor=evaluator)

    after = dashboard(client_for, labops)

    assert "gate_run" not in before  # pilot waits for lab-validation's promotion
    assert "Run Acme Flash&#x27;s pilot gate: plan v1 is frozen" in after
